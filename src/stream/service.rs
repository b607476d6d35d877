//! The service loop. One task owns the replica, the intake and the slots; LLM calls and
//! deliveries run as tasks and report back to it, the texts consumer runs in its own thread and
//! reports to it. Each branch of the loop is one call; no broker round trip blocks its thread
//! (what it awaits is raced against the drain deadline or bounded).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::Producer as _;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::delivery::{self, OutputKind};
use super::group_commit::GroupCommit;
use super::intake::{BacklogLimit, Intake};
use super::kafka::{self, OrderedSender, Outgoing, Producer};
use super::lag::LagProbe;
use super::outputs;
use super::pipeline::finish::{finish, Finishing, Learning};
use super::pipeline::{self, Advanced, LlmDone, LlmTask, Slots, Source, Text};
use super::replica::sync::LogSync;
use super::replica::Replica;
use super::startup::{self, Started};
use super::stats::Stats;
use super::stop::{Phase, Stop};
use super::texts::{TextsConsumer, TextsEvent};
use super::{ServeError, ServeSummary};
use crate::classify::Classifier;
use crate::config::{OnLlmFailure, ServeConfig};
use crate::events::decode;
use crate::events::InputPosition;
use crate::telemetry::admin::Health;
use crate::telemetry::metrics::Metrics;

/// Texts in flight and none finished for this long: warn with their states.
const STALL_WARN: Duration = Duration::from_secs(60);
/// How long the final commit and leaving the group may take at shutdown.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);
/// Most events of one kind handled in one turn of the loop.
const DRAIN_AT_ONCE: usize = 256;
/// A delivery task's report.
struct Delivered {
    /// The text whose outputs these were (None for a learn record or a label event's dead
    /// letter).
    text: Option<(i32, i64)>,
    /// Whether this was a learn record.
    learn_record: bool,
    produce_seconds: f64,
    /// Outputs the broker refused (too large), see [`delivery::settle`].
    refused: Vec<OutputKind>,
    /// The input record, to dead-letter should an output be refused.
    source: Option<Source>,
}

struct Service {
    config: ServeConfig,
    replica: Replica,
    logs: LogSync,
    classifier: Classifier,
    producer: Producer,
    /// Learn records go to the changelog in finishing order (offset order per partition):
    /// the learn dedupe relies on it.
    ordered: OrderedSender,
    /// Learn steps gathered for the next learn record.
    group: GroupCommit,
    intake: Intake,
    /// `input.*` as the intake's pause rule wants it (derived once).
    backlog_limit: BacklogLimit,
    slots: Slots<Text>,
    llm_tasks: FuturesUnordered<LlmTask>,
    deliveries: FuturesUnordered<JoinHandle<Delivered>>,
    stats: Stats,
    health: Arc<Health>,
    stop: Stop,
    lag: LagProbe,
    /// When a text last finished (or nothing was in flight): the stall warning's clock.
    last_progress: Instant,
}

pub(super) async fn run(
    config: ServeConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
) -> Result<ServeSummary, ServeError> {
    Health::set(
        &health.llm_optional,
        !config.llm.enabled() || config.llm.on_failure == OnLlmFailure::Graph,
    );
    let stop = Stop::spawn(
        shutdown,
        Duration::from_secs_f64(config.state.drain_timeout_secs),
    );
    let Started {
        replica,
        logs,
        classifier,
        producer,
        watermarks,
    } = startup::start(&config, stop.clone(), health.clone()).await?;
    let lag = LagProbe::new(watermarks, config.topics.texts.clone(), metrics.clone());
    let backlog_limit = BacklogLimit::of(&config.input);
    let mut service = Service {
        ordered: OrderedSender::spawn(producer.clone()),
        group: GroupCommit::new(&config),
        config,
        replica,
        logs,
        classifier,
        producer,
        intake: Intake::default(),
        backlog_limit,
        slots: Slots::default(),
        llm_tasks: FuturesUnordered::new(),
        deliveries: FuturesUnordered::new(),
        stats: Stats::new(metrics),
        health,
        stop,
        lag,
        last_progress: Instant::now(),
    };
    service
        .logs
        .sync(&mut service.replica, &mut service.stats)
        .await?;
    service.replica.gauges(service.stats.metrics());
    let mut texts = TextsConsumer::start(&service.config, service.producer.clone())?;
    Health::set(&service.health.state_loaded, true);
    tracing::info!(
        topic = %service.config.topics.texts,
        group = %service.config.kafka.group_id,
        "serving"
    );
    let drained = service.serve(&mut texts).await?;
    service.close(texts, drained).await
}

impl Service {
    /// The loop: until the drain ends (true) or its deadline passes (false).
    async fn serve(&mut self, texts: &mut TextsConsumer) -> Result<bool, ServeError> {
        let mut commit_tick =
            tokio::time::interval(Duration::from_millis(self.config.kafka.commit_interval_ms));
        commit_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stop = self.stop.clone();
        loop {
            // Before the phase check: what they hand to delivery tasks keeps a drain going.
            self.send_learns();
            self.send_outbox();
            match stop.phase() {
                Phase::Running => {
                    self.take_in().await?;
                    self.pause_or_resume(texts);
                    self.send_learns();
                }
                Phase::Draining if self.slots.is_empty() && self.deliveries.is_empty() => {
                    return Ok(true)
                }
                Phase::Draining => {}
                Phase::Expired => {
                    tracing::warn!(
                        in_flight = self.slots.len(),
                        "drain deadline passed; their offsets stay uncommitted"
                    );
                    return Ok(false);
                }
            }
            tokio::select! {
                phase = stop.changed() => {
                    if phase == Phase::Draining {
                        tracing::info!(in_flight = self.slots.len(), "shutting down: draining");
                    }
                }
                Some(done) = self.llm_tasks.next(), if !self.llm_tasks.is_empty() => {
                    self.on_llm_done(done);
                    // Every other answer already in, too: the places they free are filled
                    // together, and their texts begun side by side.
                    for _ in 0..DRAIN_AT_ONCE {
                        match self.llm_tasks.next().now_or_never() {
                            Some(Some(done)) => self.on_llm_done(done),
                            _ => break,
                        }
                    }
                }
                Some(delivered) = self.deliveries.next(), if !self.deliveries.is_empty() => {
                    match delivered {
                        Ok(delivered) => self.on_delivered(delivered),
                        // A panic in a delivery task is a bug: surface it rather than let its
                        // text (or learn record) hold its place for ever.
                        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                        Err(error) => tracing::error!(%error, "delivery task cancelled"),
                    }
                }
                message = self.logs.changelog().recv() => match message {
                    Ok(message) => {
                        let (offset, payload) = (message.offset(), message.payload().unwrap_or_default());
                        let created = message.timestamp().to_millis();
                        self.replica.apply_change(offset, payload, created, &mut self.stats)?;
                    }
                    Err(error) => tracing::warn!(%error, "changelog consumer error"),
                },
                _ = commit_tick.tick() => self.on_tick(texts, stop.phase()).await?,
                Some(event) = texts.recv() => self.on_texts_event(event, texts),
            }
        }
    }

    /// Commit, catch up with the logs, measure.
    async fn on_tick(&mut self, texts: &TextsConsumer, phase: Phase) -> Result<(), ServeError> {
        self.commit(texts)?;
        if phase != Phase::Running {
            return Ok(());
        }
        let context = "labels or changelog topic unreachable";
        self.logs
            .sync_or_tolerate(&mut self.replica, &mut self.stats, context)
            .await?;
        self.measure(texts);
        Ok(())
    }

    /// Take texts in from the backlog while the intake has room: in flight are the texts in
    /// slots, plus one place per learn record not yet read back and one for the steps gathering
    /// for the next record (the graph takes a record in at once). So with 1 in flight each text
    /// is classified against a graph that includes the previous one; with N, a text's graph
    /// misses at most the texts of N records, and a record gathers at most N texts.
    async fn take_in(&mut self) -> Result<(), ServeError> {
        let capacity = self.config.input.max_in_flight;
        // Under a backlog, wait for a quarter of the intake to be free and take those texts in
        // together: they are begun side by side (taken one by one as places free, they would
        // be begun one at a time).
        let batch_min = (capacity / 4).max(1);
        loop {
            let gathering = usize::from(self.group.gathered() > 0);
            let in_flight = self.slots.len() + self.replica.pending_learns + gathering;
            let room = capacity
                .saturating_sub(in_flight)
                .min(capacity.saturating_sub(self.group.gathered()));
            if room == 0 || (room < batch_min && self.intake.backlog() > room && in_flight > 0) {
                return Ok(());
            }
            let batch: Vec<OwnedMessage> = std::iter::from_fn(|| self.intake.next())
                .take(room)
                .collect();
            if batch.is_empty() {
                return Ok(());
            }
            self.on_texts(batch).await?;
        }
    }

    /// Texts taken in together: decoded, brought up to date with the label events published
    /// before them, then begun side by side (see [`pipeline::begin_all`]).
    async fn on_texts(&mut self, batch: Vec<OwnedMessage>) -> Result<(), ServeError> {
        let mut sources = Vec::with_capacity(batch.len());
        let mut arriving = Vec::with_capacity(batch.len());
        let mut newest = Some(i64::MIN);
        for message in &batch {
            let (source, text) = self.arrive(message);
            // Label events published before a text must be applied first.
            newest = newest
                .zip(message.timestamp().to_millis())
                .map(|(a, b)| a.max(b));
            sources.push(source);
            arriving.push(text);
        }
        if self.logs.older_than(newest) {
            let context = "labels topic unreachable; classifying with the labels known";
            self.logs
                .sync_or_tolerate(&mut self.replica, &mut self.stats, context)
                .await?;
        }
        let started: Vec<(tracing::Span, Instant)> = arriving
            .iter()
            .map(|text| (text.span.clone(), text.received))
            .collect();
        let works = pipeline::begin_all(
            &self.classifier,
            &self.replica.engine,
            &self.stats,
            arriving,
        );
        let max_chars = self.replica.engine.config().max_prompt_chars;
        let mut partitions = Vec::new();
        for ((source, (span, received)), work) in sources.into_iter().zip(started).zip(works) {
            let (partition, offset) = (source.position.partition, source.position.offset);
            let text = Text {
                span,
                source,
                received,
                work,
            };
            let task = pipeline::llm_task(&self.classifier, max_chars, &text);
            let ready = text.work.is_final();
            let id = self.slots.push(partition, offset, text, ready);
            if let Some(task) = task {
                self.llm_tasks.push(task(id));
            }
            if !partitions.contains(&partition) {
                partitions.push(partition);
            }
        }
        for partition in partitions {
            self.finish_ready(partition);
        }
        Ok(())
    }

    /// A text as read: its source record, its span, and its event decoded.
    fn arrive(&mut self, message: &OwnedMessage) -> (Source, pipeline::Arriving) {
        let received = Instant::now();
        self.stats.text_received();
        let source = Source {
            position: InputPosition {
                topic: message.topic().to_string(),
                partition: message.partition(),
                offset: message.offset(),
            },
            key: message.key().map(<[u8]>::to_vec),
            payload: message.payload().unwrap_or_default().to_vec(),
        };
        let span = tracing::info_span!(
            "text",
            text_id = tracing::field::Empty,
            partition = source.position.partition,
            offset = source.position.offset,
            label = tracing::field::Empty,
            source = tracing::field::Empty,
        );
        let decoded = tracing::info_span!(parent: &span, "decode")
            .in_scope(|| decode::text_event(&source.payload, self.config.input.max_text_bytes));
        if let Ok(event) = &decoded {
            span.record("text_id", event.id.as_str());
        }
        let decode_seconds = received.elapsed().as_secs_f64();
        self.stats.stage("decode", decode_seconds);
        let arriving = pipeline::Arriving {
            span,
            decoded,
            decode_ms: decode_seconds * 1000.0,
            received,
        };
        (source, arriving)
    }

    fn on_llm_done(&mut self, done: LlmDone) {
        let (elapsed, succeeded) = done.outcome.elapsed();
        self.stats
            .metrics()
            .llm_seconds
            .observe(elapsed.as_secs_f64());
        self.stats.stage("llm", elapsed.as_secs_f64());
        Health::set(&self.health.llm_reachable, succeeded);
        // None: the text was finished or revoked meanwhile; its answer is not needed.
        let Some(text) = self.slots.get_mut(done.slot) else {
            return;
        };
        let engine = &self.replica.engine;
        match pipeline::advance(&self.classifier, engine, &self.stats, text, done.outcome) {
            Advanced::Stale => {}
            Advanced::Waiting => {
                let max_chars = engine.config().max_prompt_chars;
                if let Some(task) = pipeline::llm_task(&self.classifier, max_chars, text) {
                    self.llm_tasks.push(task(done.slot));
                }
            }
            Advanced::Ready => {
                self.slots.set_ready(done.slot);
                self.finish_ready(done.slot.partition);
            }
        }
    }

    /// Finish the partition's texts whose turn it is (the head of its queue, while ready) and
    /// start delivering their outputs.
    fn finish_ready(&mut self, partition: i32) {
        while let Some((_, text)) = self.slots.pop_ready(partition) {
            self.last_progress = Instant::now();
            let offset = text.source.position.offset;
            let learning = if self.replica.cursor.is_learned(partition, offset) {
                Learning::AlreadyLearned
            } else if !self.intake.tracker.is_assigned(partition) {
                Learning::Revoked
            } else {
                Learning::Allowed
            };
            let finishing = Finishing {
                topics: &self.config.topics,
                on_llm_failure: self.config.llm.on_failure,
                online_indexing: self.config.engine.online_indexing,
                model: self
                    .classifier
                    .llm()
                    .map(|_| self.config.llm.model.as_str()),
            };
            let span = text.span.clone();
            let finished = finish(&finishing, &self.replica.engine, text, learning);
            finished.tally.count(&mut self.stats);
            let learned = finished.learn.map(|text| self.group.gather(text));
            let producer = self.producer.clone();
            let (records, source) = (finished.records, finished.source);
            let produce_span = tracing::info_span!(parent: &span, "produce");
            self.deliveries.push(tokio::spawn(
                async move {
                    // The text's span ends when its outputs are acknowledged.
                    let _text = span;
                    let started = Instant::now();
                    let mut refused = Vec::new();
                    // Its learn record first (the batch's own task delivers it).
                    if let Some(learned) = learned {
                        if !learned.await.unwrap_or(false) {
                            refused.push(OutputKind::Learn);
                        }
                    }
                    refused.extend(deliver_all(&producer, &records).await);
                    Delivered {
                        text: Some((partition, offset)),
                        learn_record: false,
                        produce_seconds: started.elapsed().as_secs_f64(),
                        refused,
                        source,
                    }
                }
                .instrument(produce_span),
            ));
        }
    }

    /// Send the learn steps of the texts finished since the last turn, as few records as fit
    /// under the size limit. Each record holds one intake place until it is read back from the
    /// changelog (or refused).
    fn send_learns(&mut self) {
        for record in self.group.take(&self.replica.instance) {
            self.replica.pending_learns += 1;
            let ordered = self.ordered.send(Outgoing {
                topic: self.config.topics.changelog.clone(),
                key: None,
                payload: record.payload,
                headers: Vec::new(),
            });
            let (producer, waiting) = (self.producer.clone(), record.waiting);
            self.deliveries.push(tokio::spawn(async move {
                let started = Instant::now();
                let delivered = match ordered.confirm(&producer).await {
                    Ok(()) => true,
                    Err(error) => {
                        let texts = waiting.len();
                        tracing::error!(%error, texts, "learn record refused by the broker");
                        false
                    }
                };
                for text in waiting {
                    // The text's own task may be gone (aborted at shutdown).
                    let _ = text.send(delivered);
                }
                Delivered {
                    text: None,
                    learn_record: true,
                    produce_seconds: started.elapsed().as_secs_f64(),
                    refused: if delivered {
                        Vec::new()
                    } else {
                        vec![OutputKind::Learn]
                    },
                    source: None,
                }
            }));
        }
    }

    /// Deliver what the replica asks for (dead letters of label events the log refused).
    /// In the labels topic's order, like the changelog records they come from.
    fn send_outbox(&mut self) {
        for record in self.replica.take_outbox() {
            let producer = self.producer.clone();
            let ordered = self.ordered.send(record);
            self.deliveries.push(tokio::spawn(async move {
                let refused = match ordered.confirm(&producer).await {
                    Ok(()) => Vec::new(),
                    Err(error) => {
                        tracing::error!(%error, "label event's dead letter refused by the broker");
                        vec![OutputKind::DeadLetter]
                    }
                };
                Delivered {
                    text: None,
                    learn_record: false,
                    produce_seconds: 0.0,
                    refused,
                    source: None,
                }
            }));
        }
    }

    fn on_delivered(&mut self, delivered: Delivered) {
        let settled = delivery::settle(&delivered.refused);
        if delivered.learn_record {
            self.group.acknowledged();
            self.stats.stage("learn_produce", delivered.produce_seconds);
        }
        let Some((partition, offset)) = delivered.text else {
            // A learn record (or a label event's dead letter): a refused learn record will
            // never be read back, so its intake place is free again.
            if settled.learn_refused {
                self.replica.pending_learns = self.replica.pending_learns.saturating_sub(1);
            }
            return;
        };
        if settled.learn_refused {
            self.stats.learn_refused();
        }
        if let (Some(rejection), Some(source)) = (settled.dead_letter, delivered.source) {
            // An output was refused: the text goes to the dead letters instead, and is done
            // once that is delivered.
            self.stats.dead_letter(rejection.reason);
            let record = outputs::dead_letter(
                &self.config.topics.dead_letter,
                &source.position,
                source.key,
                source.payload,
                "produce",
                &rejection,
            );
            let producer = self.producer.clone();
            self.deliveries.push(tokio::spawn(async move {
                Delivered {
                    text: Some((partition, offset)),
                    learn_record: false,
                    produce_seconds: 0.0,
                    refused: deliver_all(&producer, &[(OutputKind::DeadLetter, record)]).await,
                    source: None,
                }
            }));
            return;
        }
        self.stats.stage("produce", delivered.produce_seconds);
        self.intake.tracker.done(partition, offset);
    }

    /// Flush the state, then commit (without waiting) every partition's done prefix that
    /// moved since the last commit.
    fn commit(&mut self, texts: &TextsConsumer) -> Result<(), ServeError> {
        let list = self.intake.tracker.to_commit();
        if list.is_empty() {
            return Ok(());
        }
        self.replica.flush()?;
        match texts.commit_async(&list) {
            Ok(()) => {
                for (partition, offset) in list {
                    self.intake.tracker.committed(partition, offset);
                }
            }
            Err(error) => tracing::warn!(%error, "offset commit failed; retried at the next tick"),
        }
        Ok(())
    }

    fn pause_or_resume(&mut self, texts: &TextsConsumer) {
        let Some(pause) = self.intake.pause_change(self.backlog_limit) else {
            return;
        };
        match texts.pause(&self.intake.tracker.assigned(), pause) {
            Ok(()) => self.intake.set_paused(pause),
            Err(error) => tracing::warn!(%error, pause, "pausing or resuming the texts partitions"),
        }
    }

    fn on_texts_event(&mut self, event: TextsEvent, texts: &TextsConsumer) {
        match event {
            TextsEvent::Record(message) => self.intake.receive(message),
            TextsEvent::Assigned(partitions) => {
                self.intake.assign(&partitions);
                // A new assignment starts unpaused.
                if self.intake.is_paused() {
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

    /// Partitions are going: drop their texts in flight and held back (the new owner reads
    /// them again), and return their done offsets for the callback to commit, once the state
    /// that includes them is on disk.
    fn on_revoked(&mut self, partitions: &[i32]) -> Vec<(i32, i64)> {
        let in_flight: usize = partitions
            .iter()
            .map(|&partition| self.slots.revoke(partition).len())
            .sum();
        let (held, done) = self.intake.revoke(partitions);
        self.stats.metrics().in_flight.set(self.slots.len() as i64);
        tracing::info!(
            ?partitions,
            dropped = in_flight + held,
            "revoking: texts in flight dropped"
        );
        match self.replica.flush() {
            Ok(()) => done,
            Err(error) => {
                tracing::warn!(%error, "state flush on revoke failed; nothing committed");
                Vec::new()
            }
        }
    }

    /// Periodic measurements: gauges, LLM usage, consumer lag, stalls.
    fn measure(&mut self, texts: &TextsConsumer) {
        let metrics = self.stats.metrics();
        self.replica.gauges(metrics);
        metrics.in_flight.set(self.slots.len() as i64);
        if let Some(llm) = self.classifier.llm() {
            metrics.llm_usage(llm.usage().snapshot());
        }
        // Texts read but held back are still to do: they count as lag.
        let positions = texts
            .positions()
            .into_iter()
            .map(|(partition, position)| (partition, position - self.intake.held(partition)))
            .collect();
        self.lag.measure(positions);
        self.warn_if_stalled();
    }

    /// Texts in flight and none finished for `STALL_WARN`: say which, and in what state, once
    /// per period (what `scripts/fault-suite.sh`'s watchdog looks for).
    fn warn_if_stalled(&mut self) {
        if self.slots.is_empty() || self.last_progress.elapsed() < STALL_WARN {
            if self.slots.is_empty() {
                self.last_progress = Instant::now();
            }
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
            pending_learns = self.replica.pending_learns,
            backlog = self.intake.backlog(),
            ?waiting,
            "no text finished for {} s",
            STALL_WARN.as_secs()
        );
        self.last_progress = Instant::now();
    }

    /// After the loop: commit what is done, read the log to its end, save, flush.
    async fn close(
        mut self,
        texts: TextsConsumer,
        drained: bool,
    ) -> Result<ServeSummary, ServeError> {
        // Unfinished LLM calls are dropped (their texts stay uncommitted).
        self.llm_tasks.clear();
        for task in self.deliveries.iter() {
            task.abort();
        }
        // A synchronous commit waits for the group coordinator without a deadline: only with a
        // reachable broker. Otherwise the offsets stay uncommitted (re-read later: duplicates).
        let reachable = self
            .health
            .broker_reachable
            .load(std::sync::atomic::Ordering::Relaxed);
        if reachable {
            self.replica.flush()?;
            texts
                .close(Some(self.intake.tracker.watermarks()), CLOSE_LIMIT)
                .await;
            // Apply what this instance (and others) logged, so the saved state is the log's.
            if let Err(error) = self.logs.catch_up(&mut self.replica, &mut self.stats).await {
                tracing::warn!(%error, "changelog not read to its end at shutdown");
            }
            // Dead letters for label events that reading brought: sent before the cursor that
            // passes them is saved (bounded: the broker may be going away).
            let letters: Vec<_> = self
                .replica
                .take_outbox()
                .into_iter()
                .map(|record| (OutputKind::DeadLetter, record))
                .collect();
            if !letters.is_empty()
                && tokio::time::timeout(CLOSE_LIMIT, deliver_all(&self.producer, &letters))
                    .await
                    .is_err()
            {
                tracing::warn!(
                    count = letters.len(),
                    "label events' dead letters not delivered at shutdown"
                );
            }
        } else {
            tracing::warn!("broker unreachable at shutdown: offsets not committed");
            texts.close(None, CLOSE_LIMIT).await;
        }
        self.replica.save()?;
        if let Err(error) = self.producer.flush(Duration::from_secs(10)) {
            tracing::warn!(%error, "producer flush at shutdown");
        }
        let engine = &self.replica.engine;
        let summary = ServeSummary {
            graph_nodes: engine.graph().node_count(),
            graph_edges: engine.graph().edge_count(),
            labels: engine.labels().len(),
            digest: engine.digest(),
            drained,
            ..self.stats.summary().clone()
        };
        tracing::info!(summary = %serde_json::to_string(&summary).unwrap_or_default(), "stopped");
        Ok(summary)
    }
}

/// Send each record until the broker acknowledges it; return the kinds it refused.
async fn deliver_all(producer: &Producer, records: &[(OutputKind, Outgoing)]) -> Vec<OutputKind> {
    let mut refused = Vec::new();
    for (kind, record) in records {
        if let Err(error) = kafka::deliver(producer, record).await {
            tracing::error!(%error, topic = %record.topic, "output refused by the broker");
            refused.push(*kind);
        }
    }
    refused
}
