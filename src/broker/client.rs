//! Kafka clients as the service uses them, built from its configuration: settings, librdkafka's
//! log lines and errors, topic creation, producing, reading a log, metadata.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer as _};
use rdkafka::{Offset, TopicPartitionList};

use super::security::{security_properties, PropertyValue};
use super::trouble::{note_broker_error, note_log_line};
use super::BrokerSettings;
use super::ClientError;
use super::{topic_layouts, BrokerError, BrokerErrorKind, Outgoing, Record};
use crate::position::Position;

/// A client context that hands librdkafka's own log lines (broker down, reconnects, retries) and
/// global errors to tracing under the target `librdkafka`: without it they would go to
/// the `log` crate, which nothing here reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Logged;

impl ClientContext for Logged {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        log_librdkafka(level, facility, message);
    }

    /// Global errors repeat what librdkafka's log lines (and the consumers' errors) already
    /// say, once more per client: debug level. The last one is kept as the reason the brokers
    /// are unreachable ([`super::broker_trouble`]).
    fn error(&self, error: KafkaError, reason: &str) {
        tracing::debug!(target: "librdkafka", %error, reason, "librdkafka error");
        note_broker_error(&error, reason);
    }
}

/// A record's headers as (key, value) pairs, values read as UTF-8 (lossily; a header without
/// a value reads as empty).
fn header_pairs(message: &impl Message) -> Vec<(String, String)> {
    message
        .headers()
        .map(|h| {
            h.iter()
                .map(|header| {
                    let value = header.value.unwrap_or_default();
                    (
                        header.key.to_string(),
                        String::from_utf8_lossy(value).into_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

impl ConsumerContext for Logged {}

/// The client context of the one-shot commands (`publish`, `tail`, …): librdkafka's log lines
/// are not printed — the command's own error names the address and the reason — but the last
/// error-level one (refused, not resolved, SASL handshake failed) is kept as that reason.
#[derive(Clone, Copy, Debug, Default)]
pub struct Noted;

impl ClientContext for Noted {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        use RDKafkaLogLevel::{Alert, Critical, Emerg, Error};
        if matches!(level, Emerg | Alert | Critical | Error) {
            note_log_line(message);
        }
        tracing::debug!(target: "librdkafka", facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        note_broker_error(&error, reason);
    }
}

impl ConsumerContext for Noted {}

/// The Kafka producer every output goes through.
pub type KafkaProducer = FutureProducer<Logged>;
/// A Kafka consumer of a one-partition log (labels, changelog).
pub type KafkaLogReader = StreamConsumer<Logged>;
/// A Kafka consumer used only for metadata and watermark queries.
pub type KafkaMetadataClient = BaseConsumer<Logged>;
/// The acknowledgement of one record handed to the producer.
pub type KafkaDelivery = DeliveryFuture;

impl From<KafkaError> for BrokerError {
    fn from(error: KafkaError) -> Self {
        if let KafkaError::ClientConfig(_, description, key, value) = &error {
            // rdkafka's own text ends with the value, which may be a secret (a misspelt
            // `sasl.passwrod`): name the property only.
            return BrokerError::new(
                BrokerErrorKind::ClientConfig,
                format!(
                    "librdkafka refused the property \"{key}\" (value not shown): {}",
                    crate::secret::scrub(description, value)
                ),
            );
        }
        let kind = match error.rdkafka_error_code() {
            _ if matches!(error, KafkaError::ClientConfig(..)) => BrokerErrorKind::ClientConfig,
            Some(
                RDKafkaErrorCode::UnknownPartition
                | RDKafkaErrorCode::UnknownTopic
                | RDKafkaErrorCode::UnknownTopicOrPartition,
            ) => BrokerErrorKind::UnknownTopic,
            Some(
                RDKafkaErrorCode::MessageSizeTooLarge | RDKafkaErrorCode::MessageBatchTooLarge,
            ) => BrokerErrorKind::TooLarge,
            Some(RDKafkaErrorCode::QueueFull) => BrokerErrorKind::QueueFull,
            _ => BrokerErrorKind::Other,
        };
        BrokerError::new(kind, error.to_string())
    }
}

/// A record as the rest of the service sees it.
pub fn record_of(message: &impl Message) -> Record {
    Record {
        topic: message.topic().to_string(),
        position: Position::new(message.partition(), message.offset()),
        key: message.key().map(<[u8]>::to_vec),
        payload: message.payload().unwrap_or_default().to_vec(),
        timestamp_ms: message.timestamp().to_millis(),
        headers: header_pairs(message),
    }
}

/// One librdkafka log line as a tracing event of the matching level. A broker connection
/// failure (`FAIL`) is also kept as the reason the brokers are unreachable.
pub fn log_librdkafka(level: RDKafkaLogLevel, facility: &str, message: &str) {
    if facility == "FAIL" {
        note_log_line(message);
    }
    match level {
        RDKafkaLogLevel::Emerg
        | RDKafkaLogLevel::Alert
        | RDKafkaLogLevel::Critical
        | RDKafkaLogLevel::Error => tracing::error!(target: "librdkafka", facility, "{message}"),
        RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", facility, "{message}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
            tracing::info!(target: "librdkafka", facility, "{message}")
        }
        RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", facility, "{message}"),
    }
}

/// Settings shared by every client: brokers, the security settings (`kafka.security_protocol`,
/// `[kafka.tls]`, `[kafka.sasl]` and their secrets) and the operator's extra properties.
pub fn client_config(config: &BrokerSettings) -> ClientConfig {
    let kafka = &config.kafka;
    let mut client = ClientConfig::new();
    client.set("bootstrap.servers", &kafka.brokers);
    for (key, value) in security_properties(
        kafka.security_protocol,
        &kafka.tls,
        &kafka.sasl,
        &kafka.secrets,
    ) {
        match value {
            PropertyValue::Plain(value) => client.set(key, value),
            PropertyValue::Secret(secret) => client.set(key, secret.expose()),
        };
    }
    for (key, value) in kafka.client.iter() {
        client.set(key, value);
    }
    client
}

/// A consumer of a one-partition log (labels, changelog) with no group: assigned from `next`
/// (the beginning when 0).
pub fn log_reader(
    config: &BrokerSettings,
    topic: &str,
    role: &str,
    next: i64,
    fetch_wait_ms: u32,
) -> Result<KafkaLogReader, ClientError> {
    let kafka = |context| move |e: KafkaError| ClientError::Kafka(context, e.into());
    let consumer: KafkaLogReader = client_config(config)
        .set("group.id", format!("{}-{role}", config.kafka.group_id))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", fetch_wait_ms.to_string())
        .create_with_context(Logged)
        .map_err(kafka("creating a log consumer"))?;
    let start = if next > 0 {
        Offset::Offset(next)
    } else {
        Offset::Beginning
    };
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, start)
        .map_err(kafka("assigning a log topic"))?;
    consumer
        .assign(&assignment)
        .map_err(kafka("assigning a log topic"))?;
    Ok(consumer)
}

/// A consumer for metadata and watermark queries only (`role` names its group id).
pub fn metadata_client(
    config: &BrokerSettings,
    role: &str,
) -> Result<KafkaMetadataClient, ClientError> {
    client_config(config)
        .set("group.id", format!("{}-{role}", config.kafka.group_id))
        .set("enable.auto.commit", "false")
        .create_with_context(Logged)
        .map_err(|e| ClientError::Kafka("creating the watermark client", e.into()))
}

/// Idempotent producer: retries inside librdkafka can neither duplicate nor reorder a record.
pub fn producer(config: &BrokerSettings) -> Result<KafkaProducer, ClientError> {
    client_config(config)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("compression.type", "lz4")
        .create_with_context(Logged)
        .map_err(|e| ClientError::Kafka("creating the producer", e.into()))
}

/// Hand `outgoing` to the producer's queue.
pub fn enqueue(
    producer: &KafkaProducer,
    outgoing: &Outgoing,
) -> Result<DeliveryFuture, BrokerError> {
    producer
        .send_result(future_record(outgoing))
        .map_err(|(error, _)| error.into())
}

/// The broker's acknowledgement of a record handed over.
pub async fn delivered(future: DeliveryFuture) -> Result<(), BrokerError> {
    match future.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((error, _))) => Err(error.into()),
        Err(_) => Err(BrokerError::new(
            BrokerErrorKind::Other,
            "the producer went away before the record was acknowledged",
        )),
    }
}

pub fn flush(producer: &KafkaProducer, limit: Duration) -> Result<(), BrokerError> {
    producer.flush(limit).map_err(BrokerError::from)
}

/// The next record of a stream consumer (a log reader, a command's consumer).
pub async fn recv<C: ConsumerContext + 'static>(
    consumer: &StreamConsumer<C>,
) -> Result<Record, BrokerError> {
    match consumer.recv().await {
        Ok(message) => Ok(record_of(&message)),
        Err(error) => Err(error.into()),
    }
}

pub fn seek(
    consumer: &KafkaLogReader,
    topic: &str,
    offset: i64,
    limit: Duration,
) -> Result<(), BrokerError> {
    consumer
        .seek(topic, 0, Offset::Offset(offset), limit)
        .map_err(BrokerError::from)
}

/// (low, high) watermarks of one partition. Blocking.
pub fn watermarks(
    client: &KafkaMetadataClient,
    topic: &str,
    partition: i32,
    limit: Duration,
) -> Result<(i64, i64), BrokerError> {
    client
        .fetch_watermarks(topic, partition, limit)
        .map_err(BrokerError::from)
}

/// One metadata request: how many brokers are known. Blocking.
pub fn probe(client: &KafkaMetadataClient, limit: Duration) -> Result<usize, BrokerError> {
    let answer = client.fetch_metadata(None, limit);
    // Serve the client's queue: librdkafka hands over its errors (and their reasons) only
    // when the client is polled.
    while let Some(Err(_)) | Some(Ok(_)) = client.poll(Duration::ZERO) {}
    answer
        .map(|metadata| metadata.brokers().len())
        .map_err(BrokerError::from)
}

/// The partition count of `topic`, or of every topic. Blocking.
pub fn partition_counts(
    client: &KafkaMetadataClient,
    topic: Option<&str>,
    limit: Duration,
) -> Result<Vec<(String, usize)>, BrokerError> {
    let metadata = client.fetch_metadata(topic, limit)?;
    Ok(metadata
        .topics()
        .iter()
        .filter(|t| !t.partitions().is_empty())
        .map(|t| (t.name().to_string(), t.partitions().len()))
        .collect())
}

pub(super) fn future_record(outgoing: &Outgoing) -> FutureRecord<'_, [u8], [u8]> {
    let mut record = FutureRecord::to(&outgoing.topic).payload(outgoing.payload.as_slice());
    if let Some(key) = &outgoing.key {
        record = record.key(key.as_slice());
    }
    if !outgoing.headers.is_empty() {
        let mut headers = OwnedHeaders::new_with_capacity(outgoing.headers.len());
        for (name, value) in &outgoing.headers {
            headers = headers.insert(Header {
                key: name,
                value: Some(value.as_bytes()),
            });
        }
        record = record.headers(headers);
    }
    record
}

/// Create the service's topics when missing (labels and changelog with one partition: their
/// order is the order in which changes apply).
pub async fn ensure_topics(config: &BrokerSettings) -> Result<(), ClientError> {
    let admin: AdminClient<Logged> = client_config(config)
        .create_with_context(Logged)
        .map_err(|e| ClientError::Kafka("creating the admin client", e.into()))?;
    let replication = || TopicReplication::Fixed(config.kafka.replication_factor);
    let topics: Vec<NewTopic<'_>> = topic_layouts(config)
        .into_iter()
        .map(|topic| {
            let new = NewTopic::new(topic.name, topic.partitions, replication());
            topic
                .settings
                .iter()
                .fold(new, |new, (key, value)| new.set(key, value))
        })
        .collect();
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let results = admin
        .create_topics(topics.iter(), &options)
        .await
        .map_err(|e| ClientError::Kafka("creating topics", e.into()))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((
                topic,
                code @ (RDKafkaErrorCode::TopicAuthorizationFailed
                | RDKafkaErrorCode::ClusterAuthorizationFailed),
            )) => {
                return Err(ClientError::Topic(format!(
                    "no permission to create topic {topic} ({code}): create the topics yourself \
                     and set kafka.create_topics = false, or grant this principal CREATE"
                )))
            }
            Err((topic, code)) => {
                return Err(ClientError::Topic(format!(
                    "creating topic {topic}: {code}"
                )))
            }
        }
    }
    Ok(())
}
