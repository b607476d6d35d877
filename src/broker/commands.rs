//! The Kafka clients of the operator commands (`publish`, `tail`, `labels import`, `correct`,
//! `proposals`, `report`, `topics create`), built from the service's configuration
//! (`kafka.brokers`, and `kafka.client` for SASL and TLS) as the service builds its own. A
//! broker that does not answer is named within seconds.

use std::time::Duration;

use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::producer::{FutureProducer, Producer as _};
use rdkafka::util::Timeout;
use rdkafka::{Offset, TopicPartitionList};
use thiserror::Error;

use super::client::{self, Noted};
use super::read_back::{self, ReadBackError};
use super::BrokerSettings;
use super::ClientError;
use super::{BrokerError, Outgoing, Record};

/// How long a command waits for a broker to answer before saying none does.
const BROKER_WAIT: Duration = Duration::from_secs(10);
/// How long one metadata request of that wait may take.
const PROBE: Duration = Duration::from_secs(1);
/// How long one record may take to be acknowledged.
const SEND_LIMIT: Duration = Duration::from_secs(30);

#[derive(Debug, Error)]
pub enum CommandError {
    #[error(
        "no Kafka broker answered at {brokers} within {waited_secs} s ({reason}): start one \
         (scripts/kafka.sh start runs the local broker), give its address with --brokers or \
         --set kafka.brokers=HOST:PORT, and its security settings (kafka.security_protocol, \
         [kafka.tls], [kafka.sasl]: docs/guide/security.md)"
    )]
    NoBroker {
        brokers: String,
        waited_secs: u64,
        reason: String,
    },
    #[error("the Kafka broker at {brokers} refused this client ({reason}): {fix}")]
    Refused {
        brokers: String,
        reason: String,
        fix: &'static str,
    },
    #[error("{context}: {source}")]
    Broker {
        context: String,
        #[source]
        source: BrokerError,
    },
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("reading {topic} at {brokers}: {source}")]
    ReadBack {
        topic: String,
        brokers: String,
        #[source]
        source: ReadBackError,
    },
}

fn broker(context: impl Into<String>) -> impl FnOnce(rdkafka::error::KafkaError) -> CommandError {
    let context = context.into();
    move |error| CommandError::Broker {
        context,
        source: error.into(),
    }
}

/// An idempotent producer that has reached a broker.
pub struct CommandProducer {
    producer: FutureProducer<Noted>,
}

impl CommandProducer {
    pub fn new(config: &BrokerSettings) -> Result<Self, CommandError> {
        let producer: FutureProducer<Noted> = client::client_config(config)
            .set("enable.idempotence", "true")
            .create_with_context(Noted)
            .map_err(broker("creating the producer"))?;
        ensure_broker(producer.client(), config)?;
        Ok(Self { producer })
    }

    /// Send one record and wait for the broker's acknowledgement.
    pub async fn send(
        &self,
        topic: &str,
        key: Option<&[u8]>,
        payload: &[u8],
    ) -> Result<(), CommandError> {
        let outgoing = Outgoing {
            topic: topic.to_string(),
            key: key.map(<[u8]>::to_vec),
            payload: payload.to_vec(),
            headers: Vec::new(),
        };
        self.producer
            .send(client::future_record(&outgoing), Timeout::After(SEND_LIMIT))
            .await
            .map(|_| ())
            .map_err(|(error, _)| broker(format!("publishing to {topic}"))(error))
    }
}

/// A consumer (nothing committed) that has reached a broker: topic metadata, and reading
/// every partition of a topic.
pub struct CommandConsumer {
    consumer: StreamConsumer<Noted>,
    brokers: String,
}

impl CommandConsumer {
    /// `group` labels the consumer.
    pub fn new(config: &BrokerSettings, group: &str) -> Result<Self, CommandError> {
        let consumer: StreamConsumer<Noted> = client::client_config(config)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create_with_context(Noted)
            .map_err(broker("creating the consumer"))?;
        // A consumer serves librdkafka's log lines (where the reason a broker refused us is)
        // only when polled: ask through a producer, whose own thread serves them.
        drop(CommandProducer::new(config)?);
        Ok(Self {
            consumer,
            brokers: config.kafka.brokers.clone(),
        })
    }

    /// The partition ids of `topic` (none when it does not exist).
    pub fn partitions(&self, topic: &str) -> Result<Vec<i32>, CommandError> {
        tokio::task::block_in_place(|| read_back::topic_partitions(&self.consumer, topic)).map_err(
            |source| CommandError::Broker {
                context: format!("reading the metadata of {topic} at {}", self.brokers),
                source,
            },
        )
    }

    /// Read every partition of `topic` from its start (`from_beginning`) or its end; the
    /// partitions read.
    pub fn read_every_partition(
        &self,
        topic: &str,
        from_beginning: bool,
    ) -> Result<Vec<i32>, CommandError> {
        let partitions = self.partitions(topic)?;
        let start = if from_beginning {
            Offset::Beginning
        } else {
            Offset::End
        };
        let mut assignment = TopicPartitionList::new();
        for &partition in &partitions {
            assignment
                .add_partition_offset(topic, partition, start)
                .map_err(broker("assigning partitions"))?;
        }
        self.consumer
            .assign(&assignment)
            .map_err(broker("assigning partitions"))?;
        Ok(partitions)
    }

    /// Read every partition of each of `topics` from its start; the end each partition had
    /// when asked (its high watermark), for [`Self::caught_up`]. A topic that does not exist
    /// yet is left out (the desk is started again once the service made it).
    pub fn read_from_start(&self, topics: &[&str]) -> Result<Vec<PartitionEnd>, CommandError> {
        let mut assignment = TopicPartitionList::new();
        let mut ends = Vec::new();
        for topic in topics {
            for partition in self.partitions(topic)? {
                assignment
                    .add_partition_offset(topic, partition, Offset::Beginning)
                    .map_err(broker("assigning partitions"))?;
                let (low, high) = tokio::task::block_in_place(|| {
                    self.consumer
                        .fetch_watermarks(topic, partition, BROKER_WAIT)
                })
                .map_err(broker(format!("reading the end of {topic}")))?;
                if high > low {
                    ends.push(PartitionEnd {
                        topic: topic.to_string(),
                        partition,
                        end: high,
                    });
                }
            }
        }
        self.consumer
            .assign(&assignment)
            .map_err(broker("assigning partitions"))?;
        Ok(ends)
    }

    /// Whether this consumer has read up to every one of `ends` (compacted gaps and control
    /// records at a partition's end included: its position, not its last record, says).
    pub fn caught_up(&self, ends: &[PartitionEnd]) -> Result<bool, CommandError> {
        if ends.is_empty() {
            return Ok(true);
        }
        let positions = self
            .consumer
            .position()
            .map_err(broker("reading the consumer's position"))?;
        Ok(ends.iter().all(|end| {
            positions
                .find_partition(&end.topic, end.partition)
                .and_then(|p| match p.offset() {
                    Offset::Offset(at) => Some(at >= end.end),
                    _ => None,
                })
                .unwrap_or(false)
        }))
    }

    /// The next record of what is read.
    pub async fn recv(&self) -> Result<Record, CommandError> {
        client::recv(&self.consumer)
            .await
            .map_err(|source| CommandError::Broker {
                context: format!("reading at {}", self.brokers),
                source,
            })
    }
}

/// Where a partition ended when a reader started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionEnd {
    pub topic: String,
    pub partition: i32,
    /// Its high watermark: the offset after its last record.
    pub end: i64,
}

/// Fail within [`BROKER_WAIT`] when no broker answers, naming the address and librdkafka's
/// reason (refused, not resolved, SASL authentication failed, …): the client would otherwise
/// wait minutes in silence.
fn ensure_broker<C: rdkafka::ClientContext>(
    client: &rdkafka::client::Client<C>,
    config: &BrokerSettings,
) -> Result<(), CommandError> {
    let brokers = || config.kafka.brokers.clone();
    let started = std::time::Instant::now();
    loop {
        // Short requests, so that a refusal that waiting will not mend (a login, a
        // certificate) is said at once rather than after the whole wait.
        let answered = tokio::task::block_in_place(|| client.fetch_metadata(None, PROBE));
        let error = match answered {
            Ok(_) => {
                super::broker_answered();
                return Ok(());
            }
            Err(error) => error,
        };
        let trouble = super::broker_trouble();
        if let Some(trouble) = trouble.as_ref().filter(|t| t.kind.is_settled()) {
            return Err(CommandError::Refused {
                brokers: brokers(),
                reason: trouble.reason.clone(),
                fix: trouble.kind.fix(),
            });
        }
        if started.elapsed() + PROBE > BROKER_WAIT {
            return Err(CommandError::NoBroker {
                brokers: brokers(),
                waited_secs: started.elapsed().as_secs(),
                reason: trouble.map_or_else(|| error.to_string(), |t| t.reason),
            });
        }
    }
}

/// Create the service's topics when missing, with the layout `gorag serve` needs.
pub async fn ensure_topics(config: &BrokerSettings) -> Result<(), CommandError> {
    Ok(client::ensure_topics(config).await?)
}

/// Every record's value on `topic`, from the beginning to the end it had when asked, where a
/// topic that does not exist has none (nothing published yet); a topic that cannot be read is
/// still an error. `group` labels the reader.
pub async fn read_topic_if_any(
    config: &BrokerSettings,
    group: &str,
    topic: &str,
    limit: Duration,
) -> Result<Vec<Vec<u8>>, CommandError> {
    let read = read_back::read_topic(client::client_config(config), group, topic, limit).await;
    match read {
        Err(ReadBackError::NoTopic { .. }) => Ok(Vec::new()),
        Ok(values) => Ok(values),
        Err(source) => Err(CommandError::ReadBack {
            topic: topic.to_string(),
            brokers: config.kafka.brokers.clone(),
            source,
        }),
    }
}
