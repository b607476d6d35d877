//! One replica of the graph: the engine, the store it is saved in, and how far it has read the
//! changelog. It changes only by applying changelog records ([`apply`], pure), each saved with
//! its offsets in one store batch; [`sync`] keeps it up to date with the labels topic and the
//! changelog.

mod apply;
pub mod sync;

use std::time::{Duration, Instant};

pub use apply::{apply, engine_rejection, Cursor, Effect, LogTopics};

use super::changelog::{Change, ChangeRecord, LabelOutcome};
use super::kafka::Outgoing;
use super::outputs;
use super::stats::Stats;
use crate::engine::update::Update;
use crate::engine::Engine;
use crate::events::InputPosition;
use crate::store::{StateStore, StoreError};
use crate::telemetry::metrics::{Metrics, StateLabel};

/// When the snapshot is replaced.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPolicy {
    /// Once this many updates are logged since the last snapshot…
    pub every: u64,
    /// …and at most this often.
    pub min_interval: Duration,
}

pub struct Replica {
    pub engine: Engine,
    store: Box<dyn StateStore>,
    pub cursor: Cursor,
    topics: LogTopics,
    /// This instance's id in changelog records (stable across restarts: kept in the store).
    pub instance: String,
    /// Learn records (batches) this instance wrote and has not yet read back from the
    /// changelog.
    pub pending_learns: usize,
    policy: SnapshotPolicy,
    last_snapshot: Instant,
    dead_letter_topic: String,
    /// Dead letters for label events refused in the log, for the loop to deliver.
    outbox: Vec<Outgoing>,
}

impl Replica {
    pub fn new(
        engine: Engine,
        store: Box<dyn StateStore>,
        cursor: Cursor,
        topics: LogTopics,
        instance: String,
        policy: SnapshotPolicy,
        dead_letter_topic: String,
    ) -> Self {
        Self {
            engine,
            store,
            cursor,
            topics,
            instance,
            pending_learns: 0,
            policy,
            last_snapshot: Instant::now(),
            dead_letter_topic,
            outbox: Vec::new(),
        }
    }

    pub fn topics(&self) -> &LogTopics {
        &self.topics
    }

    /// Apply the changelog record at `offset` (see [`apply`]), save it with its offsets in one
    /// batch, and count, log and dead-letter what it asks for.
    pub fn apply_change(
        &mut self,
        offset: i64,
        payload: &[u8],
        created_ms: Option<i64>,
        stats: &mut Stats,
    ) -> Result<(), StoreError> {
        let record = ChangeRecord::decode(payload);
        let span = label_span(&record);
        let applied = span.in_scope(|| {
            apply(
                &mut self.cursor,
                &mut self.engine,
                &self.topics,
                &self.instance,
                offset,
                record,
            )
        });
        if applied.effect == Effect::Behind {
            return Ok(());
        }
        self.store.record(&applied.updates, &applied.offsets)?;
        // One of this instance's learn records came back: its intake place is free again.
        if applied.mine && matches!(applied.effect, Effect::Learned { .. }) {
            self.pending_learns = self.pending_learns.saturating_sub(1);
            // From the record's creation to its application here: how long a learn step
            // holds its intake place.
            if let Some(created) = created_ms {
                stats.stage(
                    "learn_round_trip",
                    (now_ms() - created).max(0) as f64 / 1000.0,
                );
            }
        }
        let _entered = span.enter();
        match applied.effect {
            Effect::Behind => {}
            Effect::Unreadable(error) => {
                tracing::error!(offset, %error, "unreadable changelog record skipped");
            }
            Effect::Copy => {}
            Effect::Learned {
                copies, refused, ..
            } => {
                for _ in 0..copies {
                    stats.relearn_skipped();
                }
                for error in refused {
                    tracing::warn!(%error, "online indexing refused");
                }
            }
            Effect::Label {
                labels_offset,
                report,
                ..
            } => {
                stats.label_event();
                tracing::info!(
                    offset = labels_offset,
                    labels_added = report.labels_added,
                    texts_indexed = report.texts_indexed,
                    label_version = self.engine.label_version(),
                    "label event applied"
                );
                self.gauges(stats.metrics());
            }
            Effect::LabelRejected {
                labels_offset,
                key,
                payload,
                stage,
                rejection,
            } => {
                stats.label_event();
                tracing::warn!(offset = labels_offset, %rejection, "label event rejected");
                stats.dead_letter(rejection.reason);
                // One dead letter per event: from the instance whose forward counted.
                if applied.mine {
                    let position = InputPosition {
                        topic: self.topics.labels.clone(),
                        partition: 0,
                        offset: labels_offset,
                    };
                    self.outbox.push(outputs::dead_letter(
                        &self.dead_letter_topic,
                        &position,
                        key,
                        payload,
                        stage.as_str(),
                        &rejection,
                    ));
                }
                self.gauges(stats.metrics());
            }
        }
        self.maybe_snapshot()
    }

    /// Dead letters waiting to be delivered.
    pub fn take_outbox(&mut self) -> Vec<Outgoing> {
        std::mem::take(&mut self.outbox)
    }

    /// Replace the snapshot once enough updates are logged, at most every `min_interval`.
    fn maybe_snapshot(&mut self) -> Result<(), StoreError> {
        if self.store.log_len() >= self.policy.every
            && self.last_snapshot.elapsed() >= self.policy.min_interval
        {
            self.last_snapshot = Instant::now();
            self.store.snapshot(&self.engine.to_state())?;
        }
        Ok(())
    }

    /// Make everything applied so far durable.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.store.flush()
    }

    /// At shutdown: a snapshot of what was applied (if anything was logged since the last
    /// one), flushed.
    pub fn save(&mut self) -> Result<(), StoreError> {
        if self.store.log_len() > 0 {
            self.store.snapshot(&self.engine.to_state())?;
        }
        self.store.flush()
    }

    /// Graph size and labels, as gauges.
    pub fn gauges(&self, metrics: &Metrics) {
        let graph = self.engine.graph();
        metrics.graph_nodes.set(graph.node_count() as i64);
        metrics.graph_edges.set(graph.edge_count() as i64);
        let active = self.engine.active_labels().count();
        let total = self.engine.labels().len();
        for (state, count) in [("active", active), ("retired", total - active)] {
            metrics
                .labels
                .get_or_create(&StateLabel {
                    state: state.into(),
                })
                .set(count as i64);
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Label events get a span of their own (learn records are too many to trace).
fn label_span(record: &Result<ChangeRecord, String>) -> tracing::Span {
    let Ok(ChangeRecord {
        change: Change::Label {
            offset, outcome, ..
        },
        ..
    }) = record
    else {
        return tracing::Span::none();
    };
    let (event, round) = match outcome {
        LabelOutcome::Apply(Update::Round { round, .. }) => ("round", round.as_str()),
        LabelOutcome::Apply(Update::AddExamples { .. }) => ("add_examples", ""),
        LabelOutcome::Apply(Update::RetireLabel { .. }) => ("retire_label", ""),
        LabelOutcome::Apply(Update::Learn { .. }) => ("learn", ""),
        LabelOutcome::Reject { .. } => ("rejected", ""),
    };
    tracing::info_span!("label_event", offset, event, round)
}
