//! Restoring an engine from its state: the same engine, and snapshots of older layouts still
//! read.

use std::collections::VecDeque;

use serde::Serialize;

use super::three_topics;
use crate::discovery::{PooledText, Unexplained};
use crate::engine::graph;
use crate::engine::index::{IndexDoc, SpreadState};
use crate::engine::rank;
use crate::engine::state::{self, EngineState, GraphState};
use crate::engine::tfidf::CorpusStats;
use crate::engine::update::{self, Update};
use crate::engine::{Engine, EngineConfig, LabelInfo, NewLabel};

#[test]
fn restored_state_is_the_same_engine() {
    let mut engine = three_topics(EngineConfig::default());
    for text in [
        "the telescope saw a comet near the galaxy",
        "a new recipe for baking sourdough bread",
        "the striker scored a late goal",
    ] {
        let analysis = engine.analyze(text);
        let label = engine.retrieve(&analysis).unwrap().graph_choice;
        engine.learn(&analysis, &label, true);
    }
    let bytes = postcard::to_stdvec(&engine.to_state()).unwrap();
    let state: state::EngineState = postcard::from_bytes(&bytes).unwrap();
    let mut restored = Engine::from_state(EngineConfig::default(), state).unwrap();
    assert_eq!(restored.digest(), engine.digest());
    assert_eq!(restored.to_state(), engine.to_state());

    // Both go on identically: same retrievals, same learning, same digest.
    for text in [
        "comet orbit and galaxy telescope with bread",
        "goal keeper saves a penalty in the stadium",
    ] {
        let a = engine.analyze(text);
        let b = restored.analyze(text);
        assert_eq!(a, b);
        let ra = engine.retrieve(&a).unwrap();
        assert_eq!(ra, restored.retrieve(&b).unwrap());
        engine
            .apply(&update::Update::Learn {
                analysis: a,
                label: ra.graph_choice.clone(),
                confident: true,
            })
            .unwrap();
        restored
            .apply(&update::Update::Learn {
                analysis: b,
                label: ra.graph_choice,
                confident: true,
            })
            .unwrap();
    }
    assert_eq!(restored.digest(), engine.digest());
}

#[test]
fn a_restore_between_evictions_behaves_like_an_engine_that_never_stopped() {
    let config = EngineConfig {
        ranking: rank::RankingConfig {
            seen_capacity: 3,
            tentative_capacity: 2,
            ..Default::default()
        },
        ..EngineConfig::default()
    };
    let mut live = three_topics(config.clone());
    let texts: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "telescope oven goal comet{i} crust{} stadium{}",
                i % 3,
                i % 4
            )
        })
        .collect();
    let mut restored: Option<Engine> = None;
    for (i, text) in texts.iter().enumerate() {
        if i == 5 {
            let state = live.to_state();
            restored = Some(Engine::from_state(config.clone(), state).unwrap());
        }
        for engine in std::iter::once(&mut live).chain(restored.as_mut()) {
            let analysis = engine.analyze(text);
            let retrieval = engine.retrieve(&analysis).unwrap();
            let label = retrieval.graph_choice.clone();
            // Every third decision unsure: both kinds of classified text are evicted.
            engine.learn(&analysis, &label, i % 3 != 0);
        }
    }
    let restored = restored.unwrap();
    assert_eq!(restored.digest(), live.digest());
    assert_eq!(live.index().seen_count(), 3);
    assert_eq!(live.index().tentative_count(), 2);
    // The last query shares words only with classified texts: tentative ones vote.
    for query in [
        "comet3 crust1 stadium2",
        "telescope goal oven",
        "comet9 crust0",
    ] {
        let a = live.retrieve(&live.analyze(query)).unwrap();
        let b = restored.retrieve(&restored.analyze(query)).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn digest_tells_states_apart() {
    let engine = three_topics(EngineConfig::default());
    let mut other = engine.clone();
    assert_eq!(engine.digest(), other.digest());
    other.retire_label("cooking").unwrap();
    assert_ne!(engine.digest(), other.digest());
}

#[test]
fn corrupt_graph_state_is_refused() {
    let engine = three_topics(EngineConfig::default());
    let mut state = engine.to_state();
    state
        .graph
        .edges
        .push((0, 1_000_000, graph::EdgeCost::single(0.5)));
    assert!(matches!(
        Engine::from_state(EngineConfig::default(), state),
        Err(state::StateError::DanglingEdge(_))
    ));
}

/// An engine with one label and one pooled text whose arrival score is known.
fn state_round() -> Update {
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

/// An engine after round 1, with one text pooled at `arrival_score`.
fn engine_pooling_at(arrival_score: f64) -> Engine {
    let mut engine = Engine::new(EngineConfig::default());
    engine.apply(&state_round()).unwrap();
    let analysis = engine.analyze("a yacht race in a breeze");
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
    engine.apply(&pooled).unwrap();
    engine
}

fn engine_with_a_pooled_text() -> Engine {
    engine_pooling_at(0.07)
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

#[test]
fn snapshots_keep_arrival_scores_and_older_layouts_still_read() {
    let engine = engine_with_a_pooled_text();
    let state = engine.to_state();
    let bytes = postcard::to_stdvec(&state).unwrap();
    let decoded = EngineState::decode(&bytes).unwrap();
    assert_eq!(decoded.pool.texts()[0].arrival_score, Some(0.07));
    assert_eq!(decoded, state);

    let pool: PoolV1 = (state.pool.texts(), 5_000, state.pool.pushed());
    let old = (SnapshotBase::of(&state), pool);
    let old_bytes = postcard::to_stdvec(&old).unwrap();
    let decoded = EngineState::decode(&old_bytes).unwrap();
    assert_eq!(decoded.pool.len(), 1);
    assert_eq!(decoded.pool.pushed(), 1);
    assert_eq!(decoded.pool.texts()[0].id, "t1");
    assert_eq!(decoded.pool.texts()[0].arrival_score, None);
    assert_eq!(decoded.graph, state.graph);
}

#[test]
fn the_digest_covers_the_pool_and_survives_a_snapshot() {
    let engine = engine_with_a_pooled_text();
    let restored = Engine::from_state(EngineConfig::default(), engine.to_state()).unwrap();
    assert_eq!(engine.digest(), restored.digest());
    // The same graph without the pooled text (or with another arrival score) is another state.
    let mut unpooled = Engine::new(EngineConfig::default());
    unpooled.apply(&state_round()).unwrap();
    let rescored = engine_pooling_at(0.08);
    let state = engine.to_state();
    assert_ne!(engine.digest(), unpooled.digest());
    assert_ne!(engine.digest(), rescored.digest());
    assert_eq!(state.pool.len(), 1);
}

#[test]
fn snapshots_keep_the_label_spread_and_older_layouts_read_without_it() {
    let mut engine = engine_with_a_pooled_text();
    let analysis = engine.analyze("the volcano erupted near the village");
    engine.learn(&analysis, "geology", true);
    let state = engine.to_state();
    assert_eq!(state.spread.pending_texts, 1);
    let decoded = EngineState::decode(&postcard::to_stdvec(&state).unwrap()).unwrap();
    assert_eq!(decoded, state);

    // The layout before the label spread: everything up to the pool.
    let old = (SnapshotBase::of(&state), &state.pool);
    let decoded = EngineState::decode(&postcard::to_stdvec(&old).unwrap()).unwrap();
    assert_eq!(decoded.spread, SpreadState::default());
    assert_eq!((decoded.index, decoded.pool), (state.index, state.pool));
}

#[test]
fn the_digest_covers_the_label_spread_and_survives_a_snapshot_after_a_fold() {
    let mut engine = Engine::new(EngineConfig::default());
    engine.apply(&state_round()).unwrap();
    for i in 0..crate::engine::index::FOLD_AT_LEAST + 3 {
        let analysis = engine.analyze(&format!("lava and ash over the village {i}"));
        engine.learn(&analysis, "geology", i % 2 == 0);
    }
    let state = engine.to_state();
    assert!(!state.spread.folded.is_empty() && state.spread.pending_texts == 3);
    let restored = Engine::from_state(EngineConfig::default(), state.clone()).unwrap();
    assert_eq!(restored.digest(), engine.digest());
    let query = engine.analyze("ash over a village");
    assert_eq!(restored.retrieve(&query), engine.retrieve(&query));
    // The same documents with another spread are another state.
    let mut other = state;
    other.spread.pending_texts += 1;
    let other = Engine::from_state(EngineConfig::default(), other).unwrap();
    assert_ne!(other.digest(), engine.digest());
}

#[test]
fn a_snapshot_written_before_confidence_outcomes_reads_with_none() {
    let mut engine = engine_with_a_pooled_text();
    engine
        .add_examples(
            "geology",
            &["lava flows from the crater of the volcano".into()],
        )
        .unwrap();
    let state = engine.to_state();
    assert!(!state.outcomes.is_empty());
    // The layout before outcomes: everything up to the label spread.
    let old = (SnapshotBase::of(&state), &state.pool, &state.spread);
    let decoded = EngineState::decode(&postcard::to_stdvec(&old).unwrap()).unwrap();
    assert!(decoded.outcomes.is_empty());
    assert_eq!(
        (&decoded.index, &decoded.spread),
        (&state.index, &state.spread)
    );
}
