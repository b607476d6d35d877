//! The peers (`prototype`, `probe`) and the probe inside the ranked strategies, with the
//! deterministic topic encoder.

use std::sync::Arc;

use super::label;
use crate::engine::embedding::tests::TopicEncoder;
use crate::engine::{Basis, Engine, EngineConfig, Retrieval, Strategy};

fn engine(strategy: Strategy) -> Engine {
    let config = EngineConfig {
        strategy,
        ..EngineConfig::default()
    };
    let mut engine = Engine::new(config).with_encoder(Arc::new(TopicEncoder)).0;
    engine
        .apply_round(
            None,
            &[
                label("orbit", &["rockets launched into space", "a space station"]),
                label("market", &["money on the stock exchange"]),
                label("kitchen", &["food to cook tonight"]),
            ],
        )
        .unwrap();
    engine
}

use super::retrieve_encoded as retrieve;
use crate::engine::saved::EngineState;

#[test]
fn prototype_ranks_labels_by_their_examples_and_name_together() {
    let engine = engine(Strategy::Prototype);
    let retrieval = retrieve(&engine, "what about money");
    assert_eq!(retrieval.graph_choice, "market");
    assert_eq!(retrieval.basis, Basis::SimilarExamples);
    assert!(retrieval.scores().windows(2).all(|w| w[0] >= w[1]));
    assert_eq!(retrieval.margin(), None, "uncalibrated, as nearest");
}

#[test]
fn probe_learns_the_labels_words_and_meaning() {
    let engine = engine(Strategy::Probe);
    // Words the topic encoder does not hear: the probe's word features carry them.
    assert_eq!(
        retrieve(&engine, "the stock exchange").graph_choice,
        "market"
    );
    assert_eq!(retrieve(&engine, "cook tonight").graph_choice, "kitchen");
    // Meaning alone.
    assert_eq!(retrieve(&engine, "space").graph_choice, "orbit");
    let retrieval = retrieve(&engine, "space");
    let total: f64 = retrieval.scores().iter().sum();
    assert!(
        total <= 1.0 + 1e-9,
        "probabilities: {:?}",
        retrieval.scores()
    );
}

#[test]
fn probe_is_refitted_as_labels_arrive_and_retire() {
    let mut engine = engine(Strategy::Probe);
    engine
        .apply_round(None, &[label("sport", &["a sport match with the team"])])
        .unwrap();
    assert_eq!(retrieve(&engine, "sport team").graph_choice, "sport");
    engine.retire_label("sport").unwrap();
    let retrieval = retrieve(&engine, "sport team");
    assert!(!retrieval.label_ids().iter().any(|c| c == "sport"));
}

#[test]
fn a_restored_engine_fits_the_same_probe() {
    let engine = engine(Strategy::Probe);
    let restored = Engine::from_state(engine.config().clone(), EngineState::of(&engine))
        .unwrap()
        .with_encoder(Arc::new(TopicEncoder))
        .0;
    for text in ["the stock exchange", "space food", "nothing known"] {
        let (a, b) = (retrieve(&engine, text), retrieve(&restored, text));
        assert_eq!(a.label_ids(), b.label_ids());
        let bits = |r: &Retrieval| r.scores().iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b), "{text}");
    }
}

#[test]
fn the_probe_s_weight_moves_hybrid_towards_what_it_learned() {
    let mut off = engine(Strategy::Hybrid);
    let text = "the stock exchange cook";
    let before = retrieve(&off, text);
    let mut config = off.config().clone();
    config.ranking.probe_weight = crate::engine::probe::ProbeWeight::Fixed(4.0);
    let on = Engine::from_state(config, EngineState::of(&off))
        .unwrap()
        .with_encoder(Arc::new(TopicEncoder))
        .0;
    let after = retrieve(&on, text);
    assert_eq!(before.label_ids().len(), after.label_ids().len());
    assert_ne!(
        before.scores(),
        after.scores(),
        "the probe's belief is added"
    );
    // With no weight the engine fits no probe at all.
    off.set_strategy(Strategy::Hybrid);
    assert_eq!(retrieve(&off, text).scores(), before.scores());
}
