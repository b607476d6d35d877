//! What the operator commands that write events share: reading a small topic to its end, the
//! ids the labels topic already announces, and an idempotent producer.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;

use super::kafka_clients::KafkaArgs;
use crate::broker::commands::{self, CommandProducer};
use crate::config::ServeConfig;
use crate::events::{decode, LabelEvent};

/// How long reading a topic to its end may take.
const READ_LIMIT: Duration = Duration::from_secs(30);

/// Every record's value on the topic, from the beginning to the end it had when asked (a
/// missing topic has none).
pub async fn read_to_end(config: &ServeConfig, topic: &str) -> Result<Vec<Vec<u8>>> {
    Ok(commands::read_topic_if_any(&config.broker(), "gorag-cli", topic, READ_LIMIT).await?)
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

/// The labels active on the labels topic so far: announced by a round and not retired since.
pub async fn active_label_ids(config: &ServeConfig, topic: &str) -> Result<BTreeSet<String>> {
    let mut active = BTreeSet::new();
    for payload in read_to_end(config, topic).await? {
        match decode::label_event(&payload) {
            Ok(LabelEvent::Round { labels, .. }) => {
                active.extend(labels.into_iter().map(|l| l.id));
            }
            Ok(LabelEvent::RetireLabel { label, .. }) => {
                active.remove(&label);
            }
            _ => {}
        }
    }
    Ok(active)
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
pub async fn labels_producer(config: &ServeConfig) -> Result<CommandProducer> {
    let producer = CommandProducer::new(&config.broker())?;
    if config.kafka.create_topics {
        commands::ensure_topics(&config.broker()).await?;
    }
    Ok(producer)
}

/// Publish one keyed event and wait for the broker's acknowledgement.
pub async fn send(
    producer: &CommandProducer,
    topic: &str,
    key: &str,
    payload: &[u8],
) -> Result<()> {
    Ok(producer.send(topic, Some(key.as_bytes()), payload).await?)
}
