//! Keeping a replica up to date: apply the changelog to its end, forward labels-topic records
//! nobody forwarded yet, and tell a broker that is away for a moment from a log that was lost.
//!
//! Watermark queries are blocking librdkafka calls: they run on tokio's blocking pool, so the
//! loop's thread never waits on the broker.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::consumer::Consumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::Offset;

use super::{ahead, engine_rejection, Replica};
use crate::classify::Classifier;
use crate::engine::update::Update;
use crate::engine::NewLabel;
use crate::events::decode::{self, Reason, Rejection};
use crate::events::LabelEvent;
use crate::stream::changelog::{Change, ChangeRecord, LabelOutcome, RejectStage, CHANGE_VERSION};
use crate::stream::kafka::{self, LogReader, MetadataClient, Outgoing, Producer};
use crate::stream::stats::Stats;
use crate::stream::stop::Stop;
use crate::stream::ServeError;
use crate::telemetry::admin::Health;

/// How long the labels or changelog topic may stay silent while we know records are there.
const STALL_SECS: u64 = 30;
/// How long describing a round's labels may hold the loop.
const DESCRIBE_BUDGET: Duration = Duration::from_secs(120);
/// How much of a label event too large for the changelog its dead letter keeps.
const TOO_LARGE_EXCERPT: usize = 64 * 1024;

/// How long the changelog topic may be missing, after this instance applied records from it,
/// before that counts as a lost log rather than a broker still loading its metadata.
const LOG_MISSING_GRACE: Duration = Duration::from_secs(30);

/// Trouble reaching the logs is logged at most this often.
const WARN_EVERY: Duration = Duration::from_secs(10);

pub struct LogSync {
    labels: LogReader,
    changelog: LogReader,
    /// A client of its own for watermark queries: on a log consumer's connection they wait
    /// behind its fetch long-poll (≈ 500 ms each against nisshi).
    watermarks: Arc<MetadataClient>,
    producer: Producer,
    stop: Stop,
    health: Arc<Health>,
    /// Label events get LLM-written descriptions before they are forwarded.
    classifier: Classifier,
    describe_labels: bool,
    /// Next labels-topic offset this instance has not forwarded to the changelog.
    labels_forward_next: i64,
    /// Wall-clock ms at which the labels topic was last read to its end.
    labels_synced_at: i64,
    /// Since when the changelog topic has been reported missing (see [`LogSync::tolerate`]).
    log_missing_since: Option<Instant>,
    /// When a sync failure was last logged (they repeat every tick while the broker is away).
    warned_at: Option<Instant>,
}

/// The clients and settings a [`LogSync`] works with.
pub struct LogClients {
    pub labels: LogReader,
    pub changelog: LogReader,
    pub watermarks: Arc<MetadataClient>,
    pub producer: Producer,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Whether `error` says the topic (or its partition) does not exist.
fn topic_missing(error: &ServeError) -> bool {
    matches!(
        error,
        ServeError::Kafka(
            _,
            KafkaError::MetadataFetch(
                RDKafkaErrorCode::UnknownPartition
                    | RDKafkaErrorCode::UnknownTopic
                    | RDKafkaErrorCode::UnknownTopicOrPartition
            )
        )
    )
}

/// The (low, high) watermarks of partition `partition` of `topic`, asked on the blocking pool.
pub async fn watermarks(
    client: &Arc<MetadataClient>,
    topic: &str,
    partition: i32,
    timeout: Duration,
) -> Result<(i64, i64), ServeError> {
    let client = client.clone();
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || client.fetch_watermarks(&topic, partition, timeout))
        .await?
        .map_err(|e| ServeError::Kafka("reading watermarks", e))
}

impl LogSync {
    pub fn new(
        clients: LogClients,
        stop: Stop,
        health: Arc<Health>,
        classifier: Classifier,
        describe_labels: bool,
        labels_next: i64,
    ) -> Self {
        Self {
            labels: clients.labels,
            changelog: clients.changelog,
            watermarks: clients.watermarks,
            producer: clients.producer,
            stop,
            health,
            classifier,
            describe_labels,
            labels_forward_next: labels_next,
            labels_synced_at: 0,
            log_missing_since: None,
            warned_at: None,
        }
    }

    /// The changelog consumer, for the loop to apply what others write as it arrives.
    pub fn changelog(&self) -> &LogReader {
        &self.changelog
    }

    /// Whether label events published after `timestamp_ms` (a text's) may not be applied yet.
    pub fn older_than(&self, timestamp_ms: Option<i64>) -> bool {
        timestamp_ms.is_none_or(|at| at > self.labels_synced_at)
    }

    /// Bring `replica` up to date with every label event published so far: apply the changelog
    /// to its end, forward labels-topic records nobody forwarded yet, and apply the changelog to
    /// its end again.
    pub async fn sync(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
    ) -> Result<(), ServeError> {
        let started = now_ms();
        self.catch_up(replica, stats).await?;
        if self.forward_labels(replica).await? {
            self.catch_up(replica, stats).await?;
        }
        self.labels_synced_at = started;
        Ok(())
    }

    /// [`LogSync::sync`], with trouble reaching the logs tolerated (see [`LogSync::tolerate`]):
    /// false when the drain cut it short (a round's encoding ahead), so that texts after it
    /// are not begun without it.
    pub async fn sync_or_tolerate(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
        context: &str,
    ) -> Result<bool, ServeError> {
        match self.sync(replica, stats).await {
            Ok(()) => Ok(true),
            Err(error @ ServeError::StoppedWhile(_)) => {
                tracing::info!(%error, "changelog left unapplied");
                Ok(false)
            }
            Err(error) => {
                let log = &replica.topics().changelog;
                self.tolerate(error, log, replica.cursor.changelog_next, context)?;
                Ok(true)
            }
        }
    }

    /// Trouble reaching the labels or changelog topic is logged (at most every 10 s) and
    /// retried at the next tick: the clients reconnect by themselves. A changelog shorter than
    /// what this instance has applied, or gone altogether for `LOG_MISSING_GRACE`, is not
    /// transient: the broker lost the log (a restarted memory-storage broker has no topics at
    /// all), and going on would let the replicas diverge silently, so the service stops and
    /// says how to recover; so does a changelog reader that cannot be pointed back at a
    /// record it left unapplied.
    fn tolerate(
        &mut self,
        error: ServeError,
        changelog: &str,
        applied: i64,
        context: &str,
    ) -> Result<(), ServeError> {
        if matches!(
            error,
            ServeError::ChangelogBehind { .. } | ServeError::ChangelogReader(..)
        ) {
            return Err(error);
        }
        if applied > 0 && topic_missing(&error) {
            let since = *self.log_missing_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= LOG_MISSING_GRACE {
                Health::set(&self.health.changelog_consistent, false);
                return Err(ServeError::ChangelogBehind {
                    topic: changelog.to_string(),
                    end: 0,
                    applied,
                });
            }
        }
        if self.warned_at.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
            tracing::warn!(%error, "{context}");
            self.warned_at = Some(Instant::now());
        }
        Ok(())
    }

    /// The log's (low, high) watermarks; whether the broker answered is the health flag.
    async fn log_bounds(&mut self, topic: &str) -> Result<(i64, i64), ServeError> {
        let bounds = watermarks(&self.watermarks, topic, 0, Duration::from_secs(5)).await;
        self.health.set_broker(match &bounds {
            Ok(_) => {
                crate::stream::kafka::broker_answered();
                None
            }
            Err(error) => {
                Some(crate::stream::kafka::broker_trouble().unwrap_or_else(|| error.to_string()))
            }
        });
        if bounds.is_ok() {
            self.log_missing_since = None;
        }
        bounds
    }

    /// Apply changelog records up to the log's current end.
    pub async fn catch_up(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
    ) -> Result<(), ServeError> {
        let topic = replica.topics().changelog.clone();
        let (low, high) = self.log_bounds(&topic).await?;
        let consistent = high >= replica.cursor.changelog_next;
        Health::set(&self.health.changelog_consistent, consistent);
        if !consistent {
            return Err(ServeError::ChangelogBehind {
                topic,
                end: high,
                applied: replica.cursor.changelog_next,
            });
        }
        while replica.cursor.changelog_next.max(low) < high {
            let next = replica.cursor.changelog_next.max(low);
            let message =
                next_record(&self.changelog, &topic, next, "reading the changelog").await?;
            self.apply_record(replica, &message, stats).await?;
        }
        Ok(())
    }

    /// Apply a changelog record the reader handed out, its labelled material encoded ahead
    /// first (see [`ahead::encode_ahead`]). When that is cut short the reader is pointed back
    /// at the record, which stays unapplied: the next catch-up, or the next start, applies it
    /// (reading on would apply the records after it and skip it for good).
    pub async fn apply_record(
        &self,
        replica: &mut Replica,
        message: &OwnedMessage,
        stats: &mut Stats,
    ) -> Result<(), ServeError> {
        // Decoded once, for the encoding ahead and for applying.
        let record = ChangeRecord::decode(message.payload().unwrap_or_default());
        if let Err(error) = ahead::encode_ahead(&self.stop, replica, &record).await {
            let topic = &replica.topics().changelog;
            let back = Offset::Offset(message.offset());
            if let Err(seek) = self.changelog.seek(topic, 0, back, Duration::from_secs(5)) {
                return Err(ServeError::ChangelogReader(message.offset(), seek));
            }
            return Err(error);
        }
        let created = message.timestamp().to_millis();
        replica.apply_decoded(message.offset(), record, created, stats)?;
        Ok(())
    }

    /// Forward labels-topic records not yet in the changelog. Returns whether any was.
    async fn forward_labels(&mut self, replica: &Replica) -> Result<bool, ServeError> {
        let topic = replica.topics().labels.clone();
        let (low, high) = self.log_bounds(&topic).await?;
        let mut forwarded = false;
        self.labels_forward_next = self
            .labels_forward_next
            .max(replica.cursor.labels_next)
            .max(low);
        while self.labels_forward_next < high {
            let next = self.labels_forward_next;
            let message =
                next_record(&self.labels, &topic, next, "reading the labels topic").await?;
            self.labels_forward_next = message.offset() + 1;
            if message.offset() < replica.cursor.labels_next {
                continue; // someone forwarded it already
            }
            let payload = message.payload().unwrap_or_default().to_vec();
            let outcome = match decode::label_event(&payload) {
                Err(rejection) => reject(RejectStage::Decode, rejection),
                Ok(event) => match self.label_update(replica, event).await {
                    Ok(update) => LabelOutcome::Apply(update),
                    Err(rejection) => reject(RejectStage::Apply, rejection),
                },
            };
            let (offset, key) = (message.offset(), message.key().map(<[u8]>::to_vec));
            let record = label_record(replica, offset, key.clone(), payload, outcome);
            let delivered = match self.forward(record).await {
                Some(Err(error)) => {
                    // Larger than the changelog takes (it carries the event and its decoded
                    // update): dead-lettered once, through the log like any rejected event.
                    let payload = message.payload().unwrap_or_default();
                    let size = payload.len();
                    tracing::error!(%error, offset, size, "label event too large for the changelog");
                    let rejection = Rejection::new(
                        Reason::OutputTooLarge,
                        format!(
                            "the label event ({size} bytes) is larger than the changelog accepts"
                        ),
                    );
                    let outcome = reject(RejectStage::Apply, rejection);
                    let excerpt = payload[..size.min(TOO_LARGE_EXCERPT)].to_vec();
                    let record = label_record(replica, offset, key, excerpt, outcome);
                    self.forward(record).await
                }
                delivered => delivered,
            };
            match delivered {
                Some(Ok(())) => {}
                Some(Err(error)) => tracing::error!(%error, offset, "label event not forwarded"),
                // Stopping: the next start forwards it again.
                None => return Ok(forwarded),
            }
            forwarded = true;
        }
        Ok(forwarded)
    }

    /// Send a changelog record, unless the drain deadline passes first.
    async fn forward(&self, record: Outgoing) -> Option<Result<(), KafkaError>> {
        self.stop
            .unless_expired(kafka::deliver(&self.producer, &record))
            .await
    }

    /// Have the LLM describe a round's labels, within [`DESCRIBE_BUDGET`] and only while the
    /// service runs: the loop waits for it, and descriptions are optional — labels not
    /// described in time, or when the drain began, go without (the record carries what was
    /// written, so every replica applies the same round, and texts after it still see it).
    async fn describe(&self, labels: &mut [NewLabel]) {
        let describing =
            tokio::time::timeout(DESCRIBE_BUDGET, self.classifier.describe_labels(labels));
        if let Some(Err(_)) = self.stop.unless_stopping(describing).await {
            tracing::warn!(
                budget_secs = DESCRIBE_BUDGET.as_secs(),
                "the round's labels were not all described in time: the rest go without"
            );
        }
    }

    /// Turn a label event into an engine update, checked before any LLM call.
    async fn label_update(
        &self,
        replica: &Replica,
        event: LabelEvent,
    ) -> Result<Update, Rejection> {
        match event {
            LabelEvent::Round { round, labels, .. } => {
                if labels.is_empty() {
                    return Err(Rejection::new(
                        Reason::InvalidRound,
                        "a round needs at least one label",
                    ));
                }
                if round.trim().is_empty() {
                    return Err(Rejection::new(Reason::InvalidRound, "round id is empty"));
                }
                let mut labels: Vec<NewLabel> = labels.iter().map(NewLabel::from).collect();
                replica
                    .engine
                    .check_round(&labels)
                    .map_err(|e| engine_rejection(&e))?;
                if self.describe_labels {
                    self.describe(&mut labels).await;
                }
                Ok(Update::Round { round, labels })
            }
            LabelEvent::AddExamples {
                label, examples, ..
            } => Ok(Update::AddExamples { label, examples }),
            LabelEvent::RetireLabel { label, .. } => Ok(Update::RetireLabel { label }),
        }
    }
}

/// The changelog record forwarding the labels topic's record at `offset`.
fn label_record(
    replica: &Replica,
    offset: i64,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    outcome: LabelOutcome,
) -> Outgoing {
    let record = ChangeRecord {
        version: CHANGE_VERSION,
        origin: replica.instance.clone(),
        change: Change::Label {
            offset,
            key: key.clone(),
            payload,
            outcome,
        },
    };
    Outgoing {
        topic: replica.topics().changelog.clone(),
        key,
        payload: record.encode(),
        headers: Vec::new(),
    }
}

fn reject(stage: RejectStage, rejection: Rejection) -> LabelOutcome {
    LabelOutcome::Reject {
        stage,
        reason: rejection.reason,
        message: rejection.message,
    }
}

/// The next record of a one-partition log we know holds `next`. Nothing for `STALL_SECS`:
/// point the reader at `next` again (a fresh fetch, in case its fetch state went wrong across
/// a broker outage) and report the stall; the caller retries at the next tick.
async fn next_record(
    reader: &LogReader,
    topic: &str,
    next: i64,
    context: &'static str,
) -> Result<rdkafka::message::OwnedMessage, ServeError> {
    match tokio::time::timeout(Duration::from_secs(STALL_SECS), reader.recv()).await {
        Ok(Ok(message)) => Ok(message.detach()),
        Ok(Err(error)) => Err(ServeError::Kafka(context, error)),
        Err(_) => {
            if let Err(error) = reader.seek(topic, 0, Offset::Offset(next), Duration::from_secs(5))
            {
                tracing::warn!(%error, topic, next, "seek after a stall failed");
            }
            Err(ServeError::Stalled(topic.to_string(), STALL_SECS))
        }
    }
}
