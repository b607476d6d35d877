//! The replicated state: the pool's updates, the digest over engine and pool, and snapshots
//! (this layout read back; older ones refused).

use serde::Serialize;

use super::codec::STORE_FORMAT;
use super::{Snapshot, State, Update};
use crate::discovery::{PooledText, Unexplained};
use crate::engine::index::IndexDoc;
use crate::engine::saved::{EngineState, GraphState};
use crate::engine::tfidf::CorpusStats;
use crate::engine::{Engine, EngineConfig, LabelInfo, NewLabel};

const CAPACITY: usize = 5_000;

fn round() -> Update {
    Update::Round {
        round: "r1".into(),
        labels: vec![NewLabel {
            id: "geology".into(),
            name: None,
            description: None,
            examples: vec!["lava flows from the volcano".into()],
        }],
    }
}

fn after_round() -> State {
    let mut state = State::new(Engine::new(EngineConfig::default()), CAPACITY);
    state.apply(&round()).unwrap();
    state
}

/// A state after round 1, with one text pooled at `arrival_score`.
fn pooling_at(arrival_score: f64) -> State {
    let mut state = after_round();
    let analysis = state
        .engine()
        .analyzer()
        .analyze("a yacht race in a breeze");
    let text = PooledText::new(
        "t1",
        "a yacht race in a breeze",
        &analysis,
        "geology",
        Unexplained::WeakScore,
        None,
    );
    let pooled = Update::Pooled {
        text,
        arrival_score: Some(arrival_score),
    };
    state.apply(&pooled).unwrap();
    state
}

/// The fields every snapshot layout began with: alone, the layout before the pool.
#[derive(Serialize)]
struct SnapshotBase<'a> {
    graph: &'a GraphState,
    stats: &'a CorpusStats,
    labels: &'a [LabelInfo],
    index: &'a [IndexDoc],
    label_version: u64,
    last_round: &'a Option<String>,
}

impl<'a> SnapshotBase<'a> {
    fn of(state: &'a EngineState) -> Self {
        Self {
            graph: &state.graph,
            stats: &state.stats,
            labels: &state.labels,
            index: &state.index,
            label_version: state.label_version,
            last_round: &state.last_round,
        }
    }
}

#[test]
fn snapshots_keep_arrival_scores_and_the_label_spread() {
    let mut state = pooling_at(0.07);
    let analysis = state
        .engine()
        .analyzer()
        .analyze("the volcano erupted near the village");
    let learn = Update::Learn {
        analysis,
        label: "geology".into(),
        confident: true,
    };
    state.apply(&learn).unwrap();
    let snapshot = state.to_snapshot();
    let bytes = snapshot.encode().unwrap();
    assert_eq!(Snapshot::decode(&bytes, STORE_FORMAT).unwrap(), snapshot);
    let (engine, pool) = snapshot.into_parts();
    assert_eq!(pool.texts()[0].arrival_score, Some(0.07));
    assert_eq!(engine.spread.pending_texts, 1);
}

/// Layouts older than the oldest supported one are refused, not read wrongly: the one before
/// the pool, and the last dropped (everything up to the label spread, no outcomes), which
/// store format 2 held bare (written here with the engine's own serde layout, as those builds
/// wrote them).
#[test]
fn older_snapshot_layouts_are_refused() {
    let mut state = pooling_at(0.07);
    let more = Update::AddExamples {
        label: "geology".into(),
        examples: vec!["lava flows from the crater of the volcano".into()],
    };
    state.apply(&more).unwrap();
    let (engine, pool) = state.to_snapshot().into_parts();
    assert!(!engine.outcomes.is_empty());
    let before_the_pool = postcard::to_stdvec(&SnapshotBase::of(&engine)).unwrap();
    assert!(Snapshot::decode(&before_the_pool, 2).is_err());
    let before_outcomes =
        postcard::to_stdvec(&(SnapshotBase::of(&engine), &pool, &engine.spread)).unwrap();
    assert!(Snapshot::decode(&before_outcomes, 2).is_err());
}

#[test]
fn the_digest_covers_the_pool_and_survives_a_snapshot() {
    let state = pooling_at(0.07);
    let restored = State::from_snapshot(EngineConfig::default(), CAPACITY, state.to_snapshot());
    assert_eq!(state.digest(), restored.unwrap().digest());
    // The same engine without the pooled text (or with another arrival score) is another state.
    assert_ne!(state.digest(), after_round().digest());
    assert_ne!(state.digest(), pooling_at(0.08).digest());
    assert_eq!(state.engine().digest(), after_round().engine().digest());
}

#[test]
fn a_correction_drops_the_text_s_pooled_copy() {
    let mut state = pooling_at(0.07);
    assert_eq!(state.pool().len(), 1);
    let correct = Update::Correct {
        text_id: "t1".into(),
        label: "geology".into(),
        text: "a yacht race in a breeze".into(),
    };
    state.apply(&correct).unwrap();
    assert!(state.pool().is_empty());
}
