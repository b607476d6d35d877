//! Kafka clients as the service uses them: settings, topic creation, producing with retries.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::util::Timeout;
use rdkafka::{Offset, TopicPartitionList};

use super::ServeError;
use crate::config::ServeConfig;

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
    /// are unreachable ([`broker_trouble`]).
    fn error(&self, error: KafkaError, reason: &str) {
        tracing::debug!(target: "librdkafka", %error, reason, "librdkafka error");
        note_broker_trouble(&error, reason);
    }
}

/// librdkafka's last word on why the brokers cannot be reached (refused, name not resolved,
/// authentication failed, …). Process-wide: every client of the service talks to the same
/// brokers, and librdkafka reports the reason only to the client that met it.
static BROKER_TROUBLE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

fn note_broker_trouble(error: &KafkaError, reason: &str) {
    let Some(code) = error.rdkafka_error_code() else {
        return;
    };
    let about_brokers = matches!(
        code,
        RDKafkaErrorCode::BrokerTransportFailure
            | RDKafkaErrorCode::AllBrokersDown
            | RDKafkaErrorCode::Resolve
            | RDKafkaErrorCode::Authentication
            | RDKafkaErrorCode::SaslAuthenticationFailed
            | RDKafkaErrorCode::SSL
    );
    if about_brokers {
        // "1/1 brokers are down" says less than the connection failure that caused it.
        note_trouble(reason, code != RDKafkaErrorCode::AllBrokersDown);
    }
}

/// Keep `reason` (without librdkafka's `[thrd:…]: ` prefix); a vaguer one only when there is
/// none yet.
fn note_trouble(reason: &str, specific: bool) {
    let reason = match reason.strip_prefix("[thrd:") {
        Some(rest) => rest.split_once("]: ").map_or(reason, |(_, r)| r),
        None => reason,
    };
    let mut trouble = BROKER_TROUBLE.lock().unwrap_or_else(|p| p.into_inner());
    if specific || trouble.is_none() {
        *trouble = Some(reason.to_string());
    }
}

/// A record's headers as (key, value) pairs, values read as UTF-8 (lossily; a header without
/// a value reads as empty).
pub fn header_pairs(message: &impl Message) -> Vec<(String, String)> {
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

/// Why the brokers were last unreachable, if librdkafka said; cleared by [`broker_answered`].
pub fn broker_trouble() -> Option<String> {
    BROKER_TROUBLE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// The brokers answered: the last trouble is history.
pub fn broker_answered() {
    *BROKER_TROUBLE.lock().unwrap_or_else(|p| p.into_inner()) = None;
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
            note_trouble(message, true);
        }
        tracing::debug!(target: "librdkafka", facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        note_broker_trouble(&error, reason);
    }
}

impl ConsumerContext for Noted {}

/// The producer every output goes through.
pub type Producer = FutureProducer<Logged>;
/// A consumer of a one-partition log (labels, changelog).
pub type LogReader = StreamConsumer<Logged>;
/// A consumer used only for metadata and watermark queries.
pub type MetadataClient = BaseConsumer<Logged>;

/// One librdkafka log line as a tracing event of the matching level. A broker connection
/// failure (`FAIL`) is also kept as the reason the brokers are unreachable.
pub fn log_librdkafka(level: RDKafkaLogLevel, facility: &str, message: &str) {
    if facility == "FAIL" {
        note_trouble(message, true);
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

/// Settings shared by every client: brokers plus the operator's extra properties.
pub fn client_config(config: &ServeConfig) -> ClientConfig {
    let mut client = ClientConfig::new();
    client.set("bootstrap.servers", &config.kafka.brokers);
    for (key, value) in &config.kafka.client {
        client.set(key, value);
    }
    client
}

/// A consumer of a one-partition log (labels, changelog) that every instance reads in full, with
/// no group: assigned from `next` (the beginning when 0).
pub fn log_reader(
    config: &ServeConfig,
    topic: &str,
    role: &str,
    next: i64,
    fetch_wait_ms: u32,
) -> Result<LogReader, ServeError> {
    let consumer: LogReader = client_config(config)
        .set("group.id", format!("{}-{role}", config.kafka.group_id))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", fetch_wait_ms.to_string())
        .create_with_context(Logged)
        .map_err(|e| ServeError::Kafka("creating a log consumer", e))?;
    let start = if next > 0 {
        Offset::Offset(next)
    } else {
        Offset::Beginning
    };
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, start)
        .map_err(|e| ServeError::Kafka("assigning a log topic", e))?;
    consumer
        .assign(&assignment)
        .map_err(|e| ServeError::Kafka("assigning a log topic", e))?;
    Ok(consumer)
}

/// Idempotent producer: retries inside librdkafka can neither duplicate nor reorder a record.
pub fn producer(config: &ServeConfig) -> Result<Producer, ServeError> {
    client_config(config)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("compression.type", "lz4")
        .create_with_context(Logged)
        .map_err(|e| ServeError::Kafka("creating the producer", e))
}

/// Create the service's topics when missing (labels and changelog with one partition: their
/// order is the order in which changes apply).
pub async fn ensure_topics(config: &ServeConfig) -> Result<(), ServeError> {
    let admin: AdminClient<Logged> = client_config(config)
        .create_with_context(Logged)
        .map_err(|e| ServeError::Kafka("creating the admin client", e))?;
    let t = &config.topics;
    let replication = || TopicReplication::Fixed(config.kafka.replication_factor);
    let partitions = config.kafka.partitions;
    let topics = [
        // Kept for ever: `gorag proposals accept` reads it for the label ids that exist.
        NewTopic::new(&t.labels, 1, replication()).set("retention.ms", "-1"),
        NewTopic::new(&t.texts, partitions, replication()),
        NewTopic::new(&t.predictions, partitions, replication()),
        NewTopic::new(&t.hallucinations, partitions, replication()),
        NewTopic::new(&t.dead_letter, partitions, replication()),
        // Kept for ever: a replica starting from nothing replays it.
        NewTopic::new(&t.changelog, 1, replication()).set("retention.ms", "-1"),
        // One current event per key, kept for ever; segments roll hourly so that compaction,
        // which never touches the active segment, keeps what each pass reads back small.
        NewTopic::new(&t.proposals, partitions, replication())
            .set("cleanup.policy", "compact")
            .set("segment.ms", "3600000"),
    ];
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let results = admin
        .create_topics(topics.iter(), &options)
        .await
        .map_err(|e| ServeError::Kafka("creating topics", e))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((
                topic,
                code @ (RDKafkaErrorCode::TopicAuthorizationFailed
                | RDKafkaErrorCode::ClusterAuthorizationFailed),
            )) => {
                return Err(ServeError::Topic(format!(
                    "no permission to create topic {topic} ({code}): create the topics yourself \
                     and set kafka.create_topics = false, or grant this principal CREATE"
                )))
            }
            Err((topic, code)) => {
                return Err(ServeError::Topic(format!("creating topic {topic}: {code}")))
            }
        }
    }
    Ok(())
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
    fn record(&self) -> FutureRecord<'_, [u8], [u8]> {
        let mut record = FutureRecord::to(&self.topic).payload(self.payload.as_slice());
        if let Some(key) = &self.key {
            record = record.key(key.as_slice());
        }
        if !self.headers.is_empty() {
            let mut headers = OwnedHeaders::new_with_capacity(self.headers.len());
            for (name, value) in &self.headers {
                headers = headers.insert(Header {
                    key: name,
                    value: Some(value.as_bytes()),
                });
            }
            record = record.headers(headers);
        }
        record
    }
}

/// Hands records to the producer in the order they were given, from a task of its own: the
/// idempotent producer keeps that order on the broker, and the caller never waits (not even
/// while the producer's local queue is full, when the task sleeps and tries again).
#[derive(Clone)]
pub struct OrderedSender {
    queue: tokio::sync::mpsc::UnboundedSender<(Outgoing, Enqueued)>,
}

/// The answer of [`OrderedSender::send`]: the delivery to wait for, or why there is none.
type Enqueued = tokio::sync::oneshot::Sender<Result<DeliveryFuture, KafkaError>>;

/// A record handed to an [`OrderedSender`]; [`Ordered::confirm`] waits for its delivery.
pub struct Ordered {
    outgoing: Outgoing,
    enqueued: tokio::sync::oneshot::Receiver<Result<DeliveryFuture, KafkaError>>,
}

impl OrderedSender {
    pub fn spawn(producer: Producer) -> Self {
        let (queue, mut records) = tokio::sync::mpsc::unbounded_channel::<(Outgoing, Enqueued)>();
        tokio::spawn(async move {
            while let Some((outgoing, answer)) = records.recv().await {
                let enqueued = loop {
                    match producer.send_result(outgoing.record()) {
                        Ok(future) => break Ok(future),
                        Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                        Err((error, _)) => break Err(error),
                    }
                };
                // The text may have been dropped meanwhile (revoked, shutdown): nobody waits.
                let _ = answer.send(enqueued);
            }
        });
        Self { queue }
    }

    /// Queue `outgoing` behind every record given before it.
    pub fn send(&self, outgoing: Outgoing) -> Ordered {
        let (answer, enqueued) = tokio::sync::oneshot::channel();
        // The task ends only when every sender is gone.
        let _ = self.queue.send((outgoing.clone(), answer));
        Ordered { outgoing, enqueued }
    }
}

impl Ordered {
    /// Wait for the record's delivery; if it failed, send it again with [`deliver`] (order is
    /// no longer guaranteed then: a retry after a failure, as librdkafka's own).
    pub async fn confirm(self, producer: &Producer) -> Result<(), KafkaError> {
        self.confirm_after(None, producer).await
    }

    /// [`Ordered::confirm`], a retry waiting until `previous` (the record handed over just
    /// before, confirmed or given up) is settled: records that failed together (a broker away
    /// longer than librdkafka's delivery timeout) are sent again in their order, not racing.
    pub async fn confirm_after(
        self,
        previous: Option<tokio::sync::oneshot::Receiver<()>>,
        producer: &Producer,
    ) -> Result<(), KafkaError> {
        if let Ok(Ok(future)) = self.enqueued.await {
            if let Ok(Ok(_)) = future.await {
                return Ok(());
            }
        }
        if let Some(previous) = previous {
            // Its sender is dropped when settled either way.
            let _ = previous.await;
        }
        tracing::warn!(topic = %self.outgoing.topic, "ordered send failed; sending again");
        deliver(producer, &self.outgoing).await
    }
}

/// Send until the broker acknowledges. librdkafka already retries inside its delivery timeout;
/// past that we back off and send again (a duplicate at worst, never a loss); the caller bounds
/// the whole thing with its shutdown deadline. Only a record the broker can never take (too
/// large) comes back as an error.
pub async fn deliver(producer: &Producer, outgoing: &Outgoing) -> Result<(), KafkaError> {
    let mut backoff = Duration::from_millis(100);
    loop {
        match producer.send(outgoing.record(), Timeout::Never).await {
            Ok(_) => return Ok(()),
            Err((error, _)) => {
                if matches!(
                    error,
                    KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge)
                ) {
                    return Err(error);
                }
                tracing::warn!(topic = %outgoing.topic, %error, "delivery failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }
}
