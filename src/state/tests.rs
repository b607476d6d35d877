//! The replicated state: the pool's updates, the digest over engine and pool, and snapshots of
//! every layout older builds wrote.

use std::collections::VecDeque;

use serde::Serialize;

use super::{Snapshot, State, Update};
use crate::discovery::{PooledText, Unexplained};
use crate::engine::index::{IndexDoc, SpreadState};
use crate::engine::state::{EngineState, GraphState};
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
    let analysis = state.engine().analyze("a yacht race in a breeze");
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

/// The fields every snapshot layout begins with; followed by its pool as it was written
/// (postcard writes a pair of structs as one with both sets of fields).
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

/// The pool of snapshots written before arrival scores existed.
type PoolV1<'a> = (&'a VecDeque<PooledText>, usize, u64);

fn decoded(bytes: &[u8]) -> (EngineState, crate::discovery::Pool) {
    Snapshot::decode(bytes).unwrap().into_parts()
}

#[test]
fn snapshots_keep_arrival_scores_and_older_layouts_still_read() {
    let state = pooling_at(0.07);
    let snapshot = state.to_snapshot();
    let bytes = postcard::to_stdvec(&snapshot).unwrap();
    assert_eq!(Snapshot::decode(&bytes).unwrap(), snapshot);
    let (engine, pool) = snapshot.into_parts();
    assert_eq!(pool.texts()[0].arrival_score, Some(0.07));

    let old_pool: PoolV1 = (pool.texts(), 5_000, pool.pushed());
    let old = (SnapshotBase::of(&engine), old_pool);
    let (old_engine, old_pool) = decoded(&postcard::to_stdvec(&old).unwrap());
    assert_eq!(old_pool.len(), 1);
    assert_eq!(old_pool.pushed(), 1);
    assert_eq!(old_pool.texts()[0].id, "t1");
    assert_eq!(old_pool.texts()[0].arrival_score, None);
    assert_eq!(old_engine.graph, engine.graph);
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
fn snapshots_keep_the_label_spread_and_older_layouts_read_without_it() {
    let mut state = pooling_at(0.07);
    let analysis = state
        .engine()
        .analyze("the volcano erupted near the village");
    let learn = Update::Learn {
        analysis,
        label: "geology".into(),
        confident: true,
    };
    state.apply(&learn).unwrap();
    let (engine, pool) = state.to_snapshot().into_parts();
    assert_eq!(engine.spread.pending_texts, 1);

    // The layout before the label spread: everything up to the pool.
    let old = (SnapshotBase::of(&engine), &pool);
    let (old_engine, old_pool) = decoded(&postcard::to_stdvec(&old).unwrap());
    assert_eq!(old_engine.spread, SpreadState::default());
    assert_eq!(old_engine.index, engine.index);
    assert_eq!(old_pool, pool);
}

#[test]
fn a_snapshot_written_before_confidence_outcomes_reads_with_none() {
    let mut state = pooling_at(0.07);
    let more = Update::AddExamples {
        label: "geology".into(),
        examples: vec!["lava flows from the crater of the volcano".into()],
    };
    state.apply(&more).unwrap();
    let (engine, pool) = state.to_snapshot().into_parts();
    assert!(!engine.outcomes.is_empty());
    // The layout before outcomes: everything up to the label spread.
    let old = (SnapshotBase::of(&engine), &pool, &engine.spread);
    let (old_engine, _) = decoded(&postcard::to_stdvec(&old).unwrap());
    assert!(old_engine.outcomes.is_empty());
    assert_eq!(
        (&old_engine.index, &old_engine.spread),
        (&engine.index, &engine.spread)
    );
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
