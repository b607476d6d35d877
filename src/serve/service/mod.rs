//! The service loop. One task owns the replica, the intake and the slots; LLM calls and
//! deliveries run as tasks and report back to it, the texts consumer runs in its own thread and
//! reports to it. Each branch of the loop is one call; no broker round trip blocks its thread
//! (what it awaits is raced against the drain deadline or bounded).
//!
//! This file is the loop and the calls of its branches; the work they start lives beside it,
//! each a part of `impl Service`: `way_in.rs` (backlog → decoded → begun → LLM answer, and
//! revocation), `way_out.rs` (finished in order → learn records and outputs → acknowledged),
//! `watch.rs` (the tick's measurements and the stall warning), `close.rs` (after the loop).

mod close;
mod discover;
mod partitions;
mod stall;
mod watch;
mod way_in;
mod way_out;

use std::sync::Arc;
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::task::JoinHandle;

use super::delivery::OutputKind;
use super::discovery_pass::PassSettings;
use super::group_commit::GroupCommit;
use super::intake::{BacklogLimit, Intake};
use super::lag::LagProbe;
use super::pipeline::{ReadText, Slots, StepTask, Text};
use super::replica::job::{Job, JobOutput, Jobs};
use super::replica::sync::{LogSync, Synced};
use super::replica::Replica;
use super::startup::{self, Started};
use super::stats::Stats;
use super::stop::{Phase, Stop};
use super::{ServeError, ServeSummary};
use crate::broker::{
    Broker, BrokerError, OrderedSender, Producer, Record, RecordLimit, TextsConsumer, TextsEvent,
};
use crate::config::{OnLlmFailure, ServeConfig};
use crate::one_text::TextSteps;
use crate::position::Position;
use crate::telemetry::admin::Health;
use crate::telemetry::metrics::Metrics;
use discover::Passes;
use partitions::Partitions;
use stall::StallWatch;

/// Texts in flight and none finished for this long: warn with their states.
const STALL_WARN: Duration = Duration::from_secs(60);
/// How long the final commit and leaving the group may take at shutdown.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);
/// What closing may take in all, after the drain (commit, catch-up, dead letters, flush).
const CLOSE_BUDGET: Duration = Duration::from_secs(12);
/// Most events of one kind handled in one turn of the loop.
const DRAIN_AT_ONCE: usize = 256;
/// A delivery task's report.
struct Delivered {
    /// The text whose outputs these were (None for a learn record or a label event's dead
    /// letter).
    text: Option<Position>,
    /// Whether this was a learn record.
    learn_record: bool,
    produce_seconds: f64,
    /// Outputs the broker refused (too large), see [`super::delivery::settle`].
    refused: Vec<OutputKind>,
    /// The input record, to dead-letter should an output be refused.
    source: Option<ReadText>,
}

struct Service {
    config: ServeConfig,
    replica: Replica,
    logs: LogSync,
    classifier: TextSteps,
    producer: Producer,
    /// Learn records go to the changelog in finishing order (offset order per partition):
    /// the learn dedupe relies on it.
    ordered: OrderedSender,
    /// Learn steps gathered for the next learn record.
    group: GroupCommit,
    /// The largest record the producer sends (dead letters are cut to it).
    record_limit: RecordLimit,
    intake: Intake,
    /// `input.*` as the intake's pause rule wants it (derived once).
    backlog_limit: BacklogLimit,
    slots: Slots<Text>,
    step_tasks: FuturesUnordered<StepTask>,
    deliveries: FuturesUnordered<JoinHandle<Delivered>>,
    stats: Stats,
    health: Arc<Health>,
    stop: Stop,
    lag: LagProbe,
    /// When a text last finished (or nothing was in flight): the stall warning's clock.
    stall: StallWatch,
    /// Emerging-class discovery's community passes.
    passes: Passes,
    /// A round being described, a changelog record's material being encoded, if any: until
    /// they report, texts newer than the last sync wait in the backlog; everything else goes
    /// on (see [`Jobs`]).
    jobs: Jobs,
}

pub(super) async fn run(
    broker: Broker,
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
        kept_vectors,
    } = startup::start(&broker, &config, stop.clone(), health.clone()).await?;
    let lag = LagProbe::new(watermarks, config.topics.texts.clone(), metrics.clone());
    let backlog_limit = BacklogLimit::of(&config.input);
    let pass_settings = PassSettings::of(&config, &broker, &producer, classifier.llm());
    let mut service = Service {
        passes: Passes::new(pass_settings),
        jobs: Jobs::default(),
        ordered: OrderedSender::spawn(producer.clone()),
        group: GroupCommit::new(&config),
        record_limit: RecordLimit::of(&config.broker()),
        config,
        replica,
        logs,
        classifier,
        producer,
        intake: Intake::default(),
        backlog_limit,
        slots: Slots::default(),
        step_tasks: FuturesUnordered::new(),
        deliveries: FuturesUnordered::new(),
        stats: Stats::new(metrics),
        health,
        stop,
        lag,
        stall: StallWatch::new(),
    };
    match service
        .logs
        .sync_to_end(&mut service.replica, &mut service.stats)
        .await
    {
        Ok(()) => {
            if let Some(encoder) = &kept_vectors {
                startup::forget_unasked_vectors(encoder);
            }
        }
        Err(error @ ServeError::StoppedWhile(_)) => {
            tracing::info!(%error, "stopped before serving");
            return service.close_before_serving().await;
        }
        Err(error) => return Err(error),
    }
    service.replica.gauges(&service.stats);
    service.logs.begin_serving();
    let mut texts = broker.texts_consumer(service.producer.clone())?;
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
                    Partitions {
                        intake: &mut self.intake,
                        texts,
                    }
                    .pause_or_resume(self.backlog_limit);
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
            // Draining reads no more of the changelog here: close() catches up (and a round
            // whose encoding the drain cut short would otherwise be read again and again).
            let running = stop.phase() == Phase::Running;
            tokio::select! {
                phase = stop.changed() => {
                    if phase == Phase::Draining {
                        tracing::info!(in_flight = self.slots.len(), "shutting down: draining");
                        self.abandon_jobs();
                    }
                }
                (job, prepared) = self.jobs.next(), if self.jobs.any() => {
                    self.on_job_done(job, prepared).await?;
                }
                Some(done) = self.step_tasks.next(), if !self.step_tasks.is_empty() => {
                    self.on_llm_done(done);
                    // Every other answer already in, too: the places they free are filled
                    // together, and their texts begun side by side.
                    for _ in 0..DRAIN_AT_ONCE {
                        match self.step_tasks.next().now_or_never() {
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
                // Not read on while a record waits for its encoding.
                message = self.logs.changelog().recv(), if running && !self.jobs.is_encoding() => {
                    self.on_changelog(message)?
                }
                _ = commit_tick.tick() => self.on_tick(texts, stop.phase()).await?,
                Some(event) = texts.recv() => self.on_texts_event(event, texts),
            }
        }
    }

    /// Commit, catch up with the logs, measure.
    async fn on_tick(&mut self, texts: &TextsConsumer, phase: Phase) -> Result<(), ServeError> {
        Partitions {
            intake: &mut self.intake,
            texts,
        }
        .commit(&mut self.replica)?;
        self.passes.collect(&mut self.replica, &self.stats);
        if phase != Phase::Running {
            return Ok(());
        }
        // Cut short by the drain, or waiting for a job: the job's report (or the next start)
        // goes on from there.
        self.sync_logs("labels or changelog topic unreachable")
            .await?;
        self.measure(texts);
        Ok(())
    }

    /// A changelog record as it arrives (others' learn records and label events, this
    /// instance's read back): applied, or held until its material is encoded.
    fn on_changelog(&mut self, message: Result<Record, BrokerError>) -> Result<(), ServeError> {
        let message = match message {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(%error, "changelog consumer error");
                return Ok(());
            }
        };
        match self
            .logs
            .apply_record(&mut self.replica, message, &mut self.stats)
        {
            Ok(Some(job)) => self.jobs.hold(job),
            Ok(None) => {}
            Err(error @ ServeError::StoppedWhile(_)) => {
                tracing::info!(%error, "changelog left unapplied")
            }
            Err(error) => return Err(error),
        }
        self.passes.start_if_due(&mut self.replica);
        Ok(())
    }

    /// Sync with the logs, unless a sync already waits for a job. True when the sync is done
    /// (every label event published before it began applied, or the logs out of reach and
    /// the labels known used); false when it waits for a job (held in `self.jobs`) or the
    /// drain cut it short.
    async fn sync_logs(&mut self, context: &str) -> Result<bool, ServeError> {
        if self.jobs.any() {
            return Ok(false);
        }
        let synced = self
            .logs
            .sync_or_tolerate(&mut self.replica, &mut self.stats, context)
            .await?;
        Ok(match synced {
            Synced::Done => true,
            Synced::Waiting(job) => {
                self.jobs.hold(job);
                false
            }
            Synced::Stopped => false,
        })
    }

    /// A job reported: finish what it was for, and go on syncing (not once the drain has
    /// begun: `finish` gives the job up then, and the logs are not read on).
    async fn on_job_done(&mut self, job: Box<Job>, prepared: JobOutput) -> Result<(), ServeError> {
        let finished = self
            .logs
            .finish(&mut self.replica, &mut self.stats, job, prepared)
            .await;
        match finished {
            Err(error @ ServeError::StoppedWhile(_)) => {
                tracing::info!(%error, "label events left for the next start");
                return Ok(());
            }
            other => other?,
        }
        if self.stop.phase() != Phase::Running {
            return Ok(());
        }
        self.sync_logs("labels or changelog topic unreachable")
            .await?;
        self.passes.start_if_due(&mut self.replica);
        Ok(())
    }

    /// The drain began (or the loop ended) with jobs under way: stop them, and leave what they
    /// were for to the next start.
    fn abandon_jobs(&mut self) {
        for job in self.jobs.take_all().collect::<Vec<_>>() {
            self.logs.abandon(&job);
        }
    }

    fn on_texts_event(&mut self, event: TextsEvent, texts: &TextsConsumer) {
        match event {
            TextsEvent::Record(message) => self.intake.receive(message),
            TextsEvent::Assigned(partitions) => Partitions {
                intake: &mut self.intake,
                texts,
            }
            .assign(&partitions),
            TextsEvent::Revoked { partitions, answer } => {
                let done = self.on_revoked(&partitions);
                // The callback may have given up waiting: nothing to do then.
                let _ = answer.send(done);
            }
            TextsEvent::Error(error) => tracing::warn!(%error, "texts consumer error"),
        }
    }
}
