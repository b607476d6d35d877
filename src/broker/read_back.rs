//! Reading a small topic from its beginning to the end it has when asked (the proposals topic
//! before a community pass or `gorag proposals`; the labels topic before accepting one).

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};
use thiserror::Error;

use super::BrokerError;

/// How long one broker query (metadata, watermarks) may take.
const QUERY_LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, Error)]
pub enum ReadBackError {
    #[error("reading {topic}, {context}: {source}")]
    Kafka {
        topic: String,
        context: &'static str,
        source: BrokerError,
    },
    #[error("reading {topic} to its end took longer than {limit:?}")]
    TooSlow { topic: String, limit: Duration },
    #[error("topic {topic} does not exist")]
    NoTopic { topic: String },
    #[error("topic {topic} cannot be read: the brokers' metadata says {reason}")]
    Unreadable { topic: String, reason: String },
    #[error("a topic reading task died: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// [`read_to_end`] of `topic` with `client` (brokers, security), from a blocking task; `group`
/// labels the reader.
pub(super) async fn read_topic(
    mut client: ClientConfig,
    group: &str,
    topic: &str,
    limit: Duration,
) -> Result<Vec<Vec<u8>>, ReadBackError> {
    client.set("group.id", group);
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || read_to_end(&client, &topic, limit)).await?
}

/// The partitions of `topic` (none when it does not exist).
pub(super) fn topic_partitions<C: ConsumerContext>(
    consumer: &impl Consumer<C>,
    topic: &str,
) -> Result<Vec<i32>, BrokerError> {
    topic_metadata(consumer, topic)
        .map(|(partitions, _)| partitions)
        .map_err(BrokerError::from)
}

/// The partitions of `topic` and the error its metadata carries, if any, in one request.
fn topic_metadata<C: ConsumerContext>(
    consumer: &impl Consumer<C>,
    topic: &str,
) -> Result<(Vec<i32>, Option<RDKafkaErrorCode>), KafkaError> {
    let metadata = consumer.fetch_metadata(Some(topic), QUERY_LIMIT)?;
    let found = metadata.topics().iter().find(|t| t.name() == topic);
    Ok((
        found.map_or_else(Vec::new, |t| {
            t.partitions().iter().map(|p| p.id()).collect()
        }),
        found.and_then(|t| t.error()).map(RDKafkaErrorCode::from),
    ))
}

/// Why a topic has no partitions: it does not exist, or its metadata names another reason
/// (no permission, no leader).
fn missing_or_unreadable(topic: &str, code: Option<RDKafkaErrorCode>) -> ReadBackError {
    match code {
        None | Some(RDKafkaErrorCode::UnknownTopicOrPartition) => ReadBackError::NoTopic {
            topic: topic.to_string(),
        },
        Some(code) => ReadBackError::Unreadable {
            topic: topic.to_string(),
            reason: format!("{code}"),
        },
    }
}

/// Every record's value on `topic`, from the beginning to the end it had when asked, within
/// `limit`. `client` says how to reach the brokers (its group id is only a label: nothing is
/// committed). Blocking: call it from a blocking task.
fn read_to_end(
    client: &ClientConfig,
    topic: &str,
    limit: Duration,
) -> Result<Vec<Vec<u8>>, ReadBackError> {
    let kafka = |context| {
        move |source: KafkaError| ReadBackError::Kafka {
            topic: topic.to_string(),
            context,
            source: source.into(),
        }
    };
    let consumer: BaseConsumer = client
        .clone()
        .set("enable.auto.commit", "false")
        // The end may be a compacted gap or a control record: stop at the partition's end.
        .set("enable.partition.eof", "true")
        .create()
        .map_err(kafka("creating the consumer"))?;
    let (partitions, code) = topic_metadata(&consumer, topic).map_err(kafka("metadata"))?;
    // An existing topic has partitions: none is a missing topic or a metadata error (no
    // permission, no leader), which must not read as "no records" — a pass would publish every
    // proposal again as new.
    if partitions.is_empty() {
        return Err(missing_or_unreadable(topic, code));
    }
    let mut ends = Vec::new();
    let mut assignment = TopicPartitionList::new();
    for partition in partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, partition, QUERY_LIMIT)
            .map_err(kafka("watermarks"))?;
        if high > low {
            ends.push((partition, high));
            assignment
                .add_partition_offset(topic, partition, Offset::Offset(low))
                .map_err(kafka("assignment"))?;
        }
    }
    if ends.is_empty() {
        return Ok(Vec::new());
    }
    consumer.assign(&assignment).map_err(kafka("assignment"))?;
    let mut payloads = Vec::new();
    let started = Instant::now();
    while !ends.is_empty() {
        if started.elapsed() > limit {
            return Err(ReadBackError::TooSlow {
                topic: topic.to_string(),
                limit,
            });
        }
        let (partition, next) = match consumer.poll(Duration::from_millis(500)) {
            None => continue,
            Some(Err(KafkaError::PartitionEOF(partition))) => (partition, i64::MAX),
            Some(Err(error)) => return Err(kafka("polling")(error)),
            Some(Ok(message)) => {
                payloads.push(message.payload().unwrap_or_default().to_vec());
                (message.partition(), message.offset() + 1)
            }
        };
        ends.retain(|&(p, end)| p != partition || next < end);
    }
    Ok(payloads)
}
