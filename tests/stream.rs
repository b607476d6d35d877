//! `gorag serve` against the real broker (nisshi, from `scripts/kafka.sh`), as a child process.
//! Every test uses its own topics, group and state directory.

mod support;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use support::fake_llm::{FakeLlm, Reply};
use support::kafka::{
    predict_the_first_round, predicted_ids, publish, publish_json, publish_json_to, read_until,
    state_of, Broker, Record, Service, Topics,
};
use support::{example, ticket_texts};

fn llm_url() -> String {
    std::env::var("GORAG_TEST_LLM_URL").unwrap_or_else(|_| "http://127.0.0.1:8080/v1".into())
}

fn base_sets(topics: &Topics, state: &std::path::Path) -> Vec<String> {
    topics.service_sets(state)
}

fn by_text_id(records: &[Record]) -> HashMap<String, serde_json::Value> {
    records
        .iter()
        .map(|r| {
            let json = r.json();
            (
                json["text_id"].as_str().unwrap_or_default().to_string(),
                json,
            )
        })
        .collect()
}

#[test]
fn rounds_and_texts_flow_to_predictions_with_the_real_llm() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("e2e");
    let mut sets = base_sets(&topics, &dir.path().join("state"));
    sets.push(format!("llm.url={}", llm_url()));
    sets.push("llm.ask_below=1".into());
    sets.push("input.max_in_flight=4".into());
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    let rt = tokio::runtime::Runtime::new().unwrap();

    rt.block_on(publish_json(&topics.labels, &example("round-1.jsonl")));
    rt.block_on(publish_json(&topics.texts, &example("texts-1.jsonl")));
    let first = read_until(&topics.predictions, Duration::from_secs(300), |r| {
        predicted_ids(r).len() >= 4
    });
    let first = by_text_id(&first);
    assert_eq!(first.len(), 4, "log:\n{}", service.log_text());
    let round_one: HashSet<&str> = ["shipping", "billing", "account_access"].into();
    let mut right = 0;
    for (id, p) in &first {
        let label = p["label"].as_str().unwrap_or("(no match)");
        assert!(round_one.contains(label), "{id}: {p}");
        assert_eq!(p["label_version"], 1, "{id}: {p}");
        assert_eq!(p["round"], "r1");
        if p["source"] == "llm" {
            assert_eq!(p["model"], "qwen2.5-coder-0.5b-instruct");
        }
        right += usize::from(p["gold_label"] == p["label"]);
    }
    assert!(right >= 3, "only {right}/4 right: {first:?}");
    assert_eq!(first["t-104"]["metadata"]["channel"], "email");

    // A new round mid-stream: later texts can be given the new classes.
    rt.block_on(publish_json(&topics.labels, &example("round-2.jsonl")));
    rt.block_on(publish_json(&topics.texts, &example("texts-2.jsonl")));
    let all = read_until(&topics.predictions, Duration::from_secs(300), |r| {
        predicted_ids(r).len() >= 8
    });
    let all = by_text_id(&all);
    assert_eq!(all.len(), 8, "log:\n{}", service.log_text());
    let mut new_class = 0;
    for id in ["t-201", "t-202", "t-203", "t-204"] {
        let p = &all[id];
        assert_eq!(p["label_version"], 2, "{id}: {p}");
        assert_eq!(p["round"], "r2");
        new_class += usize::from(p["label"] == "product_defect" || p["label"] == "feature_request");
    }
    assert!(
        all["t-201"]["candidates"]
            .as_array()
            .unwrap()
            .contains(&"product_defect".into()),
        "{}",
        all["t-201"]
    );
    assert!(
        new_class >= 2,
        "new classes predicted {new_class} times: {all:?}"
    );
    let log = service.stop();
    assert!(log.contains("\"drained\":true"), "{log}");
}

#[test]
fn bad_input_goes_to_the_dead_letter_topic_while_good_input_flows() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("dlq");
    let mut sets = base_sets(&topics, &dir.path().join("state"));
    sets.push("llm.url=none".into());
    sets.push("input.max_text_bytes=300".into());
    sets.push("kafka.partitions=1".into());
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    let rt = tokio::runtime::Runtime::new().unwrap();

    let good = |id: &str| {
        format!(r#"{{"id":"{id}","text":"my parcel never arrived, the tracking shows nothing"}}"#)
    };
    // A text before any round has no class to be given.
    rt.block_on(publish_json(&topics.texts, &[good("early")]));
    let early = read_until(&topics.dead_letter, Duration::from_secs(60), |r| {
        !r.is_empty()
    });
    assert_eq!(early[0].headers["gorag.reason"], "no_active_labels");

    let mut labels = example("round-1.jsonl");
    labels.extend([
        r#"{"type":"rename_label","label":"billing"}"#.to_string(),
        r#"{"type":"round","round":"r1b","labels":[{"id":"billing","examples":["again"]}]}"#.into(),
        r#"{"type":"add_examples","label":"nope","examples":["x"]}"#.into(),
        r#"{"type":"round","round":"r1c","labels":[]}"#.into(),
        r#"{"type":"retire_label","label":"account_access"}"#.into(),
        r#"{"type":"retire_label","label":"account_access"}"#.into(),
        // A new label's id holds markup and an ESC; another's name a terminal command.
        r#"{"type":"round","round":"r1d","labels":[{"id":"\"><img src=x>\u001b","examples":["x"]}]}"#.into(),
        r#"{"type":"round","round":"r1e","labels":[{"id":"ok","name":"\u001b]0;pwned\u0007","examples":["x"]}]}"#.into(),
    ]);
    rt.block_on(publish_json(&topics.labels, &labels));
    let oversized = format!(r#"{{"id":"big","text":"{}"}}"#, "parcel ".repeat(60));
    let texts: Vec<(Option<&str>, Vec<u8>)> = vec![
        (Some("g1"), good("g1").into_bytes()),
        (
            Some("utf8"),
            b"{\"id\":\"utf8\",\"text\":\"\xc3\x28\"}".to_vec(),
        ),
        (None, b"{not json".to_vec()),
        (Some("types"), br#"{"id":"types","text":42}"#.to_vec()),
        (
            Some("field"),
            br#"{"id":"field","txt":"misspelt"}"#.to_vec(),
        ),
        (Some("empty"), br#"{"id":"empty","text":"   "}"#.to_vec()),
        (Some("big"), oversized.into_bytes()),
        (
            Some("v2"),
            br#"{"id":"v2","text":"hello","version":2}"#.to_vec(),
        ),
        (
            Some("deep"),
            format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes(),
        ),
        (Some("g2"), good("g2").into_bytes()),
    ];
    rt.block_on(publish(&topics.texts, &texts));

    let predictions = read_until(&topics.predictions, Duration::from_secs(60), |r| {
        predicted_ids(r).len() >= 2
    });
    assert_eq!(
        predicted_ids(&predictions),
        HashSet::from(["g1".to_string(), "g2".to_string()])
    );
    let expected_texts = [
        ("utf8", "invalid_utf8"),
        ("types", "invalid_event"),
        ("field", "invalid_event"),
        ("empty", "empty_text"),
        ("big", "oversized_text"),
        ("v2", "unsupported_version"),
        ("deep", "malformed_json"),
    ];
    let dead = read_until(&topics.dead_letter, Duration::from_secs(60), |r| {
        r.len() >= 16
    });
    let text_dead: Vec<&Record> = dead
        .iter()
        .filter(|r| r.headers["__connect.errors.topic"] == topics.texts)
        .collect();
    for (key, reason) in expected_texts {
        let record = text_dead
            .iter()
            .find(|r| r.key.as_deref() == Some(key))
            .unwrap_or_else(|| panic!("no dead letter for {key}: {dead:?}"));
        assert_eq!(record.headers["gorag.reason"], reason, "{key}");
        assert_eq!(record.headers["__connect.errors.partition"], "0");
        assert_eq!(record.headers["__connect.errors.stage"], "decode");
        assert!(!record.headers["__connect.errors.exception.message"].is_empty());
        // The original bytes, untouched.
        let original = texts.iter().find(|(k, _)| *k == Some(key)).unwrap();
        assert_eq!(record.value, original.1, "{key}");
    }
    let unkeyed = text_dead
        .iter()
        .find(|r| r.key.is_none())
        .expect("malformed");
    assert_eq!(unkeyed.headers["gorag.reason"], "malformed_json");
    assert_eq!(unkeyed.value, b"{not json");
    // Offsets point at the source records: the first text was offset 0, `utf8` offset 2.
    let utf8 = text_dead
        .iter()
        .find(|r| r.key.as_deref() == Some("utf8"))
        .unwrap();
    assert_eq!(utf8.headers["__connect.errors.offset"], "2");

    let label_reasons: Vec<(String, String)> = dead
        .iter()
        .filter(|r| r.headers["__connect.errors.topic"] == topics.labels)
        .map(|r| {
            (
                r.headers["__connect.errors.offset"].clone(),
                r.headers["gorag.reason"].clone(),
            )
        })
        .collect();
    assert_eq!(
        label_reasons,
        vec![
            ("1".into(), "unknown_event_type".into()),
            ("2".into(), "duplicate_label".into()),
            ("3".into(), "unknown_label".into()),
            ("4".into(), "invalid_round".into()),
            ("6".into(), "retired_label".into()),
            ("7".into(), "invalid_round".into()),
            ("8".into(), "invalid_round".into()),
        ],
        "{dead:?}"
    );
    let log = service.stop();
    assert!(log.contains("\"drained\":true"), "{log}");
}

/// Texts drawn from the example round's vocabulary, deterministically.
fn synthetic_texts(count: usize) -> Vec<String> {
    ticket_texts(0x9e37_79b9_7f4a_7c15, "s", count, 9)
}

#[test]
fn a_killed_service_restarts_without_losing_a_text_or_learning_twice() {
    const TEXTS: usize = 1000;
    let texts = synthetic_texts(TEXTS);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut digests = Vec::new();
    for kill in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let topics = Topics::new(if kill { "killed" } else { "whole" });
        let state = dir.path().join("state");
        let mut sets = base_sets(&topics, &state);
        sets.push("llm.url=none".into());
        sets.push("input.max_in_flight=1".into());
        sets.push("kafka.partitions=1".into());
        sets.push("state.snapshot_every=400".into());
        sets.push("state.snapshot_min_interval_secs=0".into());
        // The probe weighs from the first round (its 6 examples are fewer than a fitted
        // weight needs), so a kill must not change what it decides either.
        sets.push("engine.ranking.probe_weight=1".into());
        let mut service = Service::start(dir.path(), &sets);
        service.wait_ready();
        rt.block_on(publish_json(&topics.labels, &example("round-1.jsonl")));
        rt.block_on(publish_json(&topics.texts, &texts));
        let mut restarts = 0;
        if kill {
            // Kill -9 twice mid-stream, restarting each time.
            for threshold in [250, 600] {
                let seen = read_until(&topics.predictions, Duration::from_secs(120), |r| {
                    r.len() >= threshold
                });
                assert!(seen.len() >= threshold, "log:\n{}", service.log_text());
                assert!(
                    predicted_ids(&seen).len() < TEXTS,
                    "the stream finished before the kill"
                );
                service.kill();
                restarts += 1;
                service = Service::start(dir.path(), &sets);
            }
        }
        let predictions = read_until(&topics.predictions, Duration::from_secs(300), |r| {
            predicted_ids(r).len() >= TEXTS
        });
        let ids = predicted_ids(&predictions);
        assert_eq!(ids.len(), TEXTS, "lost texts; log:\n{}", service.log_text());
        assert!(service.is_running());
        let log = service.stop();
        assert!(log.contains("\"drained\":true"), "{log}");
        let state = state_of(&state);
        eprintln!(
            "kill={kill}: {} predictions for {TEXTS} texts after {restarts} kill(s); state {state}",
            predictions.len()
        );
        if kill {
            assert!(
                predictions.len() >= TEXTS,
                "duplicates are allowed, losses are not"
            );
        }
        assert_eq!(
            state["documents"],
            6 + TEXTS,
            "every text learned exactly once"
        );
        digests.push(state["digest"].as_str().unwrap().to_string());
    }
    assert_eq!(
        digests[0], digests[1],
        "graph differs from the uninterrupted run"
    );
}

/// `engine.keywords = llm`: the service asks the LLM for each text's keywords, then for its
/// class (the same steps as `gorag eval --keywords llm`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_keyword_mode_asks_for_keywords_then_the_class() {
    let llm = FakeLlm::start(Reply::FirstCandidate).await;
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("llm-keywords");
    let mut sets = base_sets(&topics, &dir.path().join("state"));
    sets.extend([
        format!("llm.url={}", llm.url),
        "llm.model=fake-model".into(),
        "llm.ask_below=1".into(),
        "llm.describe_labels=false".into(),
        "engine.keywords=llm".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| service.wait_ready());
    let records = predict_the_first_round(&topics, Duration::from_secs(120)).await;
    let predictions = by_text_id(&records);
    assert_eq!(predictions.len(), 4, "{}", service.log_text());
    for p in predictions.values() {
        assert_eq!(p["source"], "llm", "{p}");
    }
    let requests = llm.requests();
    let keyword_requests = requests
        .iter()
        .filter(|r| r.contains("Extract the keywords of this passage"))
        .count();
    assert_eq!(keyword_requests, 4, "one keyword request per text");
    assert_eq!(requests.len(), 8, "and one classification request per text");
    let log = tokio::task::block_in_place(|| service.stop());
    assert!(log.contains("\"drained\":true"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_failures_fall_back_to_the_graph_or_go_to_the_dead_letter_topic() {
    // Every call fails with 500: the service's bounded retries run out.
    let failing = FakeLlm::start(Reply::Status(500, None)).await;
    // Every answer names no label at all: a hallucination.
    let babbling = FakeLlm::start(Reply::Answer("the moon landing".into())).await;
    let cases = [
        ("graph", &failing, "graph"),
        ("dead_letter", &failing, "dead_letter"),
        ("hallucinating", &babbling, "graph"),
    ];
    for (name, llm, on_failure) in cases {
        let dir = tempfile::tempdir().unwrap();
        let topics = Topics::new(name);
        let mut sets = base_sets(&topics, &dir.path().join("state"));
        sets.extend([
            format!("llm.url={}", llm.url),
            "llm.model=fake-model".into(),
            "llm.ask_below=1".into(),
            "llm.retries=1".into(),
            "llm.timeout_secs=5".into(),
            // Every call fails here: a breaker opened by the label descriptions' calls and the
            // first texts' would answer the last texts with `breaker_open` instead of the 500
            // this test checks (tests/llm_bounds.rs tests the breaker).
            "llm.breaker_failures=1000".into(),
            format!("llm.on_failure={on_failure}"),
        ]);
        let mut service = Service::start(dir.path(), &sets);
        tokio::task::block_in_place(|| service.wait_ready());
        publish_json(&topics.labels, &example("round-1.jsonl")).await;
        publish_json(&topics.texts, &example("texts-1.jsonl")).await;
        let wait = Duration::from_secs(120);
        match name {
            "graph" => {
                let records = tokio::task::block_in_place(|| {
                    read_until(&topics.predictions, wait, |r| predicted_ids(r).len() >= 4)
                });
                let predictions = by_text_id(&records);
                assert_eq!(predictions.len(), 4, "{}", service.log_text());
                for p in predictions.values() {
                    assert_eq!(p["source"], "graph", "{p}");
                    assert!(p["llm_error"].as_str().unwrap().contains("500"), "{p}");
                }
            }
            "dead_letter" => {
                let records = tokio::task::block_in_place(|| {
                    read_until(&topics.dead_letter, wait, |r| r.len() >= 4)
                });
                assert_eq!(records.len(), 4, "{}", service.log_text());
                for r in &records {
                    assert_eq!(r.headers["gorag.reason"], "llm_failed");
                    assert_eq!(r.headers["__connect.errors.stage"], "classify");
                }
                let predictions = tokio::task::block_in_place(|| {
                    read_until(&topics.predictions, Duration::from_secs(2), |_| false)
                });
                assert!(predictions.is_empty(), "{predictions:?}");
            }
            _ => {
                let records = tokio::task::block_in_place(|| {
                    read_until(&topics.hallucinations, wait, |r| r.len() >= 4)
                });
                assert_eq!(records.len(), 4, "{}", service.log_text());
                for r in &records {
                    let h = r.json();
                    assert_eq!(h["kind"], "unknown_label", "{h}");
                    assert_eq!(h["raw_answer"], "the moon landing");
                    assert_eq!(h["source"], "graph");
                }
                let predictions = tokio::task::block_in_place(|| {
                    read_until(&topics.predictions, wait, |r| predicted_ids(r).len() >= 4)
                });
                for p in by_text_id(&predictions).values() {
                    assert_eq!(p["hallucination"], true, "{p}");
                    assert_eq!(p["hallucination_kind"], "unknown_label");
                }
            }
        }
        let log = tokio::task::block_in_place(|| service.stop());
        assert!(log.contains("\"drained\":true"), "{log}");
    }
}

#[test]
fn replicas_share_the_texts_and_converge_to_the_same_graph() {
    const TEXTS: usize = 600;
    let texts = synthetic_texts(TEXTS);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("replicas");
    let sets_for = |state: &str| {
        let mut sets = base_sets(&topics, &dir.path().join(state));
        sets.push("llm.url=none".into());
        sets.push("kafka.partitions=4".into());
        sets
    };
    let mut first = Service::start(dir.path(), &sets_for("state-a"));
    first.wait_ready();
    rt.block_on(publish_json(&topics.labels, &example("round-1.jsonl")));
    rt.block_on(publish_json(&topics.texts, &texts[..TEXTS / 3]));
    read_until(&topics.predictions, Duration::from_secs(120), |r| {
        predicted_ids(r).len() >= TEXTS / 6
    });
    // A second replica joins mid-stream: the group rebalances (the first commits what it
    // finished on the partitions it gives up) and the newcomer catches up from the changelog.
    let mut second = Service::start(dir.path(), &sets_for("state-b"));
    second.wait_for_log("partitions assigned");
    rt.block_on(publish_json(
        &topics.texts,
        &texts[TEXTS / 3..2 * TEXTS / 3],
    ));
    // A new round while both run, then the rest of the texts.
    rt.block_on(publish_json(&topics.labels, &example("round-2.jsonl")));
    rt.block_on(publish_json(&topics.texts, &texts[2 * TEXTS / 3..]));
    let predictions = read_until(&topics.predictions, Duration::from_secs(180), |r| {
        predicted_ids(r).len() >= TEXTS
    });
    assert_eq!(
        predicted_ids(&predictions).len(),
        TEXTS,
        "first:\n{}\nsecond:\n{}",
        first.log_text(),
        second.log_text()
    );
    let log_a = first.stop();
    let log_b = second.stop();
    assert!(log_a.contains("partitions revoked"), "{log_a}");
    assert!(log_b.contains("partitions assigned"), "{log_b}");
    // Both did part of the work.
    for log in [&log_a, &log_b] {
        let summary = log
            .lines()
            .find(|l| l.contains("\"predictions\":"))
            .expect("summary");
        assert!(!summary.contains("\"predictions\":0,"), "{summary}");
    }
    let a = state_of(&dir.path().join("state-a"));
    let b = state_of(&dir.path().join("state-b"));
    assert_eq!(a["digest"], b["digest"], "replicas diverged:\n{a}\n{b}");
    assert_eq!(a["documents"], 6 + 4 + TEXTS, "{a}");
    assert_eq!(a["labels"], 5, "{a}");
    // A third replica starting from nothing rebuilds the same graph from the log.
    let mut third = Service::start(dir.path(), &sets_for("state-c"));
    third.wait_ready();
    third.stop();
    let c = state_of(&dir.path().join("state-c"));
    assert_eq!(
        a["digest"], c["digest"],
        "a new replica did not catch up:\n{a}\n{c}"
    );
    eprintln!("replicas a, b, c: digest {}", a["digest"]);
}

/// Waits until the service has exited (or fails after `limit`); returns its log.
fn wait_for_exit(service: &mut Service, limit: Duration) -> String {
    let started = std::time::Instant::now();
    while service.is_running() {
        assert!(
            started.elapsed() < limit,
            "still running after {limit:?}:\n{}",
            service.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    service.log_text()
}

/// A memory-storage broker that restarts has lost every topic, the changelog included. Going
/// on with a graph no log backs would let replicas diverge without a word, so the service stops
/// with an error that says what happened and what to do, and will not start on that state again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_lost_its_log_stops_the_service_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Broker::start(dir.path(), "memory://nisshi/");
    let topics = Topics::new("lost-log");
    let mut sets = base_sets(&topics, &dir.path().join("state"));
    sets.extend([
        format!("kafka.brokers={}", broker.address),
        "llm.url=none".to_string(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| service.wait_ready());
    publish_json_to(&broker.address, &topics.labels, &example("round-1.jsonl")).await;
    tokio::task::block_in_place(|| service.wait_for_log("label event applied"));

    tokio::task::block_in_place(|| {
        broker.stop("KILL");
        broker.restart();
    });
    let log = tokio::task::block_in_place(|| wait_for_exit(&mut service, Duration::from_secs(120)));
    assert!(log.contains("the broker lost data"), "{log}");

    let mut again = Service::start(dir.path(), &sets);
    let log = tokio::task::block_in_place(|| wait_for_exit(&mut again, Duration::from_secs(60)));
    assert!(log.contains("Delete state.dir"), "{log}");
}

/// The broker goes away with texts in flight, then SIGTERM: their outputs can never be
/// delivered, and the drain deadline must still end the process — with a non-zero code, since
/// their offsets stay uncommitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_that_cannot_deliver_still_ends_at_its_deadline() {
    let llm = FakeLlm::start(Reply::FirstCandidateAfter(Duration::from_secs(3))).await;
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Broker::start(dir.path(), "memory://nisshi/");
    let topics = Topics::new("undeliverable");
    let mut sets = base_sets(&topics, &dir.path().join("state"));
    sets.extend([
        format!("kafka.brokers={}", broker.address),
        format!("llm.url={}", llm.url),
        "llm.model=fake-model".into(),
        "llm.ask_below=1".into(),
        "llm.describe_labels=false".into(),
        "state.drain_timeout_secs=3".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| service.wait_ready());
    publish_json_to(&broker.address, &topics.labels, &example("round-1.jsonl")).await;
    tokio::task::block_in_place(|| service.wait_for_log("label event applied"));
    publish_json_to(&broker.address, &topics.texts, &example("texts-1.jsonl")).await;
    // The texts are taken in and wait for the slow LLM; then the broker dies.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    tokio::task::block_in_place(|| broker.stop("KILL"));
    let (status, log) = tokio::task::block_in_place(|| {
        service.terminate_within(Duration::from_secs(3 + 10 + 10 + 15))
    });
    assert!(
        !status.success(),
        "undelivered texts must not look like a clean exit:\n{log}"
    );
    assert!(log.contains("drain deadline passed"), "{log}");
}

/// An LLM slower than librdkafka's `max.poll.interval.ms`, with the intake full the whole time:
/// the consumer is polled by its own thread whatever the loop waits for, so the instance stays
/// in its group (no "maximum poll interval exceeded", no revocation) and every text is
/// predicted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_slower_than_the_poll_interval_keeps_the_instance_in_its_group() {
    let llm = FakeLlm::start(Reply::FirstCandidateAfter(Duration::from_secs(9))).await;
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("slow-llm");
    let mut sets = base_sets(&topics, &dir.path().join("state"));
    sets.extend([
        format!("llm.url={}", llm.url),
        "llm.model=fake-model".into(),
        "llm.ask_below=1".into(),
        "llm.describe_labels=false".into(),
        "llm.timeout_secs=30".into(),
        "input.max_in_flight=1".into(),
        "kafka.client.session.timeout.ms=6000".into(),
        "kafka.client.max.poll.interval.ms=6000".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| service.wait_ready());
    let records = predict_the_first_round(&topics, Duration::from_secs(180)).await;
    let log = tokio::task::block_in_place(|| service.stop());
    assert_eq!(predicted_ids(&records).len(), 4, "{log}");
    assert_eq!(records.len(), 4, "each text predicted once:\n{log}");
    assert!(!log.contains("maximum poll interval"), "{log}");
    assert!(!log.contains("partitions revoked"), "{log}");
}

/// A text whose learn record is larger than the producer may send: it is predicted, sent to the
/// dead letters with the reason naming the learn record, and — the intake holding one text —
/// the texts after it still flow: the place its learn record held is given back.
#[test]
fn a_learn_record_the_broker_refuses_gives_its_place_back_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("learn-refused");
    let mut sets = base_sets(&topics, &dir.path().join("state"));
    sets.extend([
        "llm.url=none".into(),
        "input.max_in_flight=1".into(),
        "kafka.partitions=1".into(),
        "kafka.client.message.max.bytes=8000".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(publish_json(&topics.labels, &example("round-1.jsonl")));
    service.wait_for_log("label event applied");

    // 400 distinct words: ≈1,200 phrases in its learn record, far over 8,000 bytes; its
    // prediction (20 keywords at most) and its dead letter fit.
    let letter = |n: usize| char::from(b'a' + (n % 26) as u8);
    let words: Vec<String> = (0..400)
        .map(|i| format!("zq{}{}{}", letter(i / 676), letter(i / 26), letter(i)))
        .collect();
    let mut texts = vec![format!(
        r#"{{"id":"huge","text":"my parcel is late {}"}}"#,
        words.join(" ")
    )];
    texts.extend((1..=5).map(|i| {
        format!(r#"{{"id":"g{i}","text":"the courier lost my parcel, tracking shows nothing"}}"#)
    }));
    rt.block_on(publish_json(&topics.texts, &texts));

    let predictions = read_until(&topics.predictions, Duration::from_secs(60), |r| {
        predicted_ids(r).len() >= 6
    });
    let ids = predicted_ids(&predictions);
    for id in ["huge", "g1", "g2", "g3", "g4", "g5"] {
        assert!(ids.contains(id), "{id} not predicted: {ids:?}");
    }
    let dead = read_until(&topics.dead_letter, Duration::from_secs(30), |r| {
        !r.is_empty()
    });
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].key.as_deref(), Some("huge"));
    assert_eq!(dead[0].headers["gorag.reason"], "output_too_large");
    assert_eq!(dead[0].headers["__connect.errors.stage"], "produce");
    assert!(
        dead[0].headers["__connect.errors.exception.message"].contains("online-indexing record"),
        "{:?}",
        dead[0].headers
    );
    let log = service.stop();
    assert!(log.contains("\"learns_refused\":1"), "{log}");
    assert!(log.contains("\"drained\":true"), "{log}");
}

#[test]
fn predictions_carry_confidence_and_what_no_class_covers_needs_review() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("review");
    let mut sets = base_sets(&topics, &dir.path().join("state"));
    sets.push("llm.url=none".into());
    sets.push("kafka.partitions=1".into());
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    let rt = tokio::runtime::Runtime::new().unwrap();

    rt.block_on(publish_json(&topics.labels, &example("round-1.jsonl")));
    rt.block_on(publish_json(&topics.labels, &example("round-2.jsonl")));
    let mut texts = example("texts-2.jsonl");
    // The data-privacy requests: no class covers them.
    texts.extend(example("texts-3.jsonl"));
    rt.block_on(publish_json(&topics.texts, &texts));
    let predictions = read_until(&topics.predictions, Duration::from_secs(120), |r| {
        predicted_ids(r).len() >= texts.len()
    });
    let predictions = by_text_id(&predictions);
    assert_eq!(predictions.len(), texts.len(), "{}", service.log_text());
    for (id, p) in &predictions {
        assert_eq!(p["version"], 4, "{id}: {p}");
        let confidence = p["confidence"].as_f64().expect("a confidence");
        assert!((0.0..=1.0).contains(&confidence), "{id}: {p}");
        // A text with no match has no label, whatever its best candidate's confidence.
        match p["status"].as_str() {
            Some("decided") => assert!(confidence >= 0.5, "{id}: {p}"),
            // Below `abstain_below`, or a short text (here: one sharing no word with any
            // label) whose label reads far from it in meaning, whatever its confidence
            // (`engine.ranking.short_text_min_meaning`).
            Some("needs_review") => assert!(
                confidence < 0.5 || (id.starts_with("t-3") && p["confident"] == false),
                "{id}: {p}"
            ),
            Some("no_match") => assert!(p["label"].is_null(), "{id}: {p}"),
            _ => panic!("{id}: {p}"),
        }
        assert_eq!(p["llm_asked"], false, "{id}: {p}");
        if p["status"] != "decided" {
            assert_eq!(
                p["confident"], false,
                "never learned as confident: {id}: {p}"
            );
        }
    }
    let privacy: Vec<&serde_json::Value> = predictions
        .iter()
        .filter(|(id, _)| id.starts_with("t-3"))
        .map(|(_, p)| p)
        .collect();
    // Most: a request that shares a phrase with one class's example and nothing with the
    // others ("please send" a copy of my data, like "please send" a corrected invoice) can
    // still look sure (docs/design/decisions.md, "What it measures").
    let reviewed = privacy.iter().filter(|p| p["status"] != "decided").count();
    assert!(
        reviewed >= privacy.len() - 2,
        "privacy requests decided as known classes: {privacy:?}"
    );
    // A text of a known class is decided, and says why.
    let decided: Vec<&serde_json::Value> = predictions
        .iter()
        .filter(|(id, p)| id.starts_with("t-2") && p["status"] == "decided")
        .map(|(_, p)| p)
        .collect();
    assert!(!decided.is_empty(), "{predictions:?}");
    for p in decided {
        let rationale = &p["rationale"];
        let example_id = rationale["example_id"].as_str().expect("an example id");
        assert!(example_id.starts_with(p["label"].as_str().unwrap()), "{p}");
        assert!(!rationale["excerpt"].as_str().unwrap().is_empty(), "{p}");
        assert!(!rationale["terms"].as_array().unwrap().is_empty(), "{p}");
    }
    let log = service.stop();
    assert!(log.contains("\"drained\":true"), "{log}");
}

#[test]
fn a_correction_is_learned_by_every_replica_and_bad_ones_are_dead_lettered() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("corrections");
    let sets_for = |state: &str| {
        let mut sets = base_sets(&topics, &dir.path().join(state));
        sets.push("llm.url=none".into());
        sets.push("kafka.partitions=2".into());
        sets
    };
    let mut a = Service::start(dir.path(), &sets_for("state-a"));
    let mut b = Service::start(dir.path(), &sets_for("state-b"));
    a.wait_ready();
    b.wait_ready();
    // Round 1, and a class announced with no example and a name none of the privacy
    // requests uses: nothing leads a text to it until a correction does.
    let mut labels = example("round-1.jsonl");
    labels.push(
        r#"{"type":"round","round":"r-legal","labels":[{"id":"data_privacy","name":"legal"}]}"#
            .into(),
    );
    rt.block_on(publish_json(&topics.labels, &labels));
    let privacy = example("texts-3.jsonl");
    let text_of = |line: &str| -> String {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        value["text"].as_str().unwrap().to_string()
    };
    // t-303 (withdrawn consent, delete my personal data) before any correction.
    rt.block_on(publish_json(&topics.texts, &[privacy[2].clone()]));
    let before = read_until(&topics.predictions, Duration::from_secs(60), |r| {
        predicted_ids(r).contains("t-303")
    });
    let before = by_text_id(&before);
    assert_ne!(
        before["t-303"]["label"], "data_privacy",
        "{:?}",
        before["t-303"]
    );

    // An operator corrects t-301 (erase my personal data, under GDPR) with the CLI.
    let correct_as = |id: &str, label: &str, text: &str, extra: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_gorag"))
            .args([
                "correct",
                id,
                label,
                "--text",
                text,
                "--topic",
                &topics.labels,
            ])
            .args(extra)
            .args(["--brokers", &support::kafka::brokers()])
            .output()
            .expect("gorag correct");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let correct = |id: &str, label: &str, text: &str| correct_as(id, label, text, &[]);
    correct("t-301", "data_privacy", &text_of(&privacy[0]));
    // An audit (a text picked at random) is applied alike, and refits the confidence too.
    correct_as("t-306", "data_privacy", &text_of(&privacy[5]), &["--audit"]);
    // Bad ones: an unknown label, which the CLI refuses before sending (naming the active
    // labels), so it is published by hand, as a review tool might; and a correction without
    // its text.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args([
            "correct",
            "t-302",
            "nope",
            "--text",
            "x",
            "--topic",
            &topics.labels,
        ])
        .args(["--brokers", &support::kafka::brokers()])
        .output()
        .expect("gorag correct");
    let refusal = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{refusal}");
    assert!(
        refusal.contains("not an active label") && refusal.contains("\"data_privacy\""),
        "{refusal}"
    );
    rt.block_on(publish_json(
        &topics.labels,
        &[
            r#"{"type":"correct","text_id":"t-302","label":"nope","text":"my data"}"#.into(),
            r#"{"type":"correct","text_id":"t-305","label":"data_privacy","text":"  "}"#.into(),
        ],
    ));
    // "None of these": no active label fits t-307; applied, not dead-lettered.
    let none = std::process::Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args([
            "correct",
            "t-307",
            "--none",
            "--text",
            &text_of(&privacy[6]),
        ])
        .args([
            "--topic",
            &topics.labels,
            "--brokers",
            &support::kafka::brokers(),
        ])
        .output()
        .expect("gorag correct --none");
    assert!(
        none.status.success(),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
    a.wait_for_log_count("correction applied", 3);
    b.wait_for_log_count("correction applied", 3);

    // The next text of that kind, t-308 (delete my personal data), is now data privacy.
    rt.block_on(publish_json(&topics.texts, &[privacy[7].clone()]));
    let after = read_until(&topics.predictions, Duration::from_secs(60), |r| {
        predicted_ids(r).contains("t-308")
    });
    let after = by_text_id(&after);
    assert_eq!(
        after["t-308"]["label"], "data_privacy",
        "{:?}",
        after["t-308"]
    );

    let dead = read_until(&topics.dead_letter, Duration::from_secs(60), |r| {
        r.len() >= 2
    });
    let reasons: HashSet<(String, String)> = dead
        .iter()
        .map(|r| {
            (
                r.key.clone().unwrap_or_default(),
                r.headers["gorag.reason"].clone(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        HashSet::from([
            // Both were published by hand, so keyed by their label (publish_json's rule);
            // `gorag correct` keys a correction by its text id.
            ("nope".to_string(), "unknown_label".to_string()),
            ("data_privacy".to_string(), "empty_text".to_string()),
        ]),
        "{dead:?}"
    );
    let (log_a, log_b) = (a.stop(), b.stop());
    assert!(log_a.contains("audit=true"), "{log_a}");
    assert!(log_a.contains("\"drained\":true"), "{log_a}");
    assert!(log_b.contains("\"drained\":true"), "{log_b}");
    let (state_a, state_b) = (
        state_of(&dir.path().join("state-a")),
        state_of(&dir.path().join("state-b")),
    );
    assert_eq!(state_a["digest"], state_b["digest"], "{state_a}\n{state_b}");
}
