//! The `nearest` strategy (the embedding baseline) with the deterministic topic encoder.

use std::sync::Arc;

use super::label;
use crate::engine::embedding::tests::TopicEncoder;
use crate::engine::embedding::TextEncoder;
use crate::engine::{Basis, Engine, EngineConfig, Strategy};

/// Three labels. `orbit`'s example shares every word of the query below but its topic;
/// `market`'s shares only the topic word the query's meaning turns on (as the topic encoder
/// reads it); `kitchen` has two examples.
fn engine(max_candidates: usize) -> Engine {
    let mut config = EngineConfig {
        strategy: Strategy::Nearest,
        ..EngineConfig::default()
    };
    config.ranking.max_candidates = max_candidates;
    let mut engine = Engine::new(config).with_encoder(Arc::new(TopicEncoder)).0;
    engine
        .apply_round(
            None,
            &[
                label("orbit", &["the weekly report about launches into space"]),
                label("market", &["money"]),
                label("kitchen", &["food and sport", "food"]),
            ],
        )
        .unwrap();
    engine
}

use super::retrieve_encoded as retrieve;

#[test]
fn the_label_of_the_nearest_example_wins_whatever_the_words() {
    let engine = engine(5);
    // Every word of orbit's example, and money twice: the encoder hears mostly money.
    let text = "the weekly report about launches into space and money money";
    let retrieval = retrieve(&engine, text);
    assert_eq!(retrieval.graph_choice, "market");
    assert_eq!(retrieval.basis, Basis::SimilarExamples);
    assert_eq!(retrieval.label_ids(), ["market", "orbit", "kitchen"]);
    // Each candidate's score is its closest example's cosine, best first.
    let query = TopicEncoder.encode(text);
    let cosine = |text: &str| {
        let example = TopicEncoder.encode(text).unwrap();
        let query = query.as_ref().unwrap();
        query
            .iter()
            .zip(&example)
            .map(|(a, b)| f64::from(a * b))
            .sum::<f64>()
    };
    let expected = [
        cosine("money"),
        cosine("the weekly report about launches into space"),
        cosine("food and sport").max(cosine("food")),
    ];
    for (score, expected) in retrieval.scores().iter().zip(expected) {
        assert!((score - expected).abs() < 1e-6, "{:?}", retrieval.scores());
    }
    assert!(retrieval.scores().windows(2).all(|w| w[0] >= w[1]));
    assert_eq!(
        retrieval.margin(),
        None,
        "no calibrated scores: never held for review"
    );
}

#[test]
fn a_label_counts_its_closest_example_and_candidates_are_capped() {
    let engine = engine(2);
    let retrieval = retrieve(&engine, "food");
    assert_eq!(retrieval.label_ids(), ["kitchen", "orbit"]);
    assert!(
        (retrieval.scores()[0] - 1.0).abs() < 1e-6,
        "{:?}",
        retrieval.scores()
    );
    assert_eq!(
        retrieval.first_hop_labels, 3,
        "every label with an example was ranked"
    );
}

#[test]
fn learned_texts_are_not_read() {
    let mut engine = engine(5);
    let text = "money money money";
    let before = retrieve(&engine, text);
    // A confident text learned under another label: the ranked strategies' second hop would
    // hear it; nearest reads the labelled examples alone.
    for _ in 0..3 {
        let analysis = engine.analyzer().analyze(text);
        engine.learn(&analysis, "orbit", true);
    }
    let after = retrieve(&engine, text);
    assert_eq!(after.label_ids(), before.label_ids());
    assert_eq!(after.scores(), before.scores());
    assert_eq!(after.graph_choice, "market");
}

#[test]
fn retired_labels_are_never_candidates() {
    let mut engine = engine(5);
    engine.retire_label("market").unwrap();
    let retrieval = retrieve(&engine, "money");
    assert!(!retrieval.label_ids().iter().any(|c| c == "market"));
    assert_eq!(retrieval.label_ids().len(), 2);
}

#[test]
fn without_a_vector_every_active_label_is_offered_as_no_evidence() {
    let engine = engine(5);
    let analysis = engine.analyzer().analyze("money"); // never encoded
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(retrieval.basis, Basis::NoEvidence);
    assert_eq!(retrieval.label_ids(), ["orbit", "market", "kitchen"]);
    assert!(retrieval.scores().is_empty());
    assert!(Strategy::Nearest.reads_meaning());
    assert!(Strategy::Nearest.evidence().is_none());
}
