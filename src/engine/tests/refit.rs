//! Refitting confidence from the log: examples of labels with several scored as if they were
//! not indexed, audited corrections scored as decided; the outcomes are derived state.

use super::*;
use crate::engine::correct::CorrectionKind;
use crate::engine::refit::{self, Recalibration};
use crate::engine::saved::EngineState;

/// Two labels with three examples each: every example is scored against the other two.
fn two_topics_three_shots(config: EngineConfig) -> Engine {
    let mut engine = Engine::new(config);
    engine
        .apply_round(
            Some("r1"),
            &[
                label(
                    "astronomy",
                    &[
                        "telescope observations of distant galaxies and stars",
                        "the night sky shows planets, stars and a comet through the telescope",
                        "astronomers measured the light of a distant galaxy",
                    ],
                ),
                label(
                    "cooking",
                    &[
                        "a recipe for bread dough with flour, yeast and butter",
                        "bake the bread in the oven until the crust is golden",
                        "knead the dough with flour and water, then let it rise",
                    ],
                ),
            ],
        )
        .unwrap();
    engine
}

#[test]
fn a_round_s_examples_become_outcomes_scored_without_themselves() {
    let engine = two_topics_three_shots(EngineConfig::default());
    let outcomes: Vec<_> = engine.outcomes().outcomes().collect();
    assert_eq!(outcomes.len(), 6);
    // Left out, each example is still closest to its own label's other examples; had it been
    // scored against itself its example cosine would be 1.
    assert!(outcomes.iter().all(|o| o.right), "{outcomes:?}");
    assert!(
        outcomes.iter().all(|o| o.features[4] < 0.99),
        "{outcomes:?}"
    );
    // Too few to refit on yet.
    assert_eq!(engine.outcomes().recalibration(), Recalibration::default());
}

fn as_strs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

/// Two labels with `shots` examples each, every one a variation on its topic.
fn two_topics(shots: usize, config: EngineConfig) -> Engine {
    let astronomy: Vec<String> = (0..shots)
        .map(|i| format!("telescope observations of galaxy number {i}, its stars and a comet"))
        .collect();
    let cooking: Vec<String> = (0..shots)
        .map(|i| format!("recipe {i}: knead bread dough with flour and yeast, bake in the oven"))
        .collect();
    let mut engine = Engine::new(config);
    engine
        .apply_round(
            None,
            &[
                label("astronomy", &as_strs(&astronomy)),
                label("cooking", &as_strs(&cooking)),
            ],
        )
        .unwrap();
    engine
}

#[test]
fn enough_outcomes_refit_the_confidence() {
    let shots = refit::MIN_OUTCOMES / 2 + 1;
    let engine = two_topics(shots, EngineConfig::default());
    assert!(engine.outcomes().outcomes().len() >= refit::MIN_OUTCOMES);
    // Every example is right, so the refit trusts the engine more than the shipped fit does.
    assert!(engine.outcomes().outcomes().all(|o| o.right));
    // A text over `short_text_terms` terms: a short one keeps the short-text weights' own
    // figure, which the deployment's recalibration does not touch.
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze(
            "stars and a galaxy seen through a telescope by the observers of the night sky \
             from the mountain station, far from the city lights",
        ))
        .unwrap();
    let refitted = engine.decisions().decide(&retrieval, None).confidence;
    let off = two_topics(
        shots,
        EngineConfig {
            refit_confidence: false,
            ..EngineConfig::default()
        },
    );
    assert_eq!(off.outcomes().outcomes().len(), 0);
    let shipped = off.decisions().decide(&retrieval, None).confidence;
    assert!(refitted > shipped, "{refitted} against {shipped}");
}

#[test]
fn lone_examples_are_not_scored() {
    // One example a label: leaving it out would leave the label its name alone.
    let engine = three_topics(EngineConfig::default());
    assert_eq!(engine.outcomes().outcomes().len(), 0);
}

/// A text between the two topics, corrected (or audited) to the label retrieval did not pick:
/// the label and the text.
fn corrected(engine: &Engine) -> (&'static str, &'static str) {
    let text = "the telescope pointed at the stars while the bread was baking";
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze(text))
        .unwrap();
    let decided = engine.decisions().decide(&retrieval, None).label;
    let label = if decided == "cooking" {
        "astronomy"
    } else {
        "cooking"
    };
    (label, text)
}

#[test]
fn an_audit_is_an_outcome_of_the_decision_it_corrects() {
    let mut engine = two_topics_three_shots(EngineConfig::default());
    let before = engine.outcomes().outcomes().len();
    let (label, text) = corrected(&engine);
    let (report, _) = engine
        .correct(Some(label), text, CorrectionKind::Audit)
        .unwrap();
    assert_eq!(report.texts_indexed, 1);
    let outcomes: Vec<_> = engine.outcomes().outcomes().collect();
    // One outcome, wrong: the audited text itself is not scored again as an example.
    assert_eq!(outcomes.len(), before + 1);
    assert!(!outcomes[before].right);
}

#[test]
fn a_reviewer_s_correction_teaches_the_label_but_not_the_confidence() {
    // Reviewers correct texts picked for their low confidence: a biased sample.
    let mut engine = two_topics_three_shots(EngineConfig::default());
    let before = engine.outcomes().outcomes().len();
    let (label, text) = corrected(&engine);
    let (report, _) = engine
        .correct(Some(label), text, CorrectionKind::Review)
        .unwrap();
    assert_eq!(report.texts_indexed, 1);
    assert_eq!(engine.outcomes().outcomes().len(), before);
}

#[test]
fn outcomes_survive_a_snapshot_and_the_restored_engine_refits_the_same() {
    let engine = two_topics(refit::MIN_OUTCOMES, EngineConfig::default());
    assert_ne!(engine.outcomes().recalibration(), Recalibration::default());
    let state = EngineState::of(&engine);
    let bytes = postcard::to_stdvec(&state).unwrap();
    let decoded: EngineState = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(decoded.outcomes.len(), 2 * refit::MIN_OUTCOMES);
    let restored = Engine::from_state(EngineConfig::default(), decoded).unwrap();
    assert_eq!(restored.digest(), engine.digest());
    assert_eq!(
        restored.outcomes().recalibration(),
        engine.outcomes().recalibration()
    );
}

#[test]
fn outcomes_are_derived_state_out_of_the_digest_and_replicas_refit_alike() {
    let on = two_topics(refit::MIN_OUTCOMES, EngineConfig::default());
    let off = two_topics(
        refit::MIN_OUTCOMES,
        EngineConfig {
            refit_confidence: false,
            ..EngineConfig::default()
        },
    );
    // Instances that differ in ranking settings score outcomes differently, yet hold the same
    // replicated state.
    assert_eq!(on.digest(), off.digest());
    let replica = two_topics(refit::MIN_OUTCOMES, EngineConfig::default());
    assert_eq!(on.outcomes(), replica.outcomes());
}

#[test]
fn an_audit_leaves_the_text_s_own_learned_copy_out_of_its_decision() {
    // Learned (wrongly, with confidence) under astronomy, then audited as cooking: its copy
    // would vote for astronomy with a similarity of 1.
    let text = "bread dough rising under the stars of the night sky, telescope nearby";
    let audit = |learned: bool| {
        let mut engine = two_topics_three_shots(EngineConfig::default());
        if learned {
            let analysis = engine.analyzer().analyze(text);
            let learnable = engine.analyzer().learnable(&analysis);
            engine.learn(&learnable, "astronomy", true);
        }
        let before = engine.outcomes().outcomes().len();
        let (_, correction) = engine
            .correct(Some("cooking"), text, CorrectionKind::Audit)
            .unwrap();
        assert_eq!(correction.took_back, learned);
        let outcome = engine.outcomes().outcomes().nth(before).copied();
        outcome.unwrap()
    };
    let (with_copy, without) = (audit(true), audit(false));
    // The second hop's share (feature 6) is read without the copy.
    assert!(
        with_copy.features[6] <= without.features[6] + 1e-9,
        "{with_copy:?} against {without:?}"
    );
}

#[test]
fn a_batch_over_the_bound_scores_an_even_sample_of_its_examples() {
    // A batch scores at most `HELD_OUT_PER_BATCH` examples: those of the sample, each exactly
    // as scoring them all would (and a batch within the bound scores them all).
    let mut engine = two_topics_three_shots(EngineConfig::default());
    let astronomy: Vec<String> = (0..4)
        .map(|i| format!("a comet and {i} moons of a planet seen through the telescope"))
        .collect();
    let cooking: Vec<String> = (0..4)
        .map(|i| format!("{i} loaves of bread from dough with flour, yeast and stars of anise"))
        .collect();
    let (_, mut indexed) = crate::engine::rounds::Indexer::of(&mut engine)
        .examples("astronomy", &astronomy)
        .unwrap();
    let (_, cooked) = crate::engine::rounds::Indexer::of(&mut engine)
        .examples("cooking", &cooking)
        .unwrap();
    indexed.extend(cooked);
    let all = refit::HeldOutScoring::of(&engine).outcomes(&indexed, usize::MAX);
    assert_eq!(all.len(), 8);
    assert!(all.windows(2).any(|w| w[0] != w[1]), "{all:?}");
    for at_most in [0, 1, 3, 7, 8, 20] {
        let sample = refit::held_out_sample(all.len(), at_most);
        assert_eq!(sample.len(), at_most.min(all.len()), "at most {at_most}");
        let expected: Vec<_> = sample.iter().map(|&i| all[i]).collect();
        assert_eq!(
            refit::HeldOutScoring::of(&engine).outcomes(&indexed, at_most),
            expected,
            "at most {at_most}"
        );
    }
}

#[test]
fn the_sample_spreads_over_the_batch() {
    assert_eq!(refit::held_out_sample(5, 10), vec![0, 1, 2, 3, 4]);
    assert_eq!(refit::held_out_sample(10, 5), vec![0, 2, 4, 6, 8]);
    assert!(refit::held_out_sample(10, 0).is_empty());
    let sample = refit::held_out_sample(100_000, refit::HELD_OUT_PER_BATCH);
    assert_eq!(sample.len(), refit::HELD_OUT_PER_BATCH);
    assert!(sample
        .windows(2)
        .all(|w| w[1] - w[0] >= 333 && w[1] - w[0] <= 334));
    assert!(sample[sample.len() - 1] >= 99_000);
}
