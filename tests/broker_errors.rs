//! The operator's first mistakes with a broker, against the real one: each is named in the log
//! within seconds (address and librdkafka's reason), repeated while it lasts, shown by
//! `/readyz`, and startup waits a bounded time for the broker instead of failing at once.

// Only the broker and HTTP helpers are used here.
#[allow(dead_code)]
mod support;

use std::time::{Duration, Instant};

use support::kafka::{Broker, Service, Topics};

const WAITING: &str = "waiting for the Kafka brokers";

fn sets(test: &str, brokers: &str, wait_secs: u64) -> Vec<String> {
    sets_on(&Topics::new(test), brokers, wait_secs)
}

/// [`sets`] on `topics`, whose names the test needs.
fn sets_on(topics: &Topics, brokers: &str, wait_secs: u64) -> Vec<String> {
    let mut sets = topics.sets_with(brokers);
    sets.push(format!("kafka.startup_wait_secs={wait_secs}"));
    sets.push("llm.url=none".into());
    // These tests time how soon a broker problem is named. Loading the sentence encoder comes
    // first at startup (≈ 0.1 s in a release build, ≈ 1.5 s in a debug one, more on a busy
    // machine) and is not what they measure.
    sets.push("engine.embedding_model=none".into());
    sets
}

fn state(dir: &std::path::Path) -> String {
    format!("state.dir={}", dir.join("state").display())
}

/// Wait for `text` in the log; how long it took from `since`.
fn logged_after(service: &mut Service, text: &str, since: Instant) -> Duration {
    service.wait_for_log(text);
    since.elapsed()
}

#[test]
fn a_wrong_port_is_named_with_its_reason_within_seconds_and_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let address = format!("127.0.0.1:{}", support::free_port());
    let mut sets = sets("wrong_port", &address, 14);
    sets.push(state(dir.path()));
    let started = Instant::now();
    let mut service = Service::start(dir.path(), &sets);
    let took = logged_after(&mut service, "Connection refused", started);
    assert!(took < Duration::from_secs(5), "named after {took:?}");
    let log = service.log_text();
    let warning = log
        .lines()
        .find(|l| l.contains(WAITING))
        .expect("a waiting line");
    assert!(warning.contains(&address), "{warning}");
    assert!(warning.contains("Connection refused"), "{warning}");

    let admin = service.admin_address();
    let (status, body) = support::http::get(&admin, "/readyz");
    assert_eq!(status, 503, "{body}");
    let readiness: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(readiness["broker_reachable"], false);
    assert!(
        readiness["broker_problem"]
            .as_str()
            .unwrap_or_default()
            .contains("Connection refused"),
        "{body}"
    );

    // Still saying it while it lasts (bounded: every few seconds), then giving up, non-zero.
    service.wait_for_log_count(WAITING, 2);
    let (status, log) = service.exit_within(Duration::from_secs(30));
    assert!(!status.success());
    let waits = log.matches(WAITING).count();
    assert!(
        (2..=5).contains(&waits),
        "{waits} waiting lines in 14 s:\n{log}"
    );
    assert!(
        log.contains(&format!("the Kafka brokers at {address} did not answer")),
        "{log}"
    );
}

#[test]
fn an_unresolvable_name_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut sets = sets("unresolvable", "no-such-host.invalid:9092", 3);
    sets.push(state(dir.path()));
    let started = Instant::now();
    let mut service = Service::start(dir.path(), &sets);
    let took = logged_after(&mut service, "Failed to resolve", started);
    assert!(took < Duration::from_secs(5), "named after {took:?}");
    let (status, log) = service.exit_within(Duration::from_secs(30));
    assert!(!status.success());
    assert!(log.contains("no-such-host.invalid:9092"), "{log}");
}

#[test]
fn a_refused_sasl_login_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut sets = sets("sasl", &support::kafka::brokers(), 3);
    sets.push(state(dir.path()));
    for (key, value) in [
        ("security.protocol", "sasl_plaintext"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "someone"),
        ("sasl.password", "wrong"),
    ] {
        sets.push(format!("kafka.client.{key}={value}"));
    }
    let started = Instant::now();
    let mut service = Service::start(dir.path(), &sets);
    let took = logged_after(&mut service, "SASL", started);
    assert!(took < Duration::from_secs(5), "named after {took:?}");
    let (status, _) = service.exit_within(Duration::from_secs(30));
    assert!(!status.success());
}

#[test]
fn startup_waits_for_a_stopped_broker_and_then_serves() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Broker::start(dir.path(), "memory://nisshi/");
    broker.stop("TERM");
    let mut sets = sets("stopped_broker", &broker.address, 120);
    sets.push(state(dir.path()));
    let started = Instant::now();
    let mut service = Service::start(dir.path(), &sets);
    let took = logged_after(&mut service, WAITING, started);
    assert!(took < Duration::from_secs(5), "named after {took:?}");
    assert!(service.log_text().contains(&broker.address));

    broker.restart();
    service.wait_for_log("Kafka brokers answered");
    service.wait_ready();
    service.stop();
}

#[test]
fn missing_topics_are_named_when_gorag_may_not_create_them() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("missing_topics");
    let mut sets = sets_on(&topics, &support::kafka::brokers(), 10);
    sets.push("kafka.create_topics=false".into());
    sets.push(state(dir.path()));
    let mut service = Service::start(dir.path(), &sets);
    let (status, log) = service.exit_within(Duration::from_secs(30));
    assert!(!status.success());
    for topic in [&topics.labels, &topics.texts, &topics.changelog] {
        assert!(log.contains(topic.as_str()), "{topic} not named:\n{log}");
    }
    assert!(log.contains("kafka.create_topics is false"), "{log}");
}

#[test]
fn tls_to_a_plaintext_listener_is_named_at_once_with_what_to_do() {
    // Waiting would not help: the broker's listener does not speak TLS.
    let dir = tempfile::tempdir().unwrap();
    let mut sets = sets("tls", &support::kafka::brokers(), 60);
    sets.push("kafka.security_protocol=ssl".into());
    sets.push(state(dir.path()));
    let mut service = Service::start(dir.path(), &sets);
    let (status, log) = service.exit_within(Duration::from_secs(10));
    assert!(!status.success());
    assert!(log.contains("does not speak TLS"), "{log}");
    assert!(log.contains("kafka.security_protocol"), "{log}");
}

/// `gorag publish` and `gorag tail` with no broker at the address say so within seconds,
/// naming it, instead of waiting minutes in silence.
#[test]
fn cli_commands_name_an_address_where_no_broker_answers() {
    let address = format!("127.0.0.1:{}", support::free_port());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("texts.jsonl");
    std::fs::write(&file, "{\"id\":\"t-1\",\"text\":\"hello\"}\n").unwrap();
    let publish = vec![
        "publish".to_string(),
        "--brokers".into(),
        address.clone(),
        "--topic".into(),
        "nowhere".into(),
        file.display().to_string(),
    ];
    let tail = vec![
        "tail".to_string(),
        "--brokers".into(),
        address.clone(),
        "--topic".into(),
        "nowhere".into(),
    ];
    for args in [publish, tail] {
        let started = Instant::now();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_gorag"))
            .args(&args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&address), "{args:?}: {stderr}");
        assert!(stderr.contains("--brokers"), "{args:?}: {stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
}

/// A labels topic the broker made with several partitions (something published to it before
/// `gorag serve` created it) is refused with what to do, not with advice about the address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labels_topic_with_several_partitions_says_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("layout");
    let brokers = support::kafka::brokers();
    support::kafka::create_topic(&brokers, &topics.labels, 4, &[]).await;
    let mut sets = sets_on(&topics, &brokers, 10);
    sets.push(state(dir.path()));
    let mut service = Service::start(dir.path(), &sets);
    let (status, log) =
        tokio::task::block_in_place(|| service.exit_within(Duration::from_secs(30)));
    assert!(!status.success());
    assert!(log.contains("has 4 partitions"), "{log}");
    assert!(log.contains("delete the topic"), "{log}");
    assert!(!log.contains("--brokers"), "{log}");
}

/// An LLM endpoint that does not answer is named at start, with the way out, and the service
/// serves all the same (retrieval decides while it is away).
#[test]
fn an_llm_endpoint_that_does_not_answer_is_named_at_start_and_the_service_serves() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/v1", support::free_port());
    let mut sets = sets("llm_down", &support::kafka::brokers(), 10);
    sets.retain(|s| !s.starts_with("llm.url"));
    sets.push(format!("llm.url={url}"));
    sets.push(state(dir.path()));
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    service.wait_for_log("the LLM endpoint did not answer");
    let log = service.stop();
    let warning = log
        .lines()
        .find(|l| l.contains("the LLM endpoint did not answer"))
        .unwrap_or_default();
    assert!(warning.contains(&url), "{warning}");
    assert!(warning.contains("llm.url"), "{warning}");
}

/// `gorag tail` and `gorag publish` read `kafka.client` from the configuration as serve does:
/// a SASL login the broker refuses is named in their error.
#[test]
fn cli_commands_use_the_configured_client_settings_and_name_a_refused_sasl_login() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("texts.jsonl");
    std::fs::write(&file, "{\"id\":\"t-1\",\"text\":\"hello\"}\n").unwrap();
    let sasl: Vec<String> = [
        ("security.protocol", "sasl_plaintext"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "someone"),
        ("sasl.password", "wrong"),
    ]
    .iter()
    .flat_map(|(key, value)| ["--set".to_string(), format!("kafka.client.{key}={value}")])
    .collect();
    let brokers = support::kafka::brokers();
    let file = file.display().to_string();
    for command in [
        vec!["publish", "--topic", "anywhere", &file],
        vec!["tail", "--topic", "anywhere"],
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_gorag"))
            .args(&command)
            .args(["--brokers", &brokers])
            .args(&sasl)
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap();
        assert!(!output.status.success(), "{command:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("SASL"), "{command:?}: {stderr}");
        assert!(stderr.contains("kafka.client"), "{command:?}: {stderr}");
    }
}

/// `gorag labels import` before `gorag serve` creates the labels topic as serve needs it, and
/// `gorag topics create` refuses a labels topic made with several partitions, saying how to
/// fix it.
#[test]
fn labels_import_before_serve_makes_the_topics_serve_needs() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("import_first");
    let brokers = support::kafka::brokers();
    let sets: Vec<String> = topics
        .sets_with(&brokers)
        .into_iter()
        .filter(|s| !s.starts_with("admin."))
        .flat_map(|s| ["--set".to_string(), s])
        .collect();
    let taxonomy = dir.path().join("labels.csv");
    std::fs::write(&taxonomy, "label,example\nbilling,charged twice\n").unwrap();
    // `then` after the configuration: a later `--set` wins.
    let gorag = |args: &[&str], then: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gorag"))
            .args(args)
            .args(&sets)
            .args(then)
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap()
    };
    let import = gorag(&["labels", "import", &taxonomy.display().to_string()], &[]);
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    let created = gorag(&["topics", "create"], &[]);
    let stdout = String::from_utf8_lossy(&created.stdout);
    assert!(created.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("{:<32}   1 partition(s)", topics.labels)),
        "{stdout}"
    );

    // A labels topic a broker auto-created with its default partition count.
    let wrong = format!("{}.auto", topics.labels);
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(support::kafka::create_topic(&brokers, &wrong, 4, &[]));
    let refused = gorag(
        &["topics", "create"],
        &["--set", &format!("topics.labels={wrong}")],
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains(&wrong) && stderr.contains("exactly 1 partition"),
        "{stderr}"
    );
    assert!(stderr.contains("delete it"), "{stderr}");
}
