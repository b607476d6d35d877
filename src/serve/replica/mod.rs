//! One replica of the graph: the engine, the store it is saved in, and how far it has read the
//! changelog. It changes only by applying changelog records ([`apply`], pure), each saved with
//! its offsets in one store batch; [`sync`] keeps it up to date with the labels topic and the
//! changelog.

mod apply;
pub mod job;
mod pass_marks;
mod report;
pub mod sync;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use apply::{apply, Cursor, Effect, LogTopics};
pub use pass_marks::PassMarks;
use report::label_span;

use super::stats::Stats;
use super::ServeError;
use crate::broker::{Outgoing, RecordLimit};
use crate::engine::embedding::TextEncoder;
use crate::state::codec::{Change, ChangeDecodeError, ChangeRecord, LabelOutcome};
use crate::state::State;
use crate::store::{StateStore, StoreError};

/// When the snapshot is replaced.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPolicy {
    /// Once this many updates are logged since the last snapshot…
    pub every: u64,
    /// …and at most this often.
    pub min_interval: Duration,
}

/// This instance's copy of the replicated state, kept up to date by applying the changelog
/// (`apply.rs`, `sync.rs`) and saved in its store. Changed only through its methods: the loop
/// reads it.
pub struct Replica {
    /// The replicated state: the engine and the discovery pool.
    state: State,
    store: Box<dyn StateStore>,
    cursor: Cursor,
    topics: LogTopics,
    /// This instance's id in changelog records (stable across restarts: kept in the store).
    instance: String,
    /// Learn records (batches) this instance wrote and has not yet read back from the
    /// changelog.
    pending_learns: usize,
    policy: SnapshotPolicy,
    last_snapshot: Instant,
    dead_letter_topic: String,
    /// The largest dead letter the producer sends.
    dead_letter_limit: RecordLimit,
    /// Dead letters for label events refused in the log, for the loop to deliver.
    outbox: Vec<Outgoing>,
    /// When a community pass falls due, here or elsewhere.
    pass_marks: PassMarks,
}

impl Replica {
    /// The replicated state: the engine and the discovery pool.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// How far the changelog and the labels topic are applied, and which texts are learned.
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// This instance's id in changelog records.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Learn records this instance wrote and has not yet read back (each holds an intake
    /// place).
    pub fn pending_learns(&self) -> usize {
        self.pending_learns
    }

    /// A learn record was handed to the producer.
    pub fn learn_record_sent(&mut self) {
        self.pending_learns += 1;
    }

    /// A learn record the broker refused: it will never be read back.
    pub fn learn_record_refused(&mut self) {
        self.pending_learns = self.pending_learns.saturating_sub(1);
    }

    pub fn new(
        state: State,
        store: Box<dyn StateStore>,
        cursor: Cursor,
        topics: LogTopics,
        instance: String,
        policy: SnapshotPolicy,
        dead_letter_topic: String,
    ) -> Self {
        Self {
            state,
            store,
            cursor,
            topics,
            instance,
            pending_learns: 0,
            policy,
            last_snapshot: Instant::now(),
            dead_letter_topic,
            dead_letter_limit: RecordLimit::DEFAULT,
            outbox: Vec::new(),
            pass_marks: PassMarks::default(),
        }
    }

    /// Run a community pass after every `every` pooled texts: the instance whose record
    /// crosses the mark runs it (every replica holds the same pool there).
    pub fn with_passes_every(mut self, every: Option<u64>) -> Self {
        self.pass_marks = PassMarks::every(every);
        self
    }

    /// Dead letters no larger than `limit` (the producer's `message.max.bytes`).
    pub fn with_dead_letter_limit(mut self, limit: RecordLimit) -> Self {
        self.dead_letter_limit = limit;
        self
    }

    /// When a community pass falls due, here or elsewhere: the loop takes each crossing once.
    pub fn pass_marks(&mut self) -> &mut PassMarks {
        &mut self.pass_marks
    }

    /// The store the replica is saved in.
    #[cfg(test)]
    pub fn store(&self) -> &dyn StateStore {
        self.store.as_ref()
    }

    pub fn topics(&self) -> &LogTopics {
        &self.topics
    }

    /// With the embedding signal and an encoder that keeps material, what the changelog
    /// record `payload` will ask the encoder for when applied — a round's names and examples,
    /// added examples — if it is a label event this replica has not applied yet (see
    /// [`crate::state::Update::material`]).
    pub fn material_ahead(
        &self,
        record: &Result<ChangeRecord, ChangeDecodeError>,
    ) -> Option<(Arc<dyn TextEncoder>, Vec<String>)> {
        let encoder = self
            .state
            .engine()
            .analyzer()
            .material_encoder()
            .filter(|encoder| encoder.keeps_material())?;
        let Ok(ChangeRecord {
            change:
                Change::Label {
                    offset,
                    outcome: LabelOutcome::Apply(update),
                    ..
                },
            ..
        }) = record
        else {
            return None;
        };
        if *offset < self.cursor.labels_next {
            return None; // a copy: applying it changes nothing
        }
        let texts = update.material(self.state.engine());
        (!texts.is_empty()).then_some((encoder, texts))
    }

    /// [`Replica::apply_decoded`] of the record's bytes.
    #[cfg(test)]
    pub fn apply_change(
        &mut self,
        offset: i64,
        payload: &[u8],
        created_ms: Option<i64>,
        stats: &mut Stats,
    ) -> Result<(), ServeError> {
        self.apply_decoded(offset, ChangeRecord::decode(payload), created_ms, stats)
    }

    /// Apply the changelog record at `offset`, as decoded (or found unreadable) (see
    /// [`apply`]), save it with its offsets in one batch, and count, log and dead-letter what
    /// it asks for.
    pub fn apply_decoded(
        &mut self,
        offset: i64,
        record: Result<ChangeRecord, ChangeDecodeError>,
        created_ms: Option<i64>,
        stats: &mut Stats,
    ) -> Result<(), ServeError> {
        // Another build's record: applying on (skipping it) would make this replica's state
        // differ from the others'. Stop, and say how to recover.
        if let Err(error) = &record {
            if error.is_version() && offset >= self.cursor.changelog_next {
                return Err(ServeError::ChangelogVersion {
                    topic: self.topics.changelog.clone(),
                    offset,
                    error: error.clone(),
                });
            }
        }
        let span = label_span(&record);
        if offset > self.cursor.changelog_next {
            // Only retention removing records may do this; anything else skipping one is a bug
            // this line makes visible.
            tracing::warn!(
                from = self.cursor.changelog_next,
                to = offset,
                "changelog records skipped"
            );
        }
        let pooled_before = self.state.pool().pushed();
        let started = Instant::now();
        let applied = span.in_scope(|| {
            apply(
                &mut self.cursor,
                &mut self.state,
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
        let pooled = self.state.pool().pushed();
        self.pass_marks.note(pooled_before, pooled, applied.mine);
        if applied.mine {
            self.own_record_applied(&applied.effect, created_ms, stats);
        }
        let _entered = span.enter();
        let held = started.elapsed();
        self.report(offset, applied.effect, applied.mine, held, stats);
        Ok(self.maybe_snapshot()?)
    }

    /// Bookkeeping for a record this instance wrote: a learn record back from the log frees
    /// its intake place.
    fn own_record_applied(&mut self, effect: &Effect, created_ms: Option<i64>, stats: &mut Stats) {
        if matches!(effect, Effect::Learned { .. }) {
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
    }

    pub fn take_outbox(&mut self) -> Vec<Outgoing> {
        std::mem::take(&mut self.outbox)
    }

    /// Replace the snapshot once enough updates are logged, at most every `min_interval`.
    fn maybe_snapshot(&mut self) -> Result<(), StoreError> {
        if self.store.log_len() >= self.policy.every
            && self.last_snapshot.elapsed() >= self.policy.min_interval
        {
            self.last_snapshot = Instant::now();
            self.store.snapshot(&self.state.to_snapshot())?;
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
            self.store.snapshot(&self.state.to_snapshot())?;
        }
        self.store.flush()
    }
}

/// Wall-clock milliseconds since the epoch (0 if the clock is before it).
pub(crate) use crate::clock::now_ms;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::embedding::tests::TopicEncoder;
    use crate::engine::{Engine, EngineConfig, NewLabel};
    use crate::events::decode::Reason;
    use crate::position::Position;
    use crate::state::codec::{learn_records, LearnedText, RejectStage, CHANGELOG_VERSION};
    use crate::state::Update;
    use crate::store::MemoryStore;
    use crate::telemetry::metrics::Metrics;

    fn replica(every: u64) -> Replica {
        let topics = LogTopics {
            changelog: "cl".into(),
            labels: "lb".into(),
            texts: "tx".into(),
        };
        let policy = SnapshotPolicy {
            every,
            min_interval: Duration::ZERO,
        };
        Replica::new(
            State::new(Engine::new(EngineConfig::default()), 100),
            Box::new(MemoryStore::default()),
            Cursor::default(),
            topics,
            "me".into(),
            policy,
            "dlq".into(),
        )
    }

    fn label(origin: &str, offset: i64, outcome: LabelOutcome) -> Vec<u8> {
        ChangeRecord {
            version: CHANGELOG_VERSION,
            origin: origin.into(),
            change: Change::Label {
                offset,
                key: Some(b"k".to_vec()),
                payload: b"{...}".to_vec(),
                outcome,
            },
        }
        .encode()
    }

    fn round(id: &str) -> LabelOutcome {
        LabelOutcome::Apply(Update::Round {
            round: "r1".into(),
            labels: vec![NewLabel {
                id: id.into(),
                name: None,
                description: None,
                examples: vec![format!("{id} words about {id}")],
            }],
        })
    }

    fn stats() -> Stats {
        Stats::new(Arc::new(Metrics::new()))
    }

    /// The topic encoder, as if it kept what it encodes.
    struct Keeping;

    impl TextEncoder for Keeping {
        fn encode(&self, text: &str) -> Result<Vec<f32>, crate::engine::embedding::EncodeError> {
            TopicEncoder.encode(text)
        }
        fn keeps_material(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_round_not_yet_applied_is_encoded_ahead_once() {
        let mut replica = replica(100);
        let record = label("other", 0, round("astronomy"));
        let ahead = |replica: &Replica| replica.material_ahead(&ChangeRecord::decode(&record));
        let signal = |replica: &mut Replica, encoder: Arc<dyn TextEncoder>| {
            let state = std::mem::replace(
                &mut replica.state,
                State::new(Engine::new(EngineConfig::default()), 100),
            );
            let (engine, pool) = state.into_parts();
            replica.state = State::from_parts(engine.with_encoder(encoder).0, pool);
        };
        assert!(
            ahead(&replica).is_none(),
            "without the embedding signal there is nothing to encode"
        );
        signal(&mut replica, Arc::new(TopicEncoder));
        assert!(
            ahead(&replica).is_none(),
            "an encoder that keeps nothing would encode it twice"
        );
        signal(&mut replica, Arc::new(Keeping));
        let (_, texts) = ahead(&replica).unwrap();
        assert_eq!(texts, ["astronomy words about astronomy"]);
        replica
            .apply_change(0, &record, None, &mut stats())
            .unwrap();
        let copy = label("me", 0, round("astronomy"));
        assert!(
            replica
                .material_ahead(&ChangeRecord::decode(&copy))
                .is_none(),
            "a copy changes nothing"
        );
        assert!(replica
            .material_ahead(&ChangeRecord::decode(b"not a record"))
            .is_none());
    }

    #[test]
    fn only_the_forwarder_dead_letters_a_refused_label_event() {
        let mut replica = replica(100);
        let mut stats = stats();
        let refused = || LabelOutcome::Reject {
            stage: RejectStage::Decode,
            reason: Reason::MalformedJson,
            message: "expected value".into(),
        };
        replica
            .apply_change(0, &label("other", 0, refused()), None, &mut stats)
            .unwrap();
        assert!(
            replica.take_outbox().is_empty(),
            "another instance forwarded it"
        );
        replica
            .apply_change(1, &label("me", 1, refused()), None, &mut stats)
            .unwrap();
        let outbox = replica.take_outbox();
        assert_eq!(outbox.len(), 1);
        assert_eq!(outbox[0].topic, "dlq");
        assert_eq!(outbox[0].payload, b"{...}");
        let header = |name: &str| {
            outbox[0]
                .headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(header("gorag.reason").as_deref(), Some("malformed_json"));
        assert_eq!(header("__connect.errors.topic").as_deref(), Some("lb"));
        assert_eq!(header("__connect.errors.offset").as_deref(), Some("1"));
        assert_eq!(stats.summary().label_events, 2);
        assert_eq!(stats.summary().dead_letters.get("malformed_json"), Some(&2));
    }

    /// The state `replica`'s store brings back.
    fn restored(replica: &Replica) -> State {
        let mut saved = replica.store().load().unwrap();
        State::restore(
            saved.snapshot.take(),
            &saved.log,
            EngineConfig::default(),
            100,
        )
        .unwrap()
    }

    #[test]
    fn own_learn_records_free_their_place_and_everything_is_saved_with_its_offsets() {
        let mut replica = replica(100);
        let mut stats = stats();
        replica
            .apply_change(0, &label("me", 0, round("a")), None, &mut stats)
            .unwrap();
        let analysis = replica
            .state
            .engine()
            .analyzer()
            .analyze("a words about a and more");
        let text = |offset| LearnedText {
            position: Position::new(1, offset),
            analysis: analysis.clone(),
            label: "a".into(),
            confident: true,
            note: None,
        };
        replica.pending_learns = 2;
        let (mine, _) = learn_records("me", &[text(7), text(8)], usize::MAX)
            .unwrap()
            .remove(0);
        replica.apply_change(1, &mine, Some(0), &mut stats).unwrap();
        assert_eq!(replica.pending_learns, 1);
        // Another instance's record, with a copy of text 8: no place of ours, one copy skipped.
        let (theirs, _) = learn_records("other", &[text(8), text(9)], usize::MAX)
            .unwrap()
            .remove(0);
        replica.apply_change(2, &theirs, None, &mut stats).unwrap();
        assert_eq!(replica.pending_learns, 1);
        assert_eq!(stats.summary().relearn_skipped, 1);

        let saved = replica.store().load().unwrap();
        assert_eq!(saved.log.len(), 4, "the round and three texts");
        assert_eq!(saved.offsets.next("cl", 0), Some(3));
        assert_eq!(saved.offsets.next("tx", 1), Some(10));
        assert_eq!(saved.offsets.next("lb", 0), Some(1));
        assert_eq!(restored(&replica).digest(), replica.state.digest());
    }

    #[test]
    fn the_snapshot_replaces_the_log_once_it_is_long_enough() {
        let mut replica = replica(2);
        let mut stats = stats();
        replica
            .apply_change(0, &label("me", 0, round("a")), None, &mut stats)
            .unwrap();
        assert_eq!(replica.store().log_len(), 1);
        replica
            .apply_change(1, &label("me", 1, round("b")), None, &mut stats)
            .unwrap();
        assert_eq!(replica.store().log_len(), 0, "snapshot taken at 2");
        assert!(replica.store().load().unwrap().snapshot.is_some());
        assert_eq!(restored(&replica).engine().labels().len(), 2);
        // Behind the cursor (read again after a seek): nothing saved, nothing changed.
        replica
            .apply_change(1, &label("me", 1, round("c")), None, &mut stats)
            .unwrap();
        assert_eq!(replica.state.engine().labels().len(), 2);
    }
}
