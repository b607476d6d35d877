//! What the operator commands that write events share: reading a small topic to its end, the
//! ids the labels topic already announces, and an idempotent producer.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;

use crate::events::{decode, LabelEvent};
use crate::stream::read_back;

/// How long reading a topic to its end may take.
const READ_LIMIT: Duration = Duration::from_secs(30);

/// Every record's value on the topic, from the beginning to the end it had when asked (a
/// missing topic has none).
pub async fn read_to_end(brokers: &str, topic: &str) -> Result<Vec<Vec<u8>>> {
    read_back::read_topic_if_any(brokers, "gorag-cli", topic, READ_LIMIT)
        .await
        .with_context(|| format!("reading {topic} at {brokers}"))
}

/// The round ids and label ids announced on the labels topic so far.
pub async fn label_topic_ids(
    brokers: &str,
    topic: &str,
) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let (mut rounds, mut labels) = (BTreeSet::new(), BTreeSet::new());
    for payload in read_to_end(brokers, topic).await? {
        if let Ok(LabelEvent::Round {
            round,
            labels: specs,
            ..
        }) = decode::label_event(&payload)
        {
            rounds.insert(round);
            labels.extend(specs.into_iter().map(|l| l.id));
        }
    }
    Ok((rounds, labels))
}

pub fn producer(brokers: &str) -> Result<FutureProducer> {
    ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("enable.idempotence", "true")
        .create()
        .context("creating the producer")
}

pub async fn send(producer: &FutureProducer, topic: &str, key: &str, payload: &[u8]) -> Result<()> {
    producer
        .send(
            FutureRecord::to(topic).key(key.as_bytes()).payload(payload),
            Timeout::After(Duration::from_secs(30)),
        )
        .await
        .map_err(|(error, _)| error)
        .with_context(|| format!("publishing to {topic}"))?;
    Ok(())
}
