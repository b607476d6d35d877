//! The service loop in this process, over the in-memory broker (no Kafka): two replicas of one
//! group through a rebalance and a round, every text predicted, every offset committed, and
//! both replicas on the same state. The same flows against the real broker, as child
//! processes, are in `tests/stream.rs`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use gorag::broker::{MemoryBroker, Outgoing, Transport};
use gorag::config::{Layers, ServeConfig};
use gorag::serve::{serve_on, ServeSummary};
use support::in_process::{predictions, wait_until};
use support::{example, ticket_texts};
use tokio::sync::oneshot;

const GROUP: &str = "in-process";

fn config(state: &Path) -> ServeConfig {
    let sets = [
        format!("state.dir={}", state.display()),
        format!("kafka.group_id={GROUP}"),
        "kafka.partitions=2".into(),
        // Offsets are committed on revocation and at the close only (not by the tick): the test
        // sees the revocation's commit.
        "kafka.commit_interval_ms=600000".into(),
        "admin.listen=127.0.0.1:0".into(),
        "llm.url=none".into(),
        "engine.embedding_model=none".into(),
        "discovery.enabled=false".into(),
    ];
    ServeConfig::load(&Layers {
        file: None,
        env: Vec::new(),
        sets: sets.to_vec(),
    })
    .expect("a valid configuration")
}

/// A replica serving until `stop` is sent (the service's future is not `Send`: it runs on
/// the test's task, beside the test's own steps, as `main` runs it).
async fn replica(
    broker: MemoryBroker,
    config: ServeConfig,
    start: oneshot::Receiver<()>,
    stop: oneshot::Receiver<()>,
) -> ServeSummary {
    start.await.expect("started");
    let shutdown = async move {
        let _ = stop.await;
    };
    serve_on(Transport::Memory(broker), config, shutdown)
        .await
        .expect("the service stopped cleanly")
}

/// Publish JSON events keyed by their `id` (or `round`).
fn publish(broker: &MemoryBroker, topic: &str, lines: &[String]) {
    for line in lines {
        let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
        let key = value
            .get("id")
            .or_else(|| value.get("round"))
            .and_then(|k| k.as_str())
            .map(|k| k.as_bytes().to_vec());
        broker
            .append(&Outgoing {
                topic: topic.to_string(),
                key,
                payload: line.as_bytes().to_vec(),
                headers: Vec::new(),
            })
            .expect("the topic exists");
    }
}

fn ids(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_go_through_a_rebalance_and_a_round_in_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = MemoryBroker::new();
    let first_config = config(&dir.path().join("state-a"));
    let topics = first_config.topics.clone();
    broker.ensure_topics(&first_config.broker());

    let (start_a, started_a) = oneshot::channel();
    let (stop_a, stopped_a) = oneshot::channel();
    let (start_b, started_b) = oneshot::channel();
    let (stop_b, stopped_b) = oneshot::channel();
    let first = replica(broker.clone(), first_config, started_a, stopped_a);
    let second_config = config(&dir.path().join("state-b"));
    let second = replica(broker.clone(), second_config, started_b, stopped_b);
    let steps = async {
        // One replica, the first round, texts on both partitions.
        publish(&broker, &topics.labels, &example("round-1.jsonl"));
        let _ = start_a.send(());
        let before = ticket_texts(7, "a", 40, 8);
        publish(&broker, &topics.texts, &before);
        wait_until("the first replica predicts the first texts", || {
            predictions(&broker, &topics.predictions).len() >= before.len()
        })
        .await;
        assert_eq!(broker.assignment(GROUP), [vec![0, 1]]);

        // A second replica joins: the group rebalances (the first gives a partition up,
        // committing what it finished), and the newcomer catches up from the changelog.
        let _ = start_b.send(());
        wait_until("the rebalance gives each replica a partition", || {
            broker.assignment(GROUP) == [vec![0], vec![1]]
        })
        .await;
        // With the tick committing nothing, these are the revocation's commits: the first
        // replica committed every text it had finished, on both partitions.
        let ends: BTreeMap<i32, i64> = (0..2)
            .map(|p| (p, broker.watermarks(&topics.texts, p).expect("texts").1))
            .collect();
        assert_eq!(broker.committed(GROUP), ends, "committed on revocation");

        // A new round, then texts for it and more texts on both partitions.
        publish(&broker, &topics.labels, &example("round-2.jsonl"));
        let after_round = example("texts-2.jsonl");
        let after = ticket_texts(11, "b", 40, 8);
        publish(&broker, &topics.texts, &after_round);
        publish(&broker, &topics.texts, &after);
        let every_id: Vec<String> = [ids(&before), ids(&after_round), ids(&after)].concat();
        wait_until("every text is predicted", || {
            let predicted = predictions(&broker, &topics.predictions);
            every_id.iter().all(|id| predicted.contains_key(id))
        })
        .await;
        let _ = stop_a.send(());
        let _ = stop_b.send(());
        every_id
    };
    let (a, b, every_id) = tokio::join!(first, second, steps);

    // Nothing was in flight when the partition changed hands (the first replica had finished
    // every text and committed on revocation): no text is predicted twice.
    let published = broker
        .records(&topics.predictions)
        .unwrap_or_default()
        .len();
    assert_eq!(published, every_id.len(), "predictions published");
    let predicted = predictions(&broker, &topics.predictions);
    for id in ["t-201", "t-204"] {
        assert!(
            predicted[id]
                .candidates
                .iter()
                .any(|c| c == "product_defect"),
            "{id}, published after round 2, has its label among the candidates: {:?}",
            predicted[id].candidates
        );
    }
    // Both did part of the work, and hold the same state (the changelog applied to its end).
    assert!(a.predictions > 0 && b.predictions > 0, "{a:?}\n{b:?}");
    assert_eq!(a.digest, b.digest, "replicas diverged:\n{a:?}\n{b:?}");
    assert_eq!(a.labels, 5, "{a:?}");
    // Every offset is committed: a restart reads nothing again.
    let ends: BTreeMap<i32, i64> = (0..2)
        .map(|p| (p, broker.watermarks(&topics.texts, p).expect("texts").1))
        .collect();
    assert_eq!(broker.committed(GROUP), ends);
    assert_eq!(ends.values().sum::<i64>() as usize, every_id.len());
}
