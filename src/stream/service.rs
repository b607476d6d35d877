//! The service loop. One task owns the engine and the store (one writer); LLM calls and
//! deliveries run as tasks and report back to it.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use rdkafka::consumer::Consumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::Producer;
use rdkafka::Offset;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::changelog::{Change, ChangeRecord, LabelOutcome, RejectStage, CHANGE_VERSION};
use super::delivery::{self, OutputKind};
use super::kafka::{self, Outgoing};
use super::offsets::OffsetTracker;
use super::outputs::{self, Classification};
use super::replica::{self, engine_rejection, Cursor, Effect, LogTopics};
use super::slots::{SlotId, Slots};
use super::stop::{Phase, Stop};
use super::texts::{TextsConsumer, TextsEvent};
use super::{ServeError, ServeSummary};
use crate::classify::{Answer, Classifier, KeywordAnswer, LlmFailure, Prepared};
use crate::config::{OnLlmFailure, ServeConfig};
use crate::engine::update::Update;
use crate::engine::{Engine, NewLabel};
use crate::events::decode::{self, Reason, Rejection};
use crate::events::{InputPosition, LabelEvent, StageLatency, TextEvent};
use crate::llm::LlmClient;
use crate::store::{SledStore, StateStore};
use crate::telemetry::admin::Health;
use crate::telemetry::metrics::{KindLabel, Metrics, SourceLabel, StateLabel};

/// How long the labels or changelog topic may stay silent while we know records are there.
const STALL_SECS: u64 = 30;
/// Fewest texts held back before the partitions are paused.
const BACKLOG_MIN: usize = 16;
/// Texts in flight and none finished for this long: warn with their states.
const STALL_WARN: Duration = Duration::from_secs(60);
/// How long the final commit and leaving the group may take at shutdown.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// A text whose LLM answer is awaited or known.
/// A text whose candidates are known, waiting for (or holding) the LLM's answer.
struct Pending {
    event: TextEvent,
    prepared: Prepared,
    latency: StageLatency,
}

/// Where a text is in its classification.
enum Work {
    Rejected {
        stage: &'static str,
        rejection: Rejection,
    },
    /// LLM keyword mode: waiting for the LLM's keywords.
    Keywords { event: TextEvent, decode_ms: f64 },
    /// Candidates known; `answer` once the LLM answered (at once without an LLM).
    Classify {
        pending: Box<Pending>,
        answer: Option<Answer>,
    },
}

struct Slot {
    /// The text's span: open from intake until its outputs are delivered.
    span: tracing::Span,
    position: InputPosition,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    received: Instant,
    work: Work,
}

/// An LLM call running as a task, reporting which text it was for even if the task died.
type LlmTask = std::pin::Pin<Box<dyn Future<Output = LlmDone> + Send>>;

struct LlmDone {
    slot: SlotId,
    outcome: LlmOutcome,
}

/// What an LLM task brings back.
enum LlmOutcome {
    Keywords(KeywordAnswer),
    Answer(Answer),
}

struct Delivered {
    partition: i32,
    offset: i64,
    produce_seconds: f64,
    /// Outputs the broker refused (too large), see [`delivery::settle`].
    refused: Vec<OutputKind>,
    /// The input record, to dead-letter should an output be refused.
    source: Option<Box<Source>>,
}

/// A text as read, kept until its outputs are settled.
struct Source {
    position: InputPosition,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
}

/// An LLM call a slot waits for.
enum LlmRequest {
    Keywords(String),
    Answer(Option<crate::engine::prompt::Prompt>),
}

/// Whether `work` needs nothing more before it can finish.
fn is_final(work: &Work) -> bool {
    matches!(
        work,
        Work::Rejected { .. }
            | Work::Classify {
                answer: Some(_),
                ..
            }
    )
}

/// A finished text's outputs, in sending order.
type Records = Vec<(OutputKind, Outgoing)>;

struct Service {
    config: ServeConfig,
    engine: Engine,
    store: Box<dyn StateStore>,
    llm: Option<LlmClient>,
    classifier: Classifier,
    producer: kafka::Producer,
    labels: kafka::LogReader,
    /// Next labels-topic offset this instance has not forwarded to the changelog.
    labels_forward_next: i64,
    /// How far this replica has read the changelog (and the labels and texts through it).
    cursor: Cursor,
    topics: LogTopics,
    /// This instance's id in changelog records (stable across restarts: kept in the store).
    instance: String,
    /// Learn records this instance wrote and has not yet read back from the changelog.
    pending_learns: usize,
    /// A client of its own for watermark queries: on the labels consumer's connection they
    /// wait behind its fetch long-poll (≈ 500 ms each against nisshi).
    watermarks: kafka::MetadataClient,
    /// Wall-clock ms at which the labels topic was last read to its end.
    labels_synced_at: i64,
    /// Since when the changelog topic has been reported missing (see `tolerate_sync_error`).
    log_missing_since: Option<Instant>,
    /// When a sync failure was last logged (they repeat every tick while the broker is away).
    sync_warned_at: Option<Instant>,
    tracker: OffsetTracker,
    /// Texts received and not yet taken in (intake full), in arrival order.
    backlog: VecDeque<OwnedMessage>,
    /// Whether the assigned partitions are paused (the backlog is long enough).
    paused: bool,
    slots: Slots<Slot>,
    summary: ServeSummary,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    /// When consumer lag was last measured.
    lag_measured: Option<Instant>,
    /// The signal and the drain deadline.
    stop: Stop,
    /// When a text last finished (or nothing was in flight): the stall warning's clock.
    last_progress: Instant,
    last_snapshot: Instant,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn reject_outcome(stage: RejectStage, rejection: Rejection) -> LabelOutcome {
    LabelOutcome::Reject {
        stage,
        reason: rejection.reason,
        message: rejection.message,
    }
}

pub(super) async fn run(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
) -> Result<ServeSummary, ServeError> {
    Health::set(
        &health.llm_optional,
        !config.llm.enabled() || config.llm.on_failure == OnLlmFailure::Graph,
    );
    let mut store = SledStore::open_with_cache(
        &config.state.dir,
        config.state.cache_mb.saturating_mul(1 << 20),
    )?;
    let instance = store.instance_id()?;
    let mut saved = store.load()?;
    let engine_config = config.engine.engine_config();
    let engine = saved.restore(engine_config)?;
    let topics = LogTopics {
        changelog: config.topics.changelog.clone(),
        labels: config.topics.labels.clone(),
        texts: config.topics.texts.clone(),
    };
    let cursor = Cursor::restore(&saved.offsets, &topics);
    tracing::info!(
        %instance,
        changelog_next = cursor.changelog_next,
        labels = engine.labels().len(),
        nodes = engine.graph().node_count(),
        replayed = saved.log.len(),
        digest = %engine.digest(),
        "state restored"
    );

    if config.kafka.create_topics {
        kafka::ensure_topics(&config).await?;
    }
    let llm = config.llm.settings().client()?;
    let producer = kafka::producer(&config)?;

    let watermarks: kafka::MetadataClient = kafka::client_config(&config)
        .set("group.id", format!("{}-watermarks", config.kafka.group_id))
        .set("enable.auto.commit", "false")
        .create_with_context(kafka::Logged)
        .map_err(|e| ServeError::Kafka("creating the watermark client", e))?;
    for topic in [&config.topics.labels, &config.topics.changelog] {
        let metadata = watermarks
            .fetch_metadata(Some(topic), Duration::from_secs(10))
            .map_err(|e| ServeError::Kafka("reading topic metadata", e))?;
        let partitions = metadata
            .topics()
            .iter()
            .find(|t| t.name() == topic.as_str())
            .map(|t| t.partitions().len())
            .unwrap_or(0);
        if partitions != 1 {
            return Err(ServeError::Topic(format!(
                "topic {topic} has {partitions} partitions; it must have exactly 1 (its order is \
                 the order changes apply in)"
            )));
        }
    }
    let labels = kafka::log_reader(
        &config,
        &config.topics.labels,
        "labels",
        cursor.labels_next,
        100,
    )?;
    let changelog = kafka::log_reader(
        &config,
        &config.topics.changelog,
        "changelog",
        cursor.changelog_next,
        20,
    )?;

    let classifier = Classifier::new(llm.clone(), config.engine.keywords);
    let drain_grace = Duration::from_secs_f64(config.state.drain_timeout_secs);
    let mut service = Service {
        config,
        engine,
        store: Box::new(store),
        llm,
        classifier,
        producer,
        labels,
        labels_forward_next: cursor.labels_next,
        cursor,
        topics,
        instance,
        pending_learns: 0,
        watermarks,
        labels_synced_at: 0,
        log_missing_since: None,
        sync_warned_at: None,
        tracker: OffsetTracker::default(),
        backlog: VecDeque::new(),
        paused: false,
        slots: Slots::default(),
        summary: ServeSummary::default(),
        metrics,
        health,
        lag_measured: None,
        last_progress: Instant::now(),
        stop: Stop::spawn(shutdown, drain_grace),
        last_snapshot: Instant::now(),
    };
    service.sync(&changelog).await?;
    service.update_gauges();
    let mut texts = TextsConsumer::start(&service.config, service.producer.clone())?;
    Health::set(&service.health.state_loaded, true);
    tracing::info!(
        topic = %service.config.topics.texts,
        group = %service.config.kafka.group_id,
        "serving"
    );

    let mut llm_tasks: FuturesUnordered<LlmTask> = FuturesUnordered::new();
    let mut deliveries: FuturesUnordered<JoinHandle<Delivered>> = FuturesUnordered::new();
    let mut commit_tick = tokio::time::interval(Duration::from_millis(
        service.config.kafka.commit_interval_ms,
    ));
    commit_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stop = service.stop.clone();

    let drained = loop {
        match stop.phase() {
            Phase::Running => {
                service
                    .take_in(&changelog, &mut llm_tasks, &mut deliveries)
                    .await?;
                service.pause_or_resume(&texts);
            }
            Phase::Draining if service.slots.is_empty() && deliveries.is_empty() => break true,
            Phase::Draining => {}
            Phase::Expired => {
                tracing::warn!(
                    in_flight = service.slots(),
                    "drain deadline passed; their offsets stay uncommitted"
                );
                break false;
            }
        }
        tokio::select! {
            phase = stop.changed() => {
                if phase == Phase::Draining {
                    tracing::info!(in_flight = service.slots(), "shutting down: draining");
                }
            }
            Some(done) = llm_tasks.next(), if !llm_tasks.is_empty() => {
                service.on_llm_done(done, &mut llm_tasks, &mut deliveries)?;
            }
            Some(delivered) = deliveries.next(), if !deliveries.is_empty() => {
                match delivered {
                    Ok(delivered) => service.on_delivered(delivered, &mut deliveries),
                    Err(error) => tracing::error!(%error, "delivery task failed"),
                }
            }
            message = changelog.recv() => {
                match message {
                    Ok(message) => service.apply_change(message.detach()).await?,
                    Err(error) => tracing::warn!(%error, "changelog consumer error"),
                }
            }
            _ = commit_tick.tick() => {
                service.commit(&texts)?;
                if stop.phase() == Phase::Running {
                    if let Err(error) = service.sync(&changelog).await {
                        service.tolerate_sync_error(error, "labels or changelog topic unreachable")?;
                    }
                    service.measure(&texts);
                }
            }
            Some(event) = texts.recv() => service.on_texts_event(event, &texts),
        }
    };

    // Unfinished LLM calls are dropped with `llm_tasks` (their texts stay uncommitted).
    drop(llm_tasks);
    for task in deliveries.iter() {
        task.abort();
    }
    // A synchronous commit waits for the group coordinator without a deadline: only with a
    // reachable broker. Otherwise the offsets stay uncommitted (re-read later: duplicates).
    let reachable = service
        .health
        .broker_reachable
        .load(std::sync::atomic::Ordering::Relaxed);
    if reachable {
        service.store.flush()?;
        texts
            .close(Some(service.tracker.watermarks()), CLOSE_LIMIT)
            .await;
        // Apply what this instance (and others) logged, so the saved state is the log's state.
        if let Err(error) = service.catch_up_changelog(&changelog).await {
            tracing::warn!(%error, "changelog not read to its end at shutdown");
        }
    } else {
        tracing::warn!("broker unreachable at shutdown: offsets not committed");
        texts.close(None, CLOSE_LIMIT).await;
    }
    if service.store.log_len() > 0 {
        service.store.snapshot(&service.engine.to_state())?;
    }
    service.store.flush()?;
    if let Err(error) = service.producer.flush(Duration::from_secs(10)) {
        tracing::warn!(%error, "producer flush at shutdown");
    }
    let mut summary = service.summary.clone();
    summary.graph_nodes = service.engine.graph().node_count();
    summary.graph_edges = service.engine.graph().edge_count();
    summary.labels = service.engine.labels().len();
    summary.digest = service.engine.digest();
    summary.drained = drained;
    tracing::info!(summary = %serde_json::to_string(&summary).unwrap_or_default(), "stopped");
    Ok(summary)
}

/// A log reader got nothing for `STALL_SECS` although the log holds more: point it at the
/// record it waits for again (a fresh fetch, in case its fetch state went wrong across a broker
/// outage), and report the stall; the caller retries at the next tick.
fn stalled(consumer: &kafka::LogReader, topic: &str, next: i64) -> ServeError {
    if let Err(error) = consumer.seek(topic, 0, Offset::Offset(next), Duration::from_secs(5)) {
        tracing::warn!(%error, topic, next, "seek after a stall failed");
    }
    ServeError::Stalled(topic.to_string(), STALL_SECS)
}

/// How long the changelog topic may be missing, after this instance applied records from it,
/// before that counts as a lost log rather than a broker still loading its metadata.
const LOG_MISSING_GRACE: Duration = Duration::from_secs(30);

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

impl Service {
    /// Trouble reaching the labels or changelog topic is logged (at most every 10 s) and retried
    /// at the next tick: the clients reconnect by themselves. A changelog shorter than what this
    /// instance has applied, or gone altogether for `LOG_MISSING_GRACE`, is not transient: the
    /// broker lost the log (a restarted memory-storage broker has no topics at all), and going
    /// on would let the replicas diverge silently, so the service stops and says how to recover.
    fn tolerate_sync_error(&mut self, error: ServeError, context: &str) -> Result<(), ServeError> {
        if matches!(error, ServeError::ChangelogBehind { .. }) {
            return Err(error);
        }
        if self.cursor.changelog_next > 0 && topic_missing(&error) {
            let since = *self.log_missing_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= LOG_MISSING_GRACE {
                Health::set(&self.health.changelog_consistent, false);
                return Err(ServeError::ChangelogBehind {
                    topic: self.config.topics.changelog.clone(),
                    end: 0,
                    applied: self.cursor.changelog_next,
                });
            }
        }
        if self
            .sync_warned_at
            .is_none_or(|at| at.elapsed() >= Duration::from_secs(10))
        {
            tracing::warn!(%error, "{context}");
            self.sync_warned_at = Some(Instant::now());
        }
        Ok(())
    }

    fn slots(&self) -> usize {
        self.slots.len()
    }

    fn llm_model(&self) -> Option<&str> {
        self.llm.as_ref().map(|_| self.config.llm.model.as_str())
    }

    /// Bring the engine up to date with every label event published so far: apply the
    /// changelog to its end, forward labels-topic records nobody forwarded yet, and apply the
    /// changelog to its end again.
    async fn sync(&mut self, changelog: &kafka::LogReader) -> Result<(), ServeError> {
        let started = now_ms();
        self.catch_up_changelog(changelog).await?;
        if self.forward_labels().await? {
            self.catch_up_changelog(changelog).await?;
        }
        self.labels_synced_at = started;
        Ok(())
    }

    fn high_watermark(&mut self, topic: &str) -> Result<(i64, i64), ServeError> {
        let watermarks = tokio::task::block_in_place(|| {
            self.watermarks
                .fetch_watermarks(topic, 0, Duration::from_secs(5))
        });
        Health::set(&self.health.broker_reachable, watermarks.is_ok());
        if watermarks.is_ok() {
            self.log_missing_since = None;
        }
        watermarks.map_err(|e| ServeError::Kafka("reading watermarks", e))
    }

    /// Apply changelog records up to the log's current end.
    async fn catch_up_changelog(&mut self, changelog: &kafka::LogReader) -> Result<(), ServeError> {
        let topic = self.config.topics.changelog.clone();
        let (low, high) = self.high_watermark(&topic)?;
        let consistent = high >= self.cursor.changelog_next;
        Health::set(&self.health.changelog_consistent, consistent);
        if !consistent {
            return Err(ServeError::ChangelogBehind {
                topic,
                end: high,
                applied: self.cursor.changelog_next,
            });
        }
        while self.cursor.changelog_next.max(low) < high {
            let next = self.cursor.changelog_next.max(low);
            let message = tokio::time::timeout(Duration::from_secs(STALL_SECS), changelog.recv())
                .await
                .map_err(|_| stalled(changelog, &topic, next))?
                .map_err(|e| ServeError::Kafka("reading the changelog", e))?
                .detach();
            self.apply_change(message).await?;
        }
        Ok(())
    }

    /// Forward labels-topic records not yet in the changelog. Returns whether any was.
    async fn forward_labels(&mut self) -> Result<bool, ServeError> {
        let topic = self.config.topics.labels.clone();
        let (low, high) = self.high_watermark(&topic)?;
        let mut forwarded = false;
        self.labels_forward_next = self
            .labels_forward_next
            .max(self.cursor.labels_next)
            .max(low);
        while self.labels_forward_next < high {
            let next = self.labels_forward_next;
            let message = tokio::time::timeout(Duration::from_secs(STALL_SECS), self.labels.recv())
                .await
                .map_err(|_| stalled(&self.labels, &topic, next))?
                .map_err(|e| ServeError::Kafka("reading the labels topic", e))?
                .detach();
            self.labels_forward_next = message.offset() + 1;
            if message.offset() < self.cursor.labels_next {
                continue; // someone forwarded it already
            }
            let payload = message.payload().unwrap_or_default().to_vec();
            let outcome = match decode::label_event(&payload) {
                Err(rejection) => reject_outcome(RejectStage::Decode, rejection),
                Ok(event) => match self.label_update(event).await {
                    Ok(update) => LabelOutcome::Apply(update),
                    Err(rejection) => reject_outcome(RejectStage::Apply, rejection),
                },
            };
            let record = ChangeRecord {
                version: CHANGE_VERSION,
                origin: self.instance.clone(),
                change: Change::Label {
                    offset: message.offset(),
                    key: message.key().map(<[u8]>::to_vec),
                    payload,
                    outcome,
                },
            };
            let outgoing = Outgoing {
                topic: self.config.topics.changelog.clone(),
                key: message.key().map(<[u8]>::to_vec),
                payload: record.encode(),
                headers: Vec::new(),
            };
            match self
                .stop
                .unless_expired(kafka::deliver(&self.producer, &outgoing))
                .await
            {
                Some(Ok(())) => {}
                Some(Err(error)) => {
                    tracing::error!(%error, offset = message.offset(), "label event too large for the changelog")
                }
                // Stopping: the next start forwards it again.
                None => return Ok(forwarded),
            }
            forwarded = true;
        }
        Ok(forwarded)
    }

    /// Apply one changelog record (see [`replica::apply`]), save it with its offsets in one
    /// batch, and do what it asks: count, log, dead-letter.
    async fn apply_change(&mut self, message: OwnedMessage) -> Result<(), ServeError> {
        let offset = message.offset();
        let record = ChangeRecord::decode(message.payload().unwrap_or_default());
        // Label events get a span of their own (learn records are too many to trace).
        let span = match &record {
            Ok(ChangeRecord {
                change: Change::Label {
                    offset, outcome, ..
                },
                ..
            }) => {
                let (event, round) = match outcome {
                    LabelOutcome::Apply(Update::Round { round, .. }) => ("round", round.as_str()),
                    LabelOutcome::Apply(Update::AddExamples { .. }) => ("add_examples", ""),
                    LabelOutcome::Apply(Update::RetireLabel { .. }) => ("retire_label", ""),
                    LabelOutcome::Apply(Update::Learn { .. }) => ("learn", ""),
                    LabelOutcome::Reject { .. } => ("rejected", ""),
                };
                tracing::info_span!("label_event", offset, event, round)
            }
            _ => tracing::Span::none(),
        };
        let entered = span.enter();
        let applied = replica::apply(
            &mut self.cursor,
            &mut self.engine,
            &self.topics,
            &self.instance,
            offset,
            record,
        );
        drop(entered);
        if applied.effect == Effect::Behind {
            return Ok(());
        }
        self.store
            .record(applied.update.as_ref(), &applied.offsets)?;
        if applied.mine
            && matches!(
                applied.effect,
                Effect::Learned { .. } | Effect::Copy { learn: true }
            )
        {
            self.pending_learns = self.pending_learns.saturating_sub(1);
        }
        match applied.effect {
            Effect::Behind => {}
            Effect::Unreadable(error) => {
                tracing::error!(offset, %error, "unreadable changelog record skipped");
            }
            Effect::Copy { learn } => {
                if learn {
                    self.summary.relearn_skipped += 1;
                }
            }
            Effect::Learned { refused } => {
                if let Some(error) = refused {
                    tracing::warn!(%error, "online indexing refused");
                }
            }
            Effect::Label {
                labels_offset,
                report,
                ..
            } => {
                self.count_label_event();
                let _entered = span.enter();
                tracing::info!(
                    offset = labels_offset,
                    labels_added = report.labels_added,
                    texts_indexed = report.texts_indexed,
                    label_version = self.engine.label_version(),
                    "label event applied"
                );
                self.update_gauges();
            }
            Effect::LabelRejected {
                labels_offset,
                key,
                payload,
                stage,
                rejection,
            } => {
                self.count_label_event();
                tracing::warn!(offset = labels_offset, %rejection, "label event rejected");
                self.count_dead_letter(rejection.reason);
                // One dead letter per event: from the instance whose forward counted.
                if applied.mine {
                    let position = InputPosition {
                        topic: self.config.topics.labels.clone(),
                        partition: 0,
                        offset: labels_offset,
                    };
                    let record = outputs::dead_letter(
                        &self.config.topics.dead_letter,
                        &position,
                        key,
                        payload,
                        stage.as_str(),
                        &rejection,
                    );
                    let sent = self
                        .stop
                        .unless_expired(kafka::deliver(&self.producer, &record))
                        .await;
                    match sent {
                        Some(Ok(())) => {}
                        Some(Err(error)) => {
                            tracing::error!(%error, "dead letter could not be delivered")
                        }
                        None => tracing::warn!("drain deadline passed: dead letter not sent"),
                    }
                }
                self.update_gauges();
            }
        }
        self.maybe_snapshot()
    }

    fn count_label_event(&mut self) {
        self.metrics.label_events.inc();
        self.summary.label_events += 1;
    }

    /// Replace the snapshot once enough updates are logged, at most every
    /// `snapshot_min_interval_secs`.
    fn maybe_snapshot(&mut self) -> Result<(), ServeError> {
        let interval = Duration::from_secs_f64(self.config.state.snapshot_min_interval_secs);
        if self.store.log_len() >= self.config.state.snapshot_every
            && self.last_snapshot.elapsed() >= interval
        {
            self.last_snapshot = Instant::now();
            self.store.snapshot(&self.engine.to_state())?;
        }
        Ok(())
    }

    /// Turn a label event into an engine update, checked before any LLM call.
    async fn label_update(&self, event: LabelEvent) -> Result<Update, Rejection> {
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
                self.engine
                    .check_round(&labels)
                    .map_err(|e| engine_rejection(&e))?;
                if self.config.llm.describe_labels {
                    self.classifier.describe_labels(&mut labels).await;
                }
                Ok(Update::Round { round, labels })
            }
            LabelEvent::AddExamples {
                label, examples, ..
            } => Ok(Update::AddExamples { label, examples }),
            LabelEvent::RetireLabel { label, .. } => Ok(Update::RetireLabel { label }),
        }
    }

    async fn on_text(
        &mut self,
        message: OwnedMessage,
        changelog: &kafka::LogReader,
        llm_tasks: &mut FuturesUnordered<LlmTask>,
        deliveries: &mut FuturesUnordered<JoinHandle<Delivered>>,
    ) -> Result<(), ServeError> {
        let received = Instant::now();
        let position = InputPosition {
            topic: message.topic().to_string(),
            partition: message.partition(),
            offset: message.offset(),
        };
        self.tracker.begin(position.partition, position.offset);
        self.summary.texts_in += 1;
        self.metrics.texts_received.inc();
        let span = tracing::info_span!(
            "text",
            text_id = tracing::field::Empty,
            partition = position.partition,
            offset = position.offset,
            label = tracing::field::Empty,
            source = tracing::field::Empty,
        );
        let payload = message.payload().unwrap_or_default().to_vec();
        let key = message.key().map(<[u8]>::to_vec);
        let decoded = tracing::info_span!(parent: &span, "decode")
            .in_scope(|| decode::text_event(&payload, self.config.input.max_text_bytes));
        if let Ok(event) = &decoded {
            span.record("text_id", event.id.as_str());
        }
        let decode_ms = ms(received.elapsed());
        self.metrics.observe_stage("decode", decode_ms / 1000.0);

        // Label events published before this text must be applied first.
        let stamped = message.timestamp().to_millis();
        if stamped.is_none_or(|at| at > self.labels_synced_at) {
            if let Err(error) = self.sync(changelog).await {
                self.tolerate_sync_error(
                    error,
                    "labels topic unreachable; classifying with the labels known",
                )?;
            }
        }

        let work = match decoded {
            Err(rejection) => Work::Rejected {
                stage: "decode",
                rejection,
            },
            Ok(event) if self.classifier.asks_for_keywords() => Work::Keywords { event, decode_ms },
            Ok(event) => self.prepare(&span, event, &KeywordAnswer::default(), decode_ms),
        };
        let partition = position.partition;
        let ready = is_final(&work);
        let task = self.llm_task(&span, &work);
        let id = self.slots.push(
            partition,
            position.offset,
            Slot {
                span,
                position,
                key,
                payload,
                received,
                work,
            },
            ready,
        );
        if let Some(task) = task {
            llm_tasks.push(task(id));
        }
        self.finish_ready(partition, deliveries)
    }

    /// Keywords and candidates for `event`: ready to finish without an LLM, else waiting for
    /// its answer.
    fn prepare(
        &self,
        span: &tracing::Span,
        event: TextEvent,
        keywords: &KeywordAnswer,
        decode_ms: f64,
    ) -> Work {
        let prepared =
            span.in_scope(|| self.classifier.prepare(&self.engine, &event.text, keywords));
        let prepared = match prepared {
            Ok(prepared) => prepared,
            Err(error) => {
                return Work::Rejected {
                    stage: "classify",
                    rejection: engine_rejection(&error),
                }
            }
        };
        let times = &prepared.times;
        self.metrics
            .observe_stage("keywords", times.keywords.as_secs_f64());
        self.metrics
            .observe_stage("retrieve", times.retrieve.as_secs_f64());
        let latency = StageLatency {
            decode_ms,
            keywords_ms: ms(times.keywords),
            retrieve_ms: ms(times.retrieve),
            ..StageLatency::default()
        };
        // Without an LLM the answer is known: none.
        let answer = prepared.prompt.is_none().then(Answer::default);
        Work::Classify {
            pending: Box::new(Pending {
                event,
                prepared,
                latency,
            }),
            answer,
        }
    }

    /// The LLM call `work` waits for, as a task to start once its slot is known.
    fn llm_task(
        &self,
        span: &tracing::Span,
        work: &Work,
    ) -> Option<impl FnOnce(SlotId) -> LlmTask> {
        let classifier = self.classifier.clone();
        let max_chars = self.engine.config().max_prompt_chars;
        let request = match work {
            Work::Keywords { event, .. } => LlmRequest::Keywords(event.text.clone()),
            Work::Classify {
                pending,
                answer: None,
            } => LlmRequest::Answer(pending.prepared.prompt.clone()),
            _ => return None,
        };
        let llm_span = tracing::info_span!(parent: span, "llm");
        Some(move |slot: SlotId| -> LlmTask {
            let call = tokio::spawn(
                async move {
                    match request {
                        LlmRequest::Keywords(text) => {
                            LlmOutcome::Keywords(classifier.llm_keywords(&text, max_chars).await)
                        }
                        LlmRequest::Answer(prompt) => {
                            LlmOutcome::Answer(classifier.answer(prompt.as_ref()).await)
                        }
                    }
                }
                .instrument(llm_span),
            );
            Box::pin(async move {
                let outcome = call.await.unwrap_or_else(|error| {
                    // A dead task must not leave its text waiting for ever.
                    LlmOutcome::Answer(Answer {
                        failure: Some(LlmFailure {
                            reason: "task_failed".into(),
                            detail: error.to_string(),
                        }),
                        ..Answer::default()
                    })
                });
                LlmDone { slot, outcome }
            })
        })
    }

    fn on_llm_done(
        &mut self,
        done: LlmDone,
        llm_tasks: &mut FuturesUnordered<LlmTask>,
        deliveries: &mut FuturesUnordered<JoinHandle<Delivered>>,
    ) -> Result<(), ServeError> {
        let (elapsed, succeeded) = match &done.outcome {
            LlmOutcome::Keywords(k) => (k.elapsed, k.text.is_some()),
            LlmOutcome::Answer(a) => (a.elapsed, a.failure.is_none()),
        };
        self.metrics.llm_seconds.observe(elapsed.as_secs_f64());
        self.metrics.observe_stage("llm", elapsed.as_secs_f64());
        Health::set(&self.health.llm_reachable, succeeded);
        // None: the text was finished or revoked meanwhile; its answer is not needed.
        let Some(slot) = self.slots.get_mut(done.slot) else {
            return Ok(());
        };
        match (done.outcome, &mut slot.work) {
            (LlmOutcome::Keywords(keywords), Work::Keywords { event, decode_ms }) => {
                let (event, decode_ms) = (event.clone(), *decode_ms);
                let span = slot.span.clone();
                let work = self.prepare(&span, event, &keywords, decode_ms);
                let task = self.llm_task(&span, &work);
                let ready = is_final(&work);
                if let Some(slot) = self.slots.get_mut(done.slot) {
                    slot.work = work;
                }
                if let Some(task) = task {
                    llm_tasks.push(task(done.slot));
                }
                if !ready {
                    return Ok(());
                }
            }
            (
                LlmOutcome::Answer(answer),
                Work::Classify {
                    pending,
                    answer: slot_answer,
                },
            ) => {
                pending.latency.llm_ms = ms(answer.elapsed);
                *slot_answer = Some(answer);
            }
            // An answer for a state that no longer waits for it: nothing to do.
            _ => return Ok(()),
        }
        self.slots.set_ready(done.slot);
        self.finish_ready(done.slot.partition, deliveries)
    }

    /// Finish the partition's texts whose turn it is: the head of its queue, while ready.
    fn finish_ready(
        &mut self,
        partition: i32,
        deliveries: &mut FuturesUnordered<JoinHandle<Delivered>>,
    ) -> Result<(), ServeError> {
        while let Some((_, slot)) = self.slots.pop_ready(partition) {
            self.last_progress = Instant::now();
            let offset = slot.position.offset;
            let text_span = slot.span.clone();
            let (records, source) = self.finish(slot)?;
            let producer = self.producer.clone();
            // Changelog records are handed to the producer here, in finishing order (offset
            // order per partition): the learn dedupe relies on it. The rest may go in any order.
            let enqueued: Vec<Option<Result<_, _>>> = records
                .iter()
                .map(|(_, record)| {
                    (record.topic == self.config.topics.changelog)
                        .then(|| kafka::enqueue(&self.producer, record))
                })
                .collect();
            let produce_span = tracing::info_span!(parent: &text_span, "produce");
            deliveries.push(tokio::spawn(
                async move {
                    // The text's span ends when its outputs are acknowledged.
                    let _text = text_span;
                    let started = Instant::now();
                    let mut refused = Vec::new();
                    for ((kind, record), enqueued) in records.iter().zip(enqueued) {
                        let sent = match enqueued {
                            Some(enqueued) => kafka::confirm(&producer, record, enqueued).await,
                            None => kafka::deliver(&producer, record).await,
                        };
                        if let Err(error) = sent {
                            tracing::error!(%error, topic = %record.topic, "output refused by the broker");
                            refused.push(*kind);
                        }
                    }
                    Delivered {
                        partition,
                        offset,
                        produce_seconds: started.elapsed().as_secs_f64(),
                        refused,
                        source,
                    }
                }
                .instrument(produce_span),
            ));
        }
        Ok(())
    }

    /// Decide and learn; return the records to deliver, and the input record to dead-letter
    /// should the broker refuse them (see `on_delivered`).
    fn finish(&mut self, slot: Slot) -> Result<(Records, Option<Box<Source>>), ServeError> {
        let position = slot.position.clone();
        let (partition, offset) = (position.partition, position.offset);
        let dead_letter = |config: &ServeConfig, stage: &str, rejection: &Rejection| {
            outputs::dead_letter(
                &config.topics.dead_letter,
                &position,
                slot.key.clone(),
                slot.payload.clone(),
                stage,
                rejection,
            )
        };
        let (pending, answer) = match slot.work {
            Work::Rejected { stage, rejection } => {
                tracing::debug!(offset, %rejection, "text rejected");
                self.count_dead_letter(rejection.reason);
                return Ok((
                    vec![(
                        OutputKind::DeadLetter,
                        dead_letter(&self.config, stage, &rejection),
                    )],
                    None,
                ));
            }
            Work::Classify { pending, answer } => (
                pending,
                // Finished only once final; were it not, its answer is unknown: treat it as
                // an LLM failure rather than stall or panic.
                answer.unwrap_or_else(|| Answer {
                    failure: Some(LlmFailure::other("no_answer")),
                    ..Answer::default()
                }),
            ),
            Work::Keywords { .. } => {
                let rejection = Rejection::new(Reason::LlmFailed, "no keywords");
                self.count_dead_letter(Reason::LlmFailed);
                return Ok((
                    vec![(
                        OutputKind::DeadLetter,
                        dead_letter(&self.config, "classify", &rejection),
                    )],
                    None,
                ));
            }
        };
        if let Some(failure) = &answer.failure {
            if self.config.llm.on_failure == OnLlmFailure::DeadLetter {
                let message = format!("{}: {}", failure.reason, failure.detail);
                let rejection = Rejection::new(Reason::LlmFailed, message);
                self.count_dead_letter(Reason::LlmFailed);
                return Ok((
                    vec![(
                        OutputKind::DeadLetter,
                        dead_letter(&self.config, "classify", &rejection),
                    )],
                    None,
                ));
            }
            self.summary.llm_fallbacks += 1;
            self.metrics.llm_fallbacks.inc();
        }
        let Pending {
            event,
            prepared,
            latency,
        } = *pending;
        let classified = Classifier::conclude(&self.engine, prepared, answer);
        let decision = &classified.decision;
        slot.span.record("label", decision.label.as_str());
        slot.span
            .record("source", format!("{:?}", decision.source).to_lowercase());

        let started = Instant::now();
        let index_span = tracing::info_span!(parent: &slot.span, "index").entered();
        let confident = self.engine.is_confident(&classified.retrieval, decision);
        // Online indexing goes through the changelog: this instance applies it when it reads
        // it back, like every other replica.
        let mut learn_record = None;
        let owned = self.tracker.is_assigned(partition);
        if self.cursor.is_learned(partition, offset) {
            // Learned before a restart or rebalance: predict again, do not learn twice.
            self.summary.relearn_skipped += 1;
        } else if !owned {
            // Revoked while in flight: the partition's new owner reads it again and learns it.
            self.summary.relearn_skipped += 1;
        } else if self.config.engine.online_indexing {
            let record = ChangeRecord {
                version: CHANGE_VERSION,
                origin: self.instance.clone(),
                change: Change::Learn {
                    partition,
                    offset,
                    analysis: self.engine.learnable(&classified.analysis),
                    label: decision.label.clone(),
                    confident,
                },
            };
            learn_record = Some(Outgoing {
                topic: self.config.topics.changelog.clone(),
                key: Some(event.id.as_bytes().to_vec()),
                payload: record.encode(),
                headers: Vec::new(),
            });
            self.pending_learns += 1;
        }
        drop(index_span);
        let mut latency = latency;
        latency.index_ms = ms(started.elapsed());
        self.metrics
            .observe_stage("index", latency.index_ms / 1000.0);
        latency.total_ms = ms(slot.received.elapsed());

        let classification = Classification {
            event: &event,
            analysis: &classified.analysis,
            retrieval: &classified.retrieval,
            decision,
            confident,
            raw_answer: classified.raw_answer.as_deref(),
            llm_error: classified.llm_error.as_deref(),
            model: self.llm_model(),
            latency,
            position: &position,
        };
        let prediction = outputs::prediction(&self.engine, &classification);
        let mut records = Vec::with_capacity(3);
        records.extend(learn_record.map(|r| (OutputKind::Learn, r)));
        if let Some(report) = outputs::hallucination(&self.engine, &classification) {
            *self
                .summary
                .hallucinations
                .entry(report.kind.as_str().to_string())
                .or_default() += 1;
            self.metrics
                .hallucinations
                .get_or_create(&KindLabel {
                    kind: report.kind.as_str().to_string(),
                })
                .inc();
            records.push((
                OutputKind::Hallucination,
                outputs::json_record(&self.config.topics.hallucinations, &report.text_id, &report),
            ));
        }
        records.push((
            OutputKind::Prediction,
            outputs::json_record(
                &self.config.topics.predictions,
                &prediction.text_id,
                &prediction,
            ),
        ));
        self.summary.predictions += 1;
        self.metrics
            .predictions
            .get_or_create(&SourceLabel {
                source: format!("{:?}", decision.source).to_lowercase(),
            })
            .inc();
        let source = Source {
            position,
            key: slot.key,
            payload: slot.payload,
        };
        Ok((records, Some(Box::new(source))))
    }

    /// Graph size, labels and in-flight count.
    fn update_gauges(&self) {
        let graph = self.engine.graph();
        self.metrics.graph_nodes.set(graph.node_count() as i64);
        self.metrics.graph_edges.set(graph.edge_count() as i64);
        let active = self.engine.active_labels().count();
        let total = self.engine.labels().len();
        for (state, count) in [("active", active), ("retired", total - active)] {
            self.metrics
                .labels
                .get_or_create(&StateLabel {
                    state: state.into(),
                })
                .set(count as i64);
        }
        self.metrics.in_flight.set(self.slots() as i64);
    }

    /// Periodic measurements: gauges, LLM usage, and (every 5 s) consumer lag.
    fn measure(&mut self, texts: &TextsConsumer) {
        self.update_gauges();
        self.warn_if_stalled();
        if let Some(llm) = &self.llm {
            self.metrics.llm_usage(llm.usage().snapshot());
        }
        if self
            .lag_measured
            .is_some_and(|at| at.elapsed() < Duration::from_secs(5))
        {
            return;
        }
        // Texts read but held back in the backlog are still to do: they count as lag.
        let positions: Vec<(i32, i64)> = texts
            .positions()
            .into_iter()
            .map(|(partition, position)| {
                let held = self
                    .backlog
                    .iter()
                    .filter(|m| m.partition() == partition)
                    .count() as i64;
                (partition, position - held)
            })
            .collect();
        for (partition, position) in positions {
            let watermarks = tokio::task::block_in_place(|| {
                self.watermarks.fetch_watermarks(
                    &self.config.topics.texts,
                    partition,
                    Duration::from_secs(2),
                )
            });
            if let Ok((_, high)) = watermarks {
                // Measured: wait 5 s before the next round (none until partitions are read).
                self.lag_measured = Some(Instant::now());
                self.metrics
                    .consumer_lag
                    .get_or_create(&crate::telemetry::metrics::PartitionLabel { partition })
                    .set((high - position).max(0));
            }
        }
    }

    /// Texts in flight and none finished for `STALL_WARN`: say which, and in what state, once
    /// per period (what `scripts/fault-suite.sh`'s watchdog looks for).
    fn warn_if_stalled(&mut self) {
        if self.slots.is_empty() {
            self.last_progress = Instant::now();
            return;
        }
        if self.last_progress.elapsed() < STALL_WARN {
            return;
        }
        let waiting: Vec<String> = self
            .slots
            .states()
            .map(|(id, ready)| {
                let state = if ready { "ready" } else { "waiting" };
                format!("{}:{} {state}", id.partition, id.offset)
            })
            .collect();
        tracing::warn!(
            in_flight = self.slots.len(),
            pending_learns = self.pending_learns,
            backlog = self.backlog.len(),
            ?waiting,
            "no text finished for {} s",
            STALL_WARN.as_secs()
        );
        self.last_progress = Instant::now();
    }

    fn count_dead_letter(&mut self, reason: Reason) {
        self.metrics.dead_letter(reason.code());
        *self
            .summary
            .dead_letters
            .entry(reason.code().to_string())
            .or_default() += 1;
    }

    fn on_delivered(
        &mut self,
        delivered: Delivered,
        deliveries: &mut FuturesUnordered<JoinHandle<Delivered>>,
    ) {
        let settled = delivery::settle(&delivered.refused);
        if settled.learn_refused {
            self.pending_learns = self.pending_learns.saturating_sub(1);
            self.summary.learns_refused += 1;
        }
        if let (Some(rejection), Some(source)) = (settled.dead_letter, delivered.source) {
            self.count_dead_letter(rejection.reason);
            let record = outputs::dead_letter(
                &self.config.topics.dead_letter,
                &source.position,
                source.key,
                source.payload,
                "produce",
                &rejection,
            );
            let producer = self.producer.clone();
            let (partition, offset) = (delivered.partition, delivered.offset);
            deliveries.push(tokio::spawn(async move {
                let refused = match kafka::deliver(&producer, &record).await {
                    Ok(()) => Vec::new(),
                    Err(error) => {
                        tracing::error!(%error, "dead letter refused by the broker; record skipped");
                        vec![OutputKind::DeadLetter]
                    }
                };
                Delivered {
                    partition,
                    offset,
                    produce_seconds: 0.0,
                    refused,
                    source: None,
                }
            }));
            return;
        }
        self.metrics
            .observe_stage("produce", delivered.produce_seconds);
        self.tracker.done(delivered.partition, delivered.offset);
    }

    /// Flush the state, then commit (without waiting) every partition's done prefix that
    /// moved since the last commit.
    fn commit(&mut self, texts: &TextsConsumer) -> Result<(), ServeError> {
        let list = self.tracker.to_commit();
        if list.is_empty() {
            return Ok(());
        }
        self.store.flush()?;
        match texts.commit_async(&list) {
            Ok(()) => {
                for (partition, offset) in list {
                    self.tracker.committed(partition, offset);
                }
            }
            Err(error) => tracing::warn!(%error, "offset commit failed; retried at the next tick"),
        }
        Ok(())
    }

    /// Take texts in from the backlog while the intake has room. Own learn records not yet
    /// read back count as in flight: with 1 in flight, each text is classified against a
    /// graph that includes the previous one.
    async fn take_in(
        &mut self,
        changelog: &kafka::LogReader,
        llm_tasks: &mut FuturesUnordered<LlmTask>,
        deliveries: &mut FuturesUnordered<JoinHandle<Delivered>>,
    ) -> Result<(), ServeError> {
        while self.slots() + self.pending_learns < self.config.input.max_in_flight {
            let Some(message) = self.backlog.pop_front() else {
                break;
            };
            self.on_text(message, changelog, llm_tasks, deliveries)
                .await?;
        }
        Ok(())
    }

    /// Pause the assigned partitions while the backlog holds a full intake's worth of texts,
    /// resume when it is empty: the consumer keeps polling either way, so it stays in its group.
    fn pause_or_resume(&mut self, texts: &TextsConsumer) {
        let full = self.backlog.len() >= self.config.input.max_in_flight.max(BACKLOG_MIN);
        let pause = if !self.paused && full {
            true
        } else if self.paused && self.backlog.is_empty() {
            false
        } else {
            return;
        };
        let assigned = self.tracker.assigned();
        match texts.pause(&assigned, pause) {
            Ok(()) => self.paused = pause,
            Err(error) => tracing::warn!(%error, pause, "pausing or resuming the texts partitions"),
        }
    }

    fn on_texts_event(&mut self, event: TextsEvent, texts: &TextsConsumer) {
        match event {
            TextsEvent::Record(message) => self.backlog.push_back(message),
            TextsEvent::Assigned(partitions) => {
                for &partition in &partitions {
                    self.tracker.assign(partition);
                }
                // A new assignment starts unpaused.
                if self.paused {
                    if let Err(error) = texts.pause(&partitions, true) {
                        tracing::warn!(%error, "pausing newly assigned partitions");
                    }
                }
            }
            TextsEvent::Revoked { partitions, answer } => {
                let done = self.on_revoked(&partitions);
                // The callback may have given up waiting: nothing to do then.
                let _ = answer.send(done);
            }
            TextsEvent::Error(error) => tracing::warn!(%error, "texts consumer error"),
        }
    }

    /// Partitions are going: drop their texts in flight and in the backlog (the new owner
    /// reads them again), and return their done offsets for the callback to commit, once the
    /// state that includes them is on disk.
    fn on_revoked(&mut self, partitions: &[i32]) -> Vec<(i32, i64)> {
        let mut dropped = 0;
        for &partition in partitions {
            dropped += self.slots.revoke(partition).len();
        }
        let before = self.backlog.len();
        self.backlog
            .retain(|m| !partitions.contains(&m.partition()));
        dropped += before - self.backlog.len();
        self.update_gauges();
        let done: Vec<(i32, i64)> = self
            .tracker
            .watermarks()
            .into_iter()
            .filter(|(partition, _)| partitions.contains(partition))
            .collect();
        for &partition in partitions {
            self.tracker.forget(partition);
        }
        tracing::info!(?partitions, dropped, "revoking: texts in flight dropped");
        match self.store.flush() {
            Ok(()) => done,
            Err(error) => {
                tracing::warn!(%error, "state flush on revoke failed; nothing committed");
                Vec::new()
            }
        }
    }
}
