//! Keeping a replica up to date: apply the changelog to its end, forward labels-topic records
//! nobody forwarded yet (`forward.rs`), and tell a broker that is away for a moment from a log
//! that was lost (`trouble.rs`); a log's reader is in `readers.rs`. A record that needs
//! work first — a round to describe, material to encode — hands the sync a [`Job`] to wait
//! for, off the loop.
//!
//! Watermark queries never wait on the loop's thread (see [`MetadataClient`]). Pointing a
//! reader back, when a job is given up (at shutdown), is a seek on the loop's thread, bounded
//! by 5 s.

use std::sync::Arc;
use std::time::Duration;

mod forward;
mod readers;
mod trouble;

use forward::Forwarded;
use readers::SyncReader;
use trouble::Trouble;

use super::job::{Job, JobOutput, Then};
use super::{now_ms, Replica};
use crate::bounds::Bounds;
use crate::broker::{LogReader, MetadataClient, Producer, Record};
use crate::one_text::TextSteps;
use crate::serve::stats::Stats;
use crate::serve::stop::{Phase, Stop};
use crate::serve::ServeError;
use crate::state::codec::{ChangeRecord, LabelOutcome};
use crate::state::Update;
use crate::telemetry::admin::Health;

pub struct LogSync {
    labels: SyncReader,
    changelog: SyncReader,
    /// A client of its own for watermark queries: on a log consumer's connection they wait
    /// behind its fetch long-poll (≈ 500 ms each against nisshi).
    watermarks: MetadataClient,
    producer: Producer,
    stop: Stop,
    health: Arc<Health>,
    /// The bounds label events are checked against before they are forwarded.
    bounds: Bounds,
    /// Label events get LLM-written descriptions before they are forwarded.
    classifier: TextSteps,
    describe_labels: bool,
    /// Next labels-topic offset this instance has not forwarded to the changelog.
    labels_forward_next: i64,
    /// Wall-clock ms at which the labels topic was last read to its end.
    labels_synced_at: i64,
    /// The sync under way, while it waits for a [`Job`] (None between syncs).
    under_way: Option<UnderWay>,
    /// Whether texts are being served (not the startup sync): then a round's descriptions
    /// leave the texts a call of the LLM's.
    serving: bool,
    /// Trouble reaching the logs, as last seen.
    trouble: Trouble,
}

/// A sync under way (waiting for a [`Job`]).
#[derive(Debug, Clone, Copy)]
struct UnderWay {
    /// When it began (ms): what `labels_synced_at` becomes once it is done.
    started: i64,
    /// The labels topic's end when it first read it: a sync resumed after a job forwards no
    /// further (rounds published since wait for the next sync, so that steady label traffic
    /// cannot keep one sync, and the texts behind it, going for ever).
    labels_end: Option<i64>,
}

impl UnderWay {
    fn now() -> Self {
        Self {
            started: now_ms(),
            labels_end: None,
        }
    }
}

/// The clients and settings a [`LogSync`] works with.
pub struct LogClients {
    pub labels: LogReader,
    pub changelog: LogReader,
    pub watermarks: MetadataClient,
    pub producer: Producer,
}

impl LogSync {
    pub fn new(
        clients: LogClients,
        stop: Stop,
        health: Arc<Health>,
        classifier: TextSteps,
        describe_labels: bool,
        labels_next: i64,
        bounds: Bounds,
    ) -> Self {
        Self {
            bounds,
            labels: SyncReader::new(clients.labels),
            changelog: SyncReader::new(clients.changelog),
            watermarks: clients.watermarks,
            producer: clients.producer,
            stop,
            health,
            classifier,
            describe_labels,
            labels_forward_next: labels_next,
            labels_synced_at: 0,
            under_way: None,
            serving: false,
            trouble: Trouble::default(),
        }
    }

    /// The changelog consumer, for the loop to apply what others write as it arrives.
    pub fn changelog(&self) -> &LogReader {
        self.changelog.reader()
    }

    /// Whether label events published after `timestamp_ms` (a text's) may not be applied yet.
    pub fn older_than(&self, timestamp_ms: Option<i64>) -> bool {
        timestamp_ms.is_none_or(|at| at > self.labels_synced_at)
    }

    /// Bring `replica` up to date with every label event published so far: apply the changelog
    /// to its end, forward labels-topic records nobody forwarded yet, and apply the changelog to
    /// its end again. A record that needs a [`Job`] first (a round to describe, material to
    /// encode) stops the sync there and hands the job back: [`LogSync::finish`] with its
    /// result, then sync again to go on.
    pub async fn sync(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
    ) -> Result<Synced, ServeError> {
        let synced = self.resume_sync(replica, stats).await;
        if !matches!(synced, Ok(Synced::Waiting(_))) {
            self.under_way = None;
        }
        synced
    }

    /// Texts are served from now on (see `serving`).
    pub fn begin_serving(&mut self) {
        self.serving = true;
    }

    /// The sync under way, from where it stands (a sync resumed after a job starts over from
    /// the changelog's catch-up, which skips what it applied already).
    async fn resume_sync(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
    ) -> Result<Synced, ServeError> {
        let started = self.under_way.get_or_insert_with(UnderWay::now).started;
        if let Some(job) = self.catch_up(replica, stats).await? {
            return Ok(Synced::Waiting(job));
        }
        match self.forward_labels(replica).await? {
            Forwarded::Waiting(job) => return Ok(Synced::Waiting(job)),
            Forwarded::Records => {
                if let Some(job) = self.catch_up(replica, stats).await? {
                    return Ok(Synced::Waiting(job));
                }
            }
            Forwarded::Nothing => {}
        }
        self.labels_synced_at = started;
        Ok(Synced::Done)
    }

    /// [`LogSync::sync`] to the end, waiting for its jobs in place (startup: there is nothing
    /// else to do), unless the service stops first ([`ServeError::StoppedWhile`]).
    pub async fn sync_to_end(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
    ) -> Result<(), ServeError> {
        loop {
            let mut job = match self.sync(replica, stats).await? {
                Synced::Done => return Ok(()),
                Synced::Stopped => return Err(ServeError::StoppedWhile("syncing with the logs")),
                Synced::Waiting(job) => job,
            };
            let Some(prepared) = self.stop.unless_stopping(job.prepared()).await else {
                self.abandon(&job);
                return Err(ServeError::StoppedWhile("preparing a label event"));
            };
            self.finish(replica, stats, job, prepared).await?;
        }
    }

    /// [`LogSync::sync`], with trouble reaching the logs tolerated (see [`Trouble::tolerate`]).
    pub async fn sync_or_tolerate(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
        context: &str,
    ) -> Result<Synced, ServeError> {
        match self.sync(replica, stats).await {
            Ok(synced) => Ok(synced),
            Err(error @ ServeError::StoppedWhile(_)) => {
                tracing::info!(%error, "changelog left unapplied");
                Ok(Synced::Stopped)
            }
            Err(error) => {
                let log = &replica.topics().changelog;
                let applied = replica.cursor.changelog_next;
                self.trouble
                    .tolerate(error, &self.health, log, applied, context)?;
                Ok(Synced::Done)
            }
        }
    }

    /// Finish what `job` was started for, with its result: apply the changelog record whose
    /// material it encoded, or forward the round it described (unless another instance's copy
    /// of it was applied meanwhile). Not once the drain has begun, nor for a cancelled job:
    /// then it is given up ([`LogSync::abandon`]).
    pub async fn finish(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
        job: Box<Job>,
        prepared: JobOutput,
    ) -> Result<(), ServeError> {
        if self.stop.phase() != Phase::Running {
            self.abandon(&job);
            return Ok(());
        }
        match (job.then, prepared) {
            (Then::Apply { message, record }, JobOutput::Encoded { .. }) => {
                let created = message.timestamp_ms;
                replica.apply_decoded(message.offset(), *record, created, stats)?;
            }
            (Then::Forward { message, .. }, _) if message.offset() < replica.cursor.labels_next => {
                tracing::info!(
                    offset = message.offset(),
                    "round forwarded by another instance"
                );
            }
            (Then::Forward { message, round }, JobOutput::Described(labels)) => {
                let outcome = LabelOutcome::Apply(Update::Round { round, labels });
                if self
                    .forward_outcome(replica, &message, outcome)
                    .await
                    .is_none()
                {
                    return Err(ServeError::StoppedWhile("forwarding a round"));
                }
            }
            (then, _) => self.give_up(&then),
        }
        Ok(())
    }

    /// Give `job` up (the service is stopping, or its task was cancelled; dropping the job
    /// stops its task): its record is left as if never read, so that the next sync, or the
    /// next start, takes it up again.
    pub fn abandon(&mut self, job: &Job) {
        self.give_up(&job.then);
    }

    fn give_up(&mut self, then: &Then) {
        self.under_way = None;
        match then {
            Then::Apply { message, .. } => {
                tracing::info!(offset = message.offset(), "changelog record left unapplied");
                self.changelog.point_back(message);
            }
            Then::Forward { message, round } => {
                tracing::info!(offset = message.offset(), %round, "round left unforwarded");
                self.labels_back(message);
            }
        }
    }

    /// Point the labels reader back at `message`, not forwarded; the same for the labels.
    fn labels_back(&mut self, message: &Record) {
        self.labels_forward_next = self.labels_forward_next.min(message.offset());
        self.labels.point_back(message);
    }

    /// The log's (low, high) watermarks; whether the broker answered is the health flag.
    async fn log_bounds(&mut self, topic: &str) -> Result<(i64, i64), ServeError> {
        let bounds = self
            .watermarks
            .watermarks(topic, 0, Duration::from_secs(5))
            .await;
        self.health.set_broker(match &bounds {
            Ok(_) => {
                crate::broker::broker_answered();
                None
            }
            Err(error) => Some(
                crate::broker::broker_trouble()
                    .map_or_else(|| error.to_string(), |trouble| trouble.reason),
            ),
        });
        if bounds.is_ok() {
            self.trouble.log_found();
        }
        bounds.map_err(ServeError::from)
    }

    /// Apply changelog records up to the log's current end, or up to one that needs a [`Job`]
    /// first (returned).
    pub async fn catch_up(
        &mut self,
        replica: &mut Replica,
        stats: &mut Stats,
    ) -> Result<Option<Box<Job>>, ServeError> {
        let topic = replica.topics().changelog.clone();
        self.changelog.check(&topic, self.stop.phase())?;
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
            let message = self
                .changelog
                .next(&topic, next, "reading the changelog")
                .await?;
            if let Some(job) = self.apply_record(replica, message, stats)? {
                return Ok(Some(job));
            }
        }
        Ok(None)
    }

    /// Apply a changelog record the reader handed out — unless its labelled material is to be
    /// encoded first, off the loop (see [`Replica::material_ahead`]): then the job that
    /// encodes it is returned, and [`LogSync::finish`] applies it. Once the drain has begun no
    /// job starts: the reader is pointed back at the record, which stays unapplied
    /// ([`ServeError::StoppedWhile`]).
    pub fn apply_record(
        &mut self,
        replica: &mut Replica,
        message: Record,
        stats: &mut Stats,
    ) -> Result<Option<Box<Job>>, ServeError> {
        // Decoded once, for the encoding ahead and for applying.
        let record = ChangeRecord::decode(&message.payload);
        if let Some((encoder, texts)) = replica.material_ahead(&record) {
            if self.stop.phase() != Phase::Running {
                self.changelog.point_back(&message);
                return Err(ServeError::StoppedWhile(
                    "encoding a round's labelled material ahead of applying it",
                ));
            }
            return Ok(Some(Job::encode(encoder, texts, message, record)));
        }
        let created = message.timestamp_ms;
        replica.apply_decoded(message.offset(), record, created, stats)?;
        Ok(None)
    }
}

/// Where a sync stands.
pub enum Synced {
    /// Every label event published before the sync began is applied (or, from
    /// [`LogSync::sync_or_tolerate`], the logs were out of reach: the labels known are used).
    Done,
    /// Stopped at a record that needs this job first.
    Waiting(Box<Job>),
    /// Cut short by the drain.
    Stopped,
}
