//! What the operator commands that write events share: reading a small topic to its end, the
//! ids the labels topic already announces, and an idempotent producer.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;

use super::kafka_clients::{self, KafkaArgs};
use crate::config::ServeConfig;
use crate::events::{decode, LabelEvent};
use crate::stream::kafka::{ensure_topics, Noted};
use crate::stream::read_back;

/// How long reading a topic to its end may take.
const READ_LIMIT: Duration = Duration::from_secs(30);

/// Every record's value on the topic, from the beginning to the end it had when asked (a
/// missing topic has none).
pub async fn read_to_end(config: &ServeConfig, topic: &str) -> Result<Vec<Vec<u8>>> {
    let client = kafka_clients::client_config(config);
    read_back::read_topic_if_any(client, "gorag-cli", topic, READ_LIMIT)
        .await
        .with_context(|| format!("reading {topic} at {}", config.kafka.brokers))
}

/// The round ids and label ids announced on the labels topic so far.
pub async fn label_topic_ids(
    config: &ServeConfig,
    topic: &str,
) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let (mut rounds, mut labels) = (BTreeSet::new(), BTreeSet::new());
    for payload in read_to_end(config, topic).await? {
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

/// The configuration with `topic` (a command's `--topic`), when given, as its labels topic: the
/// topic created first is then the one the command writes to.
pub fn labels_config(kafka: &KafkaArgs, topic: Option<&str>) -> Result<ServeConfig> {
    let flags: Vec<String> = topic.iter().map(|t| format!("topics.labels={t}")).collect();
    kafka.load_with(&flags)
}

/// A producer for the labels topic, which is created first (with the layout the service
/// needs) when the configuration lets gorag create its topics: the start order of `serve` and
/// the commands that write label events does not matter.
pub async fn labels_producer(config: &ServeConfig) -> Result<FutureProducer<Noted>> {
    let producer = kafka_clients::producer(config)?;
    if config.kafka.create_topics {
        ensure_topics(config).await?;
    }
    Ok(producer)
}

pub async fn send(
    producer: &FutureProducer<Noted>,
    topic: &str,
    key: &str,
    payload: &[u8],
) -> Result<()> {
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
