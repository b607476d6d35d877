//! A changelog the previous build wrote (tests/fixtures/changelog-d381e80) is replayed by this
//! one, as the compatibility policy of `src/state/codec/mod.rs` says: a replica starting from
//! nothing rebuilds the same state from it, and predicts as that build did; a record of a
//! version older than this build reads stops the service with the steps to rebuild.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use gorag::broker::{MemoryBroker, Outgoing, Transport};
use gorag::config::{Layers, ServeConfig};
use gorag::position::Position;
use gorag::serve::{serve_on, ServeError, ServeSummary};
use support::{example, ticket_texts};
use tokio::sync::oneshot;

const FIXTURE: &str = "tests/fixtures/changelog-d381e80";

/// The fixture build's settings, on this test's state folder.
fn config(state: &Path) -> ServeConfig {
    let sets = [
        format!("state.dir={}", state.display()),
        "kafka.group_id=compat".into(),
        "kafka.partitions=1".into(),
        "admin.listen=127.0.0.1:0".into(),
        "llm.url=none".into(),
        "engine.embedding_model=none".into(),
        "input.max_in_flight=1".into(),
        // That build published every text with a label: the no-match rule (which changes what
        // is published and learned for the texts it fires on, and nothing else) is off, so its
        // predictions are this build's too. The rule is tested in tests/no_match_in_process.rs.
        "engine.no_match=false".into(),
    ];
    ServeConfig::load(&Layers {
        file: None,
        env: Vec::new(),
        sets: sets.to_vec(),
    })
    .expect("a valid configuration")
}

fn fixture_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(Path::new(FIXTURE).join(name))
        .expect("the fixture")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn changelog_records() -> Vec<Vec<u8>> {
    fixture_lines("changelog.hex")
        .iter()
        .map(|line| {
            (0..line.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&line[i..i + 2], 16).expect("hex"))
                .collect()
        })
        .collect()
}

fn append(broker: &MemoryBroker, topic: &str, key: Option<Vec<u8>>, payload: Vec<u8>) {
    broker
        .append(&Outgoing {
            topic: topic.to_string(),
            key,
            payload,
            headers: Vec::new(),
        })
        .expect("the topic exists");
}

/// A broker whose changelog holds `records`.
fn broker_with(config: &ServeConfig, records: Vec<Vec<u8>>) -> MemoryBroker {
    let broker = MemoryBroker::new();
    broker.ensure_topics(&config.broker());
    for record in records {
        append(&broker, &config.topics.changelog, None, record);
    }
    broker
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).expect("JSON")
}

/// What a prediction decided, without its timings and input position.
fn decided(prediction: &serde_json::Value) -> BTreeMap<&'static str, serde_json::Value> {
    [
        "label",
        "source",
        "candidates",
        "candidate_scores",
        "basis",
        "confident",
        "confidence",
        "status",
        "keywords",
        "round",
        "label_version",
    ]
    .into_iter()
    .map(|field| (field, prediction[field].clone()))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_build_s_changelog_replays_to_its_predictions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(&dir.path().join("state"));
    let topics = config.topics.clone();
    let broker = broker_with(&config, changelog_records());
    // The texts topic as that build left it before the probes: the texts its learn records
    // name (offsets 0 to 37), read and committed by the group this replica joins.
    let mut classified = example("texts-1.jsonl");
    classified.extend(example("texts-2.jsonl"));
    classified.extend(ticket_texts(3, "f", 30, 8));
    for text in &classified {
        let key = json(text)["id"].as_str().map(|id| id.as_bytes().to_vec());
        append(&broker, &topics.texts, key, text.as_bytes().to_vec());
    }
    broker.commit("compat", &[Position::new(0, classified.len() as i64)]);
    let probes = fixture_lines("probes.jsonl");
    let expected = fixture_lines("predictions.jsonl");
    let (stop, stopped) = oneshot::channel::<()>();
    let service = serve_on(Transport::Memory(broker.clone()), config, async move {
        let _ = stopped.await;
    });
    let steps = async {
        for probe in &probes {
            let key = json(probe)["id"].as_str().map(|id| id.as_bytes().to_vec());
            append(&broker, &topics.texts, key, probe.as_bytes().to_vec());
        }
        let started = Instant::now();
        while broker
            .records(&topics.predictions)
            .unwrap_or_default()
            .len()
            < probes.len()
        {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no predictions"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = stop.send(());
    };
    let (summary, ()) = tokio::join!(service, steps);
    let summary: ServeSummary = summary.expect("the service stopped cleanly");
    assert_eq!(summary.labels, 5, "{summary:?}");
    assert_eq!(
        (summary.texts_in, summary.relearn_skipped),
        (probes.len() as u64, 0),
        "only the probes read, and each learned: {summary:?}"
    );
    // By text id: texts finish in order, but their predictions are delivered side by side.
    let by_id = |values: Vec<serde_json::Value>| -> BTreeMap<String, serde_json::Value> {
        values
            .into_iter()
            .map(|v| (v["text_id"].as_str().unwrap_or_default().to_string(), v))
            .collect()
    };
    let published = broker.records(&topics.predictions).unwrap_or_default();
    let now = by_id(
        published
            .iter()
            .map(|r| json(&String::from_utf8_lossy(&r.payload)))
            .collect(),
    );
    let then = by_id(expected.iter().map(|line| json(line)).collect());
    assert_eq!(published.len(), then.len());
    assert_eq!(
        now.keys().collect::<Vec<_>>(),
        then.keys().collect::<Vec<_>>()
    );
    for (id, then) in &then {
        assert_eq!(decided(&now[id]), decided(then), "{id}");
    }
}

/// The third fixture record (a learn record) as version 4 numbered it: marker, then the
/// version (one byte), the rest as it was.
fn version_4_record() -> Vec<u8> {
    let mut record = changelog_records().swap_remove(2);
    assert_eq!(record[1], 7);
    record[1] = 4;
    record
}

fn the_fix(served: Result<ServeSummary, ServeError>, at_least: i64) -> String {
    match served {
        Err(error @ ServeError::ChangelogVersion { offset, .. }) if offset >= at_least => {
            error.to_string()
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_older_than_this_build_reads_stops_the_service_with_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(&dir.path().join("state"));
    let mut records = changelog_records();
    records[2] = version_4_record();
    let broker = broker_with(&config, records);
    let served = serve_on(Transport::Memory(broker), config, std::future::pending()).await;
    let error = the_fix(served, 2);
    assert!(
        error.contains("version 4") && error.contains("delete the changelog topic"),
        "{error}"
    );
}

/// While serving too: whichever way the record is read (as it arrives, or by a sync), the
/// service stops rather than skip it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_of_another_version_arriving_while_serving_stops_the_service() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(&dir.path().join("state"));
    let topics = config.topics.clone();
    let records = changelog_records();
    let replayed = records.len() as i64;
    let broker = broker_with(&config, records);
    let service = serve_on(
        Transport::Memory(broker.clone()),
        config,
        std::future::pending(),
    );
    let steps = async {
        let probe = fixture_lines("probes.jsonl").swap_remove(0);
        append(&broker, &topics.texts, None, probe.into_bytes());
        let started = Instant::now();
        while broker
            .records(&topics.predictions)
            .unwrap_or_default()
            .is_empty()
        {
            assert!(started.elapsed() < Duration::from_secs(60), "no prediction");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        append(&broker, &topics.changelog, None, version_4_record());
    };
    let (served, ()) = tokio::join!(service, steps);
    the_fix(served, replayed);
}
