//! Corrections: the corrected text becomes an example of its label, and its learned copy under
//! the wrong label is taken back.

use super::*;
use crate::engine::correct::CorrectionKind::Review;
use crate::engine::saved::EngineState;

/// A text about baking that also mentions the sky: learned (wrongly, and with confidence) as
/// astronomy in these tests.
const MIXED: &str = "bread dough rising under the stars of the night sky, telescope nearby";

fn learned_wrongly() -> Engine {
    let mut engine = three_topics(EngineConfig::default());
    let analysis = engine.analyzer().analyze(MIXED);
    let learnable = engine.analyzer().learnable(&analysis);
    engine.learn(&learnable, "astronomy", true);
    assert_eq!(
        engine.index().documents().classified_count(DocKind::Seen),
        1
    );
    engine
}

#[test]
fn a_correction_takes_back_the_wrong_copy_and_learns_the_right_label() {
    let mut engine = learned_wrongly();
    let examples_before = engine.labels().get("cooking").unwrap().examples;
    let (report, correction) = engine.correct(Some("cooking"), MIXED, Review).unwrap();
    assert!(correction.took_back, "{correction:?}");
    assert_eq!(
        engine.index().documents().classified_count(DocKind::Seen),
        0
    );
    assert_eq!(report.texts_indexed, 1);
    assert_eq!(
        engine.labels().get("cooking").unwrap().examples,
        examples_before + 1
    );
    // The same text again is now what the operator said.
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze(MIXED))
        .unwrap();
    assert_eq!(retrieval.graph_choice, "cooking");
    let (label, _) = correction
        .decided
        .expect("a decision before the correction");
    assert_eq!(label, "astronomy");
}

#[test]
fn a_correction_of_a_text_never_learned_takes_nothing_back() {
    let mut engine = three_topics(EngineConfig::default());
    let (_, correction) = engine
        .correct(
            Some("football"),
            "the referee gave a penalty in the match",
            Review,
        )
        .unwrap();
    assert!(!correction.took_back);
}

#[test]
fn a_correction_to_an_unknown_or_retired_label_changes_nothing() {
    let mut engine = learned_wrongly();
    let digest = engine.digest();
    assert_eq!(
        engine.correct(Some("physics"), MIXED, Review).unwrap_err(),
        EngineError::UnknownLabel("physics".into())
    );
    assert_eq!(engine.digest(), digest);
    engine.retire_label("football").unwrap();
    let digest = engine.digest();
    assert_eq!(
        engine.correct(Some("football"), MIXED, Review).unwrap_err(),
        EngineError::RetiredLabel("football".into())
    );
    assert_eq!(engine.digest(), digest);
    assert_eq!(
        engine.index().documents().classified_count(DocKind::Seen),
        1
    );
}

#[test]
fn replicas_applying_the_same_correction_agree() {
    let (mut a, mut b) = (learned_wrongly(), learned_wrongly());
    a.correct(Some("cooking"), MIXED, Review).unwrap();
    b.correct(Some("cooking"), MIXED, Review).unwrap();
    assert_eq!(a.digest(), b.digest());
    // And a restart from a snapshot holds the same state.
    let restored = Engine::from_state(EngineConfig::default(), EngineState::of(&a)).unwrap();
    assert_eq!(restored.digest(), a.digest());
}

#[test]
fn every_learned_copy_of_a_corrected_text_is_taken_back() {
    let mut engine = learned_wrongly();
    let analysis = engine.analyzer().analyze(MIXED);
    let learnable = engine.analyzer().learnable(&analysis);
    engine.learn(&learnable, "football", false);
    assert_eq!(
        engine
            .index()
            .documents()
            .classified_count(DocKind::Tentative),
        1
    );
    let (_, correction) = engine.correct(Some("cooking"), MIXED, Review).unwrap();
    assert!(correction.took_back);
    assert_eq!(
        (
            engine.index().documents().classified_count(DocKind::Seen),
            engine
                .index()
                .documents()
                .classified_count(DocKind::Tentative)
        ),
        (0, 0)
    );
}

#[test]
fn a_correction_to_none_takes_back_every_copy_and_teaches_no_label() {
    let mut engine = learned_wrongly();
    let analysis = engine.analyzer().analyze(MIXED);
    let learnable = engine.analyzer().learnable(&analysis);
    engine.learn(&learnable, "football", false);
    let examples: Vec<u32> = engine.labels().all().iter().map(|l| l.examples).collect();
    let (report, correction) = engine.correct(None, MIXED, Review).unwrap();
    assert!(correction.took_back, "{correction:?}");
    assert_eq!(report.texts_indexed, 0);
    assert_eq!(
        (
            engine.index().documents().classified_count(DocKind::Seen),
            engine
                .index()
                .documents()
                .classified_count(DocKind::Tentative)
        ),
        (0, 0)
    );
    let after: Vec<u32> = engine.labels().all().iter().map(|l| l.examples).collect();
    assert_eq!(after, examples, "no label gained an example");
    let (label, _) = correction.decided.expect("what gorag decided before");
    assert_eq!(label, "astronomy");
    assert!(correction.arrival_score.is_some_and(|s| s > 0.0));
}

#[test]
fn an_audit_to_none_counts_as_a_wrong_decision_for_the_refit() {
    use crate::engine::correct::CorrectionKind::Audit;
    let mut engine = learned_wrongly();
    let before = engine.outcomes().outcomes().count();
    engine.correct(None, MIXED, Audit).unwrap();
    let outcomes: Vec<_> = engine.outcomes().outcomes().collect();
    assert_eq!(outcomes.len(), before + 1);
    assert!(!outcomes[before].right, "no label was right");
    // A reviewer's correction to none is no outcome (picked for its low confidence).
    engine.correct(None, MIXED, Review).unwrap();
    assert_eq!(engine.outcomes().outcomes().count(), before + 1);
}

#[test]
fn a_correction_to_none_needs_an_active_label_and_replicas_agree_on_it() {
    let mut empty = Engine::new(EngineConfig::default());
    assert_eq!(
        empty.correct(None, MIXED, Review).unwrap_err(),
        EngineError::NoActiveLabels
    );
    let (mut a, mut b) = (learned_wrongly(), learned_wrongly());
    a.correct(None, MIXED, Review).unwrap();
    b.correct(None, MIXED, Review).unwrap();
    assert_eq!(a.digest(), b.digest());
}

#[test]
fn a_text_that_matched_no_label_joins_the_statistics_only() {
    let mut engine = three_topics(EngineConfig::default());
    let analysis = engine.analyzer().analyze(MIXED);
    let texts_before = engine.stats().documents;
    assert_eq!(engine.learn(&analysis, crate::engine::NO_LABEL, true), 0);
    assert_eq!(engine.stats().documents, texts_before + 1);
    assert_eq!(
        (
            engine.index().documents().classified_count(DocKind::Seen),
            engine
                .index()
                .documents()
                .classified_count(DocKind::Tentative)
        ),
        (0, 0)
    );
}
