//! Restoring an engine from its state: the same engine (the snapshot layouts, with the
//! discovery pool, are the state layer's: `src/state/tests.rs`).

use super::three_topics;
use crate::engine::graph;
use crate::engine::index::{self, DocKind};
use crate::engine::saved::{self, EngineState};
use crate::engine::{Engine, EngineConfig, NewLabel};

#[test]
fn restored_state_is_the_same_engine() {
    let mut engine = three_topics(EngineConfig::default());
    for text in [
        "the telescope saw a comet near the galaxy",
        "a new recipe for baking sourdough bread",
        "the striker scored a late goal",
    ] {
        let analysis = engine.analyzer().analyze(text);
        let label = engine.retriever().retrieve(&analysis).unwrap().graph_choice;
        engine.learn(&analysis, &label, true);
    }
    let bytes = postcard::to_stdvec(&EngineState::of(&engine)).unwrap();
    let state: saved::EngineState = postcard::from_bytes(&bytes).unwrap();
    let mut restored = Engine::from_state(EngineConfig::default(), state).unwrap();
    assert_eq!(restored.digest(), engine.digest());
    assert_eq!(EngineState::of(&restored), EngineState::of(&engine));

    // Both go on identically: same retrievals, same learning, same digest.
    for text in [
        "comet orbit and galaxy telescope with bread",
        "goal keeper saves a penalty in the stadium",
    ] {
        let a = engine.analyzer().analyze(text);
        let b = restored.analyzer().analyze(text);
        assert_eq!(a, b);
        let ra = engine.retriever().retrieve(&a).unwrap();
        assert_eq!(ra, restored.retriever().retrieve(&b).unwrap());
        engine.learn(&a, &ra.graph_choice, true);
        restored.learn(&b, &ra.graph_choice, true);
    }
    assert_eq!(restored.digest(), engine.digest());
}

#[test]
fn a_restore_between_evictions_behaves_like_an_engine_that_never_stopped() {
    let config = EngineConfig {
        capacity: index::ClassifiedCapacity {
            seen: 3,
            tentative: 2,
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
            let state = EngineState::of(&live);
            restored = Some(Engine::from_state(config.clone(), state).unwrap());
        }
        for engine in std::iter::once(&mut live).chain(restored.as_mut()) {
            let analysis = engine.analyzer().analyze(text);
            let retrieval = engine.retriever().retrieve(&analysis).unwrap();
            let label = retrieval.graph_choice.clone();
            // Every third decision unsure: both kinds of classified text are evicted.
            engine.learn(&analysis, &label, i % 3 != 0);
        }
    }
    let restored = restored.unwrap();
    assert_eq!(restored.digest(), live.digest());
    assert_eq!(live.index().documents().classified_count(DocKind::Seen), 3);
    assert_eq!(
        live.index()
            .documents()
            .classified_count(DocKind::Tentative),
        2
    );
    // The last query shares words only with classified texts: tentative ones vote.
    for query in [
        "comet3 crust1 stadium2",
        "telescope goal oven",
        "comet9 crust0",
    ] {
        let a = live
            .retriever()
            .retrieve(&live.analyzer().analyze(query))
            .unwrap();
        let b = restored
            .retriever()
            .retrieve(&restored.analyzer().analyze(query))
            .unwrap();
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
    let mut state = EngineState::of(&engine);
    state
        .graph
        .edges
        .push((0, 1_000_000, graph::EdgeCost::single(0.5)));
    assert!(matches!(
        Engine::from_state(EngineConfig::default(), state),
        Err(saved::StateError::DanglingEdge(_))
    ));
}

/// An engine with one label and one pooled text whose arrival score is known.
fn geology() -> Vec<NewLabel> {
    vec![NewLabel {
        id: "geology".into(),
        name: None,
        description: None,
        examples: vec!["lava flows from the volcano".into()],
    }]
}

#[test]
fn the_digest_covers_the_label_spread_and_survives_a_snapshot_after_a_fold() {
    let mut engine = Engine::new(EngineConfig::default());
    engine.apply_round(Some("r1"), &geology()).unwrap();
    for i in 0..crate::engine::index::FOLD_AT_LEAST + 3 {
        let analysis = engine
            .analyzer()
            .analyze(&format!("lava and ash over the village {i}"));
        engine.learn(&analysis, "geology", i % 2 == 0);
    }
    let state = EngineState::of(&engine);
    assert!(!state.spread.folded.is_empty() && state.spread.pending_texts == 3);
    let restored = Engine::from_state(EngineConfig::default(), state.clone()).unwrap();
    assert_eq!(restored.digest(), engine.digest());
    let query = engine.analyzer().analyze("ash over a village");
    assert_eq!(
        restored.retriever().retrieve(&query),
        engine.retriever().retrieve(&query)
    );
    // The same documents with another spread are another state.
    let mut other = state;
    other.spread.pending_texts += 1;
    let other = Engine::from_state(EngineConfig::default(), other).unwrap();
    assert_ne!(other.digest(), engine.digest());
}
