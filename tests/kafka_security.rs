//! gorag against brokers that encrypt and authenticate (real nisshi brokers, certificates made
//! by `openssl`): `topics create`, `labels import`, `serve`, `publish`, `tail` and `correct`
//! over SASL_SSL with SCRAM-SHA-512 and over mTLS (client certificate with an encrypted key); a
//! wrong password, an untrusted broker certificate and an untrusted client certificate named
//! within 10 s with the setting that fixes them; and no secret in any output of any of it.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::kafka::{Service, Topics};
use support::secure_kafka::{Pki, SecureBroker};

/// The SCRAM password: every output is searched for it.
const PASSWORD: &str = "scram-Pa55-91c2e7a0";
/// A wrong one, searched for too.
const WRONG_PASSWORD: &str = "wrong-Pa55-5b7d13f8";
const USER: &str = "gorag-svc";

/// What one command printed, and how long it took.
struct Run {
    ok: bool,
    output: String,
    took: Duration,
}

fn gorag(args: &[&str], sets: &[String], env: &[(&str, &str)]) -> Run {
    let started = Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_gorag"));
    command.args(args);
    for set in sets {
        command.arg("--set").arg(set);
    }
    let output = command
        .env_remove("GORAG_CONFIG")
        .env("GORAG_LOG_FORMAT", "text")
        .envs(env.iter().copied())
        .output()
        .expect("run gorag");
    Run {
        ok: output.status.success(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        took: started.elapsed(),
    }
}

/// Every output of a test, searched for secrets at the end.
#[derive(Default)]
struct Outputs(Vec<String>);

impl Outputs {
    fn keep(&mut self, run: Run, what: &str) -> Run {
        self.0.push(run.output.clone());
        assert!(run.ok, "{what} failed:\n{}", run.output);
        run
    }

    fn assert_no_secret(&self, secrets: &[&str]) {
        for output in &self.0 {
            for secret in secrets {
                assert!(!output.contains(secret), "a secret was printed:\n{output}");
            }
        }
    }
}

fn write_secret(dir: &Path, name: &str, value: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("{value}\n")).expect("secret file");
    path.display().to_string()
}

/// The ids of the example texts every round trip publishes.
fn example_ids() -> Vec<String> {
    support::example("texts-1.jsonl")
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("example line");
            value["id"].as_str().expect("id").to_string()
        })
        .collect()
}

/// Topics created, a taxonomy imported, texts published, predicted by `gorag serve`, read back
/// with `gorag tail`, and one corrected — every client over the security `sets` give.
fn round_trip(dir: &Path, topics: &Topics, sets: &[String], outputs: &mut Outputs) {
    let run = gorag(&["topics", "create"], sets, &[("GORAG_LOG", "trace")]);
    outputs.keep(run, "gorag topics create");
    let run = gorag(
        &[
            "labels",
            "import",
            "examples/taxonomy/support.csv",
            "--round",
            "r1",
        ],
        sets,
        &[],
    );
    outputs.keep(run, "gorag labels import");

    let mut serve_sets = sets.to_vec();
    serve_sets.extend([
        format!("state.dir={}", dir.join("state").display()),
        "llm.url=none".into(),
        // What is tested is the connection, not the meaning signal.
        "engine.embedding_model=none".into(),
        "kafka.commit_interval_ms=200".into(),
    ]);
    let mut service = Service::start(dir, &serve_sets);
    service.wait_ready();

    let run = gorag(
        &[
            "publish",
            "--topic",
            &topics.texts,
            "examples/stream/texts-1.jsonl",
        ],
        sets,
        &[],
    );
    outputs.keep(run, "gorag publish");
    let ids = example_ids();
    let count = ids.len().to_string();
    let run = gorag(
        &[
            "tail",
            "--topic",
            &topics.predictions,
            "--from-beginning",
            "--count",
            &count,
            "--idle-timeout",
            "60",
            "--format",
            "json",
        ],
        sets,
        &[],
    );
    let run = outputs.keep(run, "gorag tail");
    for id in &ids {
        assert!(
            run.output
                .contains(&format!("\\\"text_id\\\":\\\"{id}\\\"")),
            "no prediction of {id}:\n{}",
            run.output
        );
    }

    let run = gorag(
        &[
            "correct",
            &ids[0],
            "warranty",
            "--text",
            "my kettle broke after a month",
        ],
        sets,
        &[],
    );
    outputs.keep(run, "gorag correct");
    service.wait_for_log("correction");
    outputs.0.push(service.stop());
}

fn sasl_sets(broker: &SecureBroker, ca: &Path, password_file: &str) -> Vec<String> {
    vec![
        format!("kafka.brokers={}", broker.address),
        "kafka.security_protocol=sasl_ssl".into(),
        format!("kafka.tls.ca_file={}", ca.display()),
        "kafka.sasl.mechanism=SCRAM-SHA-512".into(),
        format!("kafka.sasl.username={USER}"),
        format!("kafka.sasl.password_file={password_file}"),
    ]
}

fn mtls_sets(broker: &SecureBroker, pki: &Pki, cert: &Path, key: &Path) -> Vec<String> {
    vec![
        format!("kafka.brokers={}", broker.address),
        "kafka.security_protocol=ssl".into(),
        format!("kafka.tls.ca_file={}", pki.ca.display()),
        format!("kafka.tls.cert_file={}", cert.display()),
        format!("kafka.tls.key_file={}", key.display()),
    ]
}

/// `gorag serve` with `sets`, which the broker refuses: its exit (within 10 s) and its log.
fn refused_service(dir: &Path, sets: &[String]) -> (std::process::ExitStatus, String) {
    let mut sets = sets.to_vec();
    sets.extend([
        format!("state.dir={}", dir.join("state").display()),
        "engine.embedding_model=none".into(),
    ]);
    Service::start(dir, &sets).exit_within(Duration::from_secs(10))
}

/// `sets` for a test's own topics, then the security settings.
fn with_topics(topics: &Topics, security: Vec<String>) -> Vec<String> {
    let mut sets = topics.sets_with("unused:9092");
    sets.retain(|s| !s.starts_with("kafka.brokers="));
    sets.extend(security);
    sets
}

#[test]
fn every_client_works_over_sasl_ssl_with_scram_sha_512() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&dir.path().join("pki"));
    let broker = SecureBroker::sasl_ssl(&dir.path().join("broker"), &pki, USER, PASSWORD);
    let password_file = write_secret(dir.path(), "kafka-password", PASSWORD);
    let topics = Topics::new("sasl-ssl");
    let mut sets = with_topics(&topics, sasl_sets(&broker, &pki.ca, &password_file));
    // librdkafka's own debug lines about security and the connection, to show they carry no
    // secret either.
    sets.push("kafka.client.debug=security,broker,protocol".into());
    let mut outputs = Outputs::default();
    round_trip(dir.path(), &topics, &sets, &mut outputs);

    // The password from the environment works too, and --print-config never shows it.
    let mut env_sets = sets.clone();
    env_sets.retain(|s| !s.starts_with("kafka.sasl.password_file="));
    let run = gorag(
        &["topics", "create"],
        &env_sets,
        &[("GORAG_KAFKA_SASL_PASSWORD", PASSWORD)],
    );
    outputs.keep(run, "topics create with the password from the environment");
    let run = gorag(
        &["serve", "--print-config"],
        &[
            sets.clone(),
            vec![format!(
                "kafka.client.sasl.oauthbearer.client.secret={WRONG_PASSWORD}"
            )],
        ]
        .concat(),
        &[],
    );
    let run = outputs.keep(run, "serve --print-config");
    assert!(run.output.contains("***"), "{}", run.output);
    let run = gorag(&["serve", "--check-config"], &sets, &[]);
    outputs.keep(run, "serve --check-config");
    outputs.assert_no_secret(&[PASSWORD, WRONG_PASSWORD]);
}

#[test]
fn a_wrong_password_is_named_within_ten_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&dir.path().join("pki"));
    let broker = SecureBroker::sasl_ssl(&dir.path().join("broker"), &pki, USER, PASSWORD);
    let wrong = write_secret(dir.path(), "wrong-password", WRONG_PASSWORD);
    let topics = Topics::new("sasl-wrong");
    let sets = with_topics(&topics, sasl_sets(&broker, &pki.ca, &wrong));

    let run = gorag(&["topics", "create"], &sets, &[("GORAG_LOG", "trace")]);
    assert!(!run.ok, "{}", run.output);
    assert!(run.took < Duration::from_secs(10), "took {:?}", run.took);
    assert!(run.output.contains("refused the login"), "{}", run.output);
    assert!(
        run.output.contains("kafka.sasl.password_file"),
        "{}",
        run.output
    );

    let (status, log) = refused_service(dir.path(), &sets);
    assert!(!status.success(), "{log}");
    assert!(log.contains("refused the login"), "{log}");
    for output in [&run.output, &log] {
        for secret in [PASSWORD, WRONG_PASSWORD] {
            assert!(!output.contains(secret), "a secret was printed:\n{output}");
        }
    }
}

#[test]
fn an_untrusted_broker_certificate_is_named_within_ten_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&dir.path().join("pki"));
    let broker = SecureBroker::sasl_ssl(&dir.path().join("broker"), &pki, USER, PASSWORD);
    let password_file = write_secret(dir.path(), "kafka-password", PASSWORD);
    let topics = Topics::new("untrusted-broker");
    let sets = with_topics(&topics, sasl_sets(&broker, &pki.rogue_ca, &password_file));

    let run = gorag(
        &["labels", "import", "examples/taxonomy/support.csv"],
        &sets,
        &[],
    );
    assert!(!run.ok, "{}", run.output);
    assert!(run.took < Duration::from_secs(10), "took {:?}", run.took);
    assert!(run.output.contains("kafka.tls.ca_file"), "{}", run.output);

    let (status, log) = refused_service(dir.path(), &sets);
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("not signed by a CA this client trusts"),
        "{log}"
    );
    assert!(!log.contains(PASSWORD) && !run.output.contains(PASSWORD));
}

#[test]
fn every_client_works_over_mtls_with_an_encrypted_key() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&dir.path().join("pki"));
    let broker = SecureBroker::mtls(&dir.path().join("broker"), &pki);
    let topics = Topics::new("mtls");
    let mut sets = with_topics(
        &topics,
        mtls_sets(&broker, &pki, &pki.client_cert, &pki.client_key),
    );
    sets.push(format!(
        "kafka.tls.key_password_file={}",
        pki.key_password_file.display()
    ));
    sets.push("kafka.client.debug=security,broker".into());
    let mut outputs = Outputs::default();
    round_trip(dir.path(), &topics, &sets, &mut outputs);
    outputs.assert_no_secret(&[Pki::KEY_PASSWORD]);
}

#[test]
fn an_untrusted_client_certificate_is_named_within_ten_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&dir.path().join("pki"));
    let broker = SecureBroker::mtls(&dir.path().join("broker"), &pki);
    let topics = Topics::new("mtls-rogue");
    let sets = with_topics(
        &topics,
        mtls_sets(&broker, &pki, &pki.rogue_client_cert, &pki.rogue_client_key),
    );
    let run = gorag(&["topics", "create"], &sets, &[]);
    assert!(!run.ok, "{}", run.output);
    assert!(run.took < Duration::from_secs(10), "took {:?}", run.took);
    assert!(run.output.contains("kafka.tls.cert_file"), "{}", run.output);

    let (status, log) = refused_service(dir.path(), &sets);
    assert!(!status.success(), "{log}");
    assert!(log.contains("refused this client's certificate"), "{log}");
}

#[test]
fn a_missing_certificate_file_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-ca.pem");
    let run = gorag(
        &["serve", "--check-config"],
        &[
            "kafka.security_protocol=ssl".into(),
            format!("kafka.tls.ca_file={}", missing.display()),
        ],
        &[],
    );
    assert!(!run.ok);
    assert!(run.output.contains("kafka.tls.ca_file"), "{}", run.output);
    assert!(run.output.contains("no-such-ca.pem"), "{}", run.output);
}
