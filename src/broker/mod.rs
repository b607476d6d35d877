//! The seam between gorag and a broker: the only place that knows rdkafka. It depends on
//! nothing of the service: its settings (`settings.rs`, `security.rs`), its errors are its own;
//! a record's [`Position`] is the floor's (`crate::position`).
//!
//! The rest of the service sees plain [`Record`]s (what was read), [`Outgoing`] records (what
//! to write), [`Position`]s and [`BrokerError`]s, and reaches a broker through the handles
//! made here from a [`Broker`] (a [`Transport`] and the service's configuration): a
//! [`Producer`], [`LogReader`]s for the one-partition logs, a [`MetadataClient`] for
//! watermarks and metadata, the [`TextsConsumer`] of the texts group, and
//! [`Broker::read_to_end`]. The transport is Kafka (`client.rs`, `texts.rs`, `read_back.rs`:
//! every client built from the service's configuration, the operator commands' in
//! `commands.rs` too) or, for tests of the loop in process, [`MemoryBroker`] (`memory.rs`).
//! Each handle is an enum over the two; what a handle does is the same for both.

mod client;
pub mod commands;
mod error;
#[cfg(any(test, feature = "memory-broker"))]
pub mod memory;
mod ordered;
pub mod read_back;
pub mod security;
pub mod settings;
pub mod texts;
mod trouble;

use std::sync::Arc;
use std::time::Duration;

use crate::position::Position;
pub use error::{BrokerError, BrokerErrorKind, ClientError};
#[cfg(any(test, feature = "memory-broker"))]
pub use memory::{MemoryBroker, KAFKA_DEFAULT_MAX_MESSAGE_BYTES};
pub use ordered::{deliver, Ordered, OrderedSender};
pub use settings::BrokerSettings;
pub use texts::{TextsConsumer, TextsEvent};
pub use trouble::{broker_answered, broker_trouble, Trouble, TroubleKind};

/// A record as read from a topic, converted at the edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub topic: String,
    pub position: Position,
    pub key: Option<Vec<u8>>,
    /// The value; empty for a record without one.
    pub payload: Vec<u8>,
    /// When the broker (or producer) stamped it, in ms since the epoch, if it says.
    pub timestamp_ms: Option<i64>,
    /// Headers as (key, value), values read as UTF-8 (lossily).
    pub headers: Vec<(String, String)>,
}

impl Record {
    pub fn partition(&self) -> i32 {
        self.position.partition
    }

    pub fn offset(&self) -> i64 {
        self.position.offset
    }
}

/// One output record, owned so it can be sent from a task.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub topic: String,
    pub key: Option<Vec<u8>>,
    pub payload: Vec<u8>,
    pub headers: Vec<(String, String)>,
}

impl Outgoing {
    /// The bytes the record carries: its key, its value, and each header's name and value
    /// (what a broker's record limit counts, less the record's framing).
    pub fn size(&self) -> usize {
        let headers: usize = self
            .headers
            .iter()
            .map(|(name, value)| name.len() + value.len())
            .sum();
        self.key.as_ref().map_or(0, Vec::len) + self.payload.len() + headers
    }

    /// The bytes Kafka counts against `message.max.bytes` for this record alone in a batch:
    /// [`Outgoing::size`] and the framing — the batch's header (61 bytes in Kafka's v2
    /// format), the record's length fields (36 at most) and each header's (10 at most).
    pub fn batch_bytes(&self) -> usize {
        61 + 36 + 10 * self.headers.len() + self.size()
    }
}

/// The largest record the producer sends: its `message.max.bytes` (`kafka.client`), else
/// librdkafka's default, 1,000,000 bytes (below Kafka's broker default, 1,048,588). A record
/// over it is refused as [`BrokerErrorKind::TooLarge`] before it leaves the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLimit(usize);

impl RecordLimit {
    /// librdkafka's default `message.max.bytes`.
    pub const DEFAULT: Self = Self(1_000_000);

    pub fn of(config: &BrokerSettings) -> Self {
        config
            .kafka
            .client
            .get("message.max.bytes")
            .and_then(|value| value.trim().parse::<usize>().ok())
            .map_or(Self::DEFAULT, Self)
    }

    pub fn new(bytes: usize) -> Self {
        Self(bytes)
    }

    pub fn bytes(self) -> usize {
        self.0
    }
}

/// One of the service's topics as it is created.
pub struct TopicLayout<'a> {
    pub name: &'a str,
    pub partitions: i32,
    /// Topic settings (Kafka's names).
    pub settings: &'static [(&'static str, &'static str)],
}

/// The service's topics as `gorag serve` (and `gorag topics create`) makes them: the labels
/// and changelog topics with one partition (their order is the order changes apply in).
pub fn topic_layouts(config: &BrokerSettings) -> Vec<TopicLayout<'_>> {
    let t = &config.topics;
    let partitions = config.kafka.partitions;
    let layout = |name, partitions, settings| TopicLayout {
        name,
        partitions,
        settings,
    };
    vec![
        // Kept for ever: `gorag proposals accept` reads it for the label ids that exist.
        layout(&t.labels, 1, &[("retention.ms", "-1")]),
        layout(&t.texts, partitions, &[]),
        layout(&t.predictions, partitions, &[]),
        layout(&t.hallucinations, partitions, &[]),
        layout(&t.dead_letter, partitions, &[]),
        // Kept for ever: a replica starting from nothing replays it.
        layout(&t.changelog, 1, &[("retention.ms", "-1")]),
        // One current event per key, kept for ever; segments roll hourly so that compaction,
        // which never touches the active segment, keeps what each pass reads back small.
        layout(
            &t.proposals,
            partitions,
            &[("cleanup.policy", "compact"), ("segment.ms", "3600000")],
        ),
    ]
}

/// Which broker the service's clients connect to.
#[derive(Clone)]
pub enum Transport {
    /// Kafka brokers, reached with `kafka.brokers` and `kafka.client`.
    Kafka,
    /// Topics in this process (tests of the loop).
    #[cfg(any(test, feature = "memory-broker"))]
    Memory(MemoryBroker),
}

/// The service's way to its broker: the transport and the configuration every client is made
/// from (one source for both).
#[derive(Clone)]
pub struct Broker {
    transport: Transport,
    config: Arc<BrokerSettings>,
}

impl Broker {
    pub fn new(transport: Transport, config: &BrokerSettings) -> Self {
        Self {
            transport,
            config: Arc::new(config.clone()),
        }
    }

    /// The Kafka brokers `config` names.
    pub fn kafka(config: &BrokerSettings) -> Self {
        Self::new(Transport::Kafka, config)
    }

    /// The producer every output goes through (idempotent on Kafka: retries neither
    /// duplicate nor reorder a record).
    pub fn producer(&self) -> Result<Producer, ClientError> {
        match &self.transport {
            Transport::Kafka => client::producer(&self.config).map(Producer::Kafka),
            #[cfg(any(test, feature = "memory-broker"))]
            Transport::Memory(broker) => Ok(Producer::Memory(
                broker.clone(),
                RecordLimit::of(&self.config),
            )),
        }
    }

    /// A reader of a one-partition log (labels, changelog) that every instance reads in full,
    /// with no group: from offset `next` (the beginning when 0). `role` names it.
    pub fn log_reader(
        &self,
        topic: &str,
        role: &str,
        next: i64,
        fetch_wait_ms: u32,
    ) -> Result<LogReader, ClientError> {
        match &self.transport {
            Transport::Kafka => client::log_reader(&self.config, topic, role, next, fetch_wait_ms)
                .map(|consumer| LogReader::Kafka {
                    consumer,
                    topic: topic.to_string(),
                }),
            #[cfg(any(test, feature = "memory-broker"))]
            Transport::Memory(broker) => Ok(LogReader::Memory(broker.log_reader(topic, next))),
        }
    }

    /// A client for watermark and metadata queries; `role` names it.
    pub fn metadata_client(&self, role: &str) -> Result<MetadataClient, ClientError> {
        match &self.transport {
            Transport::Kafka => client::metadata_client(&self.config, role)
                .map(|client| MetadataClient::Kafka(Arc::new(client))),
            #[cfg(any(test, feature = "memory-broker"))]
            Transport::Memory(broker) => Ok(MetadataClient::Memory(broker.clone())),
        }
    }

    /// Create the service's topics when missing ([`topic_layouts`]).
    pub async fn ensure_topics(&self) -> Result<(), ClientError> {
        match &self.transport {
            Transport::Kafka => client::ensure_topics(&self.config).await,
            #[cfg(any(test, feature = "memory-broker"))]
            Transport::Memory(broker) => {
                broker.ensure_topics(&self.config);
                Ok(())
            }
        }
    }

    /// Join the texts group and start reading; on Kafka, `producer` is flushed before
    /// partitions are given up.
    pub fn texts_consumer(&self, producer: Producer) -> Result<TextsConsumer, ClientError> {
        let config = &self.config;
        match (&self.transport, producer) {
            (Transport::Kafka, Producer::Kafka(producer)) => texts::start_kafka(config, producer),
            #[cfg(any(test, feature = "memory-broker"))]
            (Transport::Memory(broker), _) => {
                Ok(broker.join(&config.kafka.group_id, &config.topics.texts))
            }
            #[cfg(any(test, feature = "memory-broker"))]
            (Transport::Kafka, Producer::Memory(..)) => Err(ClientError::Topic(
                "a Kafka texts consumer needs a Kafka producer".to_string(),
            )),
        }
    }

    /// Every record's value on `topic`, from its beginning to the end it had when asked;
    /// `group` labels the reader (nothing is committed).
    pub async fn read_to_end(
        &self,
        group: &str,
        topic: &str,
        limit: Duration,
    ) -> Result<Vec<Vec<u8>>, read_back::ReadBackError> {
        match &self.transport {
            Transport::Kafka => {
                let client = client::client_config(&self.config);
                read_back::read_topic(client, group, topic, limit).await
            }
            #[cfg(any(test, feature = "memory-broker"))]
            Transport::Memory(broker) => {
                broker
                    .read_to_end(topic)
                    .ok_or_else(|| read_back::ReadBackError::NoTopic {
                        topic: topic.to_string(),
                    })
            }
        }
    }
}

/// The producer every output goes through.
#[derive(Clone)]
pub enum Producer {
    Kafka(client::KafkaProducer),
    /// The in-process broker, and the producer's own limit (as librdkafka's
    /// `message.max.bytes`: a record over it is refused before it is sent).
    #[cfg(any(test, feature = "memory-broker"))]
    Memory(MemoryBroker, RecordLimit),
}

/// A record handed to the producer: wait for it with [`Delivery::acknowledged`].
pub enum Delivery {
    Kafka(client::KafkaDelivery),
    Settled(Result<(), BrokerError>),
}

impl Delivery {
    /// The broker's answer: acknowledged, or why not.
    pub async fn acknowledged(self) -> Result<(), BrokerError> {
        match self {
            Self::Kafka(future) => client::delivered(future).await,
            Self::Settled(result) => result,
        }
    }
}

impl Producer {
    /// Hand `outgoing` to the producer without waiting (a full local queue is
    /// [`BrokerErrorKind::QueueFull`]: try again shortly).
    pub fn enqueue(&self, outgoing: &Outgoing) -> Result<Delivery, BrokerError> {
        match self {
            Self::Kafka(producer) => client::enqueue(producer, outgoing).map(Delivery::Kafka),
            #[cfg(any(test, feature = "memory-broker"))]
            Self::Memory(_, limit) if outgoing.size() > limit.bytes() => Err(BrokerError::new(
                BrokerErrorKind::TooLarge,
                format!(
                    "Message size too large: {} bytes over the producer's message.max.bytes ({})",
                    outgoing.size(),
                    limit.bytes()
                ),
            )),
            #[cfg(any(test, feature = "memory-broker"))]
            Self::Memory(broker, _) => Ok(Delivery::Settled(broker.append(outgoing).map(|_| ()))),
        }
    }

    /// Wait until everything handed over is acknowledged, for at most `limit`.
    pub fn flush(&self, limit: Duration) -> Result<(), BrokerError> {
        match self {
            Self::Kafka(producer) => client::flush(producer, limit),
            #[cfg(any(test, feature = "memory-broker"))]
            Self::Memory(..) => Ok(()),
        }
    }
}

/// A reader of a one-partition log.
pub enum LogReader {
    Kafka {
        consumer: client::KafkaLogReader,
        topic: String,
    },
    #[cfg(any(test, feature = "memory-broker"))]
    Memory(memory::MemoryReader),
}

impl LogReader {
    /// The next record.
    pub async fn recv(&self) -> Result<Record, BrokerError> {
        match self {
            Self::Kafka { consumer, .. } => client::recv(consumer).await,
            #[cfg(any(test, feature = "memory-broker"))]
            Self::Memory(reader) => Ok(reader.recv().await),
        }
    }

    /// Read from `offset` next, waiting at most `limit` for the broker.
    pub fn seek(&self, offset: i64, limit: Duration) -> Result<(), BrokerError> {
        match self {
            Self::Kafka { consumer, topic } => client::seek(consumer, topic, offset, limit),
            #[cfg(any(test, feature = "memory-broker"))]
            Self::Memory(reader) => {
                reader.seek(offset);
                Ok(())
            }
        }
    }
}

/// A client for watermark and metadata queries (they block on Kafka: run on tokio's blocking
/// pool, so the loop's thread never waits on the broker for them).
#[derive(Clone)]
pub enum MetadataClient {
    Kafka(Arc<client::KafkaMetadataClient>),
    #[cfg(any(test, feature = "memory-broker"))]
    Memory(MemoryBroker),
}

impl MetadataClient {
    /// The (low, high) watermarks of `partition` of `topic`.
    pub async fn watermarks(
        &self,
        topic: &str,
        partition: i32,
        limit: Duration,
    ) -> Result<(i64, i64), ClientError> {
        match self {
            Self::Kafka(client) => {
                let (client, topic) = (client.clone(), topic.to_string());
                tokio::task::spawn_blocking(move || {
                    client::watermarks(&client, &topic, partition, limit)
                })
                .await?
                .map_err(|e| ClientError::Kafka("reading watermarks", e))
            }
            #[cfg(any(test, feature = "memory-broker"))]
            Self::Memory(broker) => broker
                .watermarks(topic, partition)
                .map_err(|e| ClientError::Kafka("reading watermarks", e)),
        }
    }

    /// Ask the brokers for their metadata: how many brokers answered.
    pub async fn probe(&self, limit: Duration) -> Result<usize, ClientError> {
        match self {
            Self::Kafka(client) => {
                let client = client.clone();
                tokio::task::spawn_blocking(move || client::probe(&client, limit))
                    .await?
                    .map_err(|e| ClientError::Kafka("reading metadata", e))
            }
            #[cfg(any(test, feature = "memory-broker"))]
            Self::Memory(_) => Ok(1),
        }
    }

    /// The partition count of `topic`, or of every topic when `topic` is None (a topic that
    /// does not exist is not listed).
    pub async fn partitions(
        &self,
        topic: Option<&str>,
        limit: Duration,
    ) -> Result<Vec<(String, usize)>, ClientError> {
        match self {
            Self::Kafka(client) => {
                let (client, topic) = (client.clone(), topic.map(str::to_string));
                tokio::task::spawn_blocking(move || {
                    client::partition_counts(&client, topic.as_deref(), limit)
                })
                .await?
                .map_err(|e| ClientError::Kafka("reading topic metadata", e))
            }
            #[cfg(any(test, feature = "memory-broker"))]
            Self::Memory(broker) => Ok(broker.partition_counts(topic)),
        }
    }
}
