//! An honest "no match" through the service loop, in this process over the in-memory broker
//! (no Kafka): a text no label explains is published with no label and the status `no_match`;
//! an operator's "none of these" (`correct` with `none_of_these`) is applied, not
//! dead-lettered, and replicas agree on it; a correction to a label the service does not know
//! still goes to the dead letters.

mod support;

use std::path::Path;
use std::time::Duration;

use gorag::broker::{MemoryBroker, Outgoing, Transport};
use gorag::config::{Layers, ServeConfig};
use gorag::events::PredictionStatus;
use gorag::serve::{serve_on, ServeSummary};
use support::example;
use support::in_process::{predictions, wait_until};
use tokio::sync::oneshot;

fn config(state: &Path) -> ServeConfig {
    let sets = [
        format!("state.dir={}", state.display()),
        "kafka.group_id=no-match".into(),
        "kafka.partitions=1".into(),
        "admin.listen=127.0.0.1:0".into(),
        "llm.url=none".into(),
        "engine.embedding_model=none".into(),
    ];
    ServeConfig::load(&Layers {
        file: None,
        env: Vec::new(),
        sets: sets.to_vec(),
    })
    .expect("a valid configuration")
}

fn publish(broker: &MemoryBroker, topic: &str, key: &str, line: &str) {
    broker
        .append(&Outgoing {
            topic: topic.to_string(),
            key: Some(key.as_bytes().to_vec()),
            payload: line.as_bytes().to_vec(),
            headers: Vec::new(),
        })
        .expect("the topic exists");
}

async fn replica(
    broker: MemoryBroker,
    config: ServeConfig,
    stop: oneshot::Receiver<()>,
) -> ServeSummary {
    let shutdown = async move {
        let _ = stop.await;
    };
    serve_on(Transport::Memory(broker), config, shutdown)
        .await
        .expect("the service stopped cleanly")
}

const UNRELATED: &str = "Ich suche eine Wohnung mit Balkon in der Nähe vom Bahnhof.";
const SHIPPING: &str = "My parcel has not arrived and the tracking shows no movement.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_nothing_explains_has_no_label_and_none_of_these_is_a_correction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = MemoryBroker::new();
    let first_config = config(&dir.path().join("state-a"));
    let topics = first_config.topics.clone();
    broker.ensure_topics(&first_config.broker());
    for line in example("round-1.jsonl") {
        publish(&broker, &topics.labels, "r1", &line);
    }
    let text = |id: &str, text: &str| format!(r#"{{"id":"{id}","text":"{text}"}}"#);
    publish(&broker, &topics.texts, "t-1", &text("t-1", UNRELATED));
    publish(&broker, &topics.texts, "t-2", &text("t-2", SHIPPING));
    // The operator says no label fits t-2 (version 2: the first with `none_of_these`), and
    // names a label the service does not know for t-1.
    let none = format!(
        r#"{{"type":"correct","version":2,"text_id":"t-2","none_of_these":true,"text":"{SHIPPING}"}}"#
    );
    let unknown =
        format!(r#"{{"type":"correct","text_id":"t-1","label":"housing","text":"{UNRELATED}"}}"#);

    let (stop_a, stopped_a) = oneshot::channel();
    let (stop_b, stopped_b) = oneshot::channel();
    let first = replica(broker.clone(), first_config, stopped_a);
    let second = replica(
        broker.clone(),
        config(&dir.path().join("state-b")),
        stopped_b,
    );
    let steps = async {
        wait_until("both texts are predicted", || {
            predictions(&broker, &topics.predictions).len() == 2
        })
        .await;
        publish(&broker, &topics.labels, "t-2", &none);
        publish(&broker, &topics.labels, "t-1", &unknown);
        wait_until("the unknown label is dead-lettered", || {
            !broker
                .records(&topics.dead_letter)
                .unwrap_or_default()
                .is_empty()
        })
        .await;
        // Both replicas have read the changelog to its end before they stop.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let _ = stop_a.send(());
        let _ = stop_b.send(());
    };
    let (a, b, ()) = tokio::join!(first, second, steps);

    let predicted = predictions(&broker, &topics.predictions);
    let unrelated = &predicted["t-1"];
    assert_eq!(unrelated.status, PredictionStatus::NoMatch, "{unrelated:?}");
    assert_eq!(unrelated.label, None);
    assert_eq!(unrelated.version, gorag::events::PREDICTION_VERSION);
    let json = serde_json::to_value(unrelated).expect("JSON");
    assert!(json["label"].is_null(), "{json}");
    let shipping = &predicted["t-2"];
    assert_eq!(shipping.label.as_deref(), Some("shipping"), "{shipping:?}");

    // One dead letter, the unknown label's; the correction to none was applied by both.
    let dead: Vec<String> = broker
        .records(&topics.dead_letter)
        .unwrap_or_default()
        .iter()
        .flat_map(|r| r.headers.iter())
        .filter(|(name, _)| name == "gorag.reason")
        .map(|(_, value)| value.clone())
        .collect();
    assert_eq!(dead, ["unknown_label"]);
    assert_eq!(a.label_events, 3, "{a:?}");
    assert_eq!(a.digest, b.digest, "replicas diverged:\n{a:?}\n{b:?}");
}
