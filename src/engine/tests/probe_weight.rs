//! The probe's weight fitted to the stream's examples ([`crate::engine::probe_weight`]): one
//! of the weights tried, the same on every replica, kept across a restore, and scored on
//! probes that did not learn the example scored.

use std::sync::Arc;

use super::label;
use super::retrieve_encoded as retrieve;
use crate::engine::embedding::tests::TopicEncoder;
use crate::engine::peers::{fit_probe_on, probe_material};
use crate::engine::probe::{word_counts, Probe, ProbeWeight};
use crate::engine::probe_weight::{cross_fit, WEIGHTS};
use crate::engine::saved::EngineState;
use crate::engine::{Engine, EngineConfig, Retrieval};

fn fitted() -> Engine {
    let mut config = EngineConfig::default();
    config.ranking.probe_weight = ProbeWeight::FITTED;
    let mut engine = Engine::new(config).with_encoder(Arc::new(TopicEncoder)).0;
    engine
        .apply_round(
            None,
            &[
                label("orbit", &["rockets launched into space", "a space station"]),
                label(
                    "market",
                    &["money on the stock exchange", "shares and money"],
                ),
                label("kitchen", &["food to cook tonight", "a recipe for dinner"]),
            ],
        )
        .unwrap();
    engine
}

fn bits(retrieval: &Retrieval) -> Vec<u64> {
    retrieval.scores().iter().map(|s| s.to_bits()).collect()
}

#[test]
fn the_fitted_weight_is_one_tried_and_the_same_on_every_replica() {
    let (a, b) = (fitted(), fitted());
    let weight = EngineState::of(&a)
        .fitted_probe_weight
        .expect("fitted at the round");
    assert!(WEIGHTS.contains(&weight), "{weight}");
    assert_eq!(
        a.retriever().probe_weight().to_bits(),
        b.retriever().probe_weight().to_bits()
    );
    assert_eq!(a.retriever().probe_weight(), weight);
}

#[test]
fn a_restored_engine_keeps_the_weight_it_fitted() {
    let engine = fitted();
    let restore = |state| {
        Engine::from_state(engine.config().clone(), state)
            .unwrap()
            .with_encoder(Arc::new(TopicEncoder))
            .0
    };
    let restored = restore(EngineState::of(&engine));
    assert_eq!(
        restored.retriever().probe_weight(),
        engine.retriever().probe_weight()
    );
    for text in ["money for dinner", "space rockets", "nothing known"] {
        assert_eq!(
            bits(&retrieve(&engine, text)),
            bits(&retrieve(&restored, text))
        );
    }
    // A weight above 0 is read back, and the probe fitted again for it.
    let mut state = EngineState::of(&engine);
    state.fitted_probe_weight = Some(2.0);
    let weighing = restore(state);
    assert_eq!(weighing.retriever().probe_weight(), 2.0);
    let again = restore(EngineState::of(&weighing));
    let text = "money for dinner";
    assert_eq!(
        bits(&retrieve(&weighing, text)),
        bits(&retrieve(&again, text))
    );
    let mut without = EngineState::of(&engine);
    without.fitted_probe_weight = Some(0.0);
    assert_ne!(
        bits(&retrieve(&weighing, text)),
        bits(&retrieve(&restore(without), text)),
        "the probe weighs at 2"
    );
}

#[test]
fn past_the_label_cap_no_probe_is_fitted() {
    use crate::engine::probe::MAX_LABELS;
    let mut config = EngineConfig::default();
    config.ranking.probe_weight = ProbeWeight::Fixed(1.0);
    let mut engine = Engine::new(config).with_encoder(Arc::new(TopicEncoder)).0;
    let names: Vec<String> = (0..=MAX_LABELS).map(|i| format!("label{i}")).collect();
    let round: Vec<_> = names
        .iter()
        .map(|name| label(name, &["money on the stock exchange"]))
        .collect();
    engine.apply_round(None, &round).unwrap();
    assert!(engine.probe.is_none());
}

#[test]
fn past_the_work_bound_no_probe_is_fitted() {
    use crate::engine::peers::fit_work;
    use crate::engine::probe::MAX_FIT_WORK;
    // `labels` labels (under the label cap), each with one example of `words` distinct words.
    let engine_with = |labels: usize, words: usize| {
        let mut config = EngineConfig::default();
        config.ranking.probe_weight = ProbeWeight::Fixed(1.0);
        let mut engine = Engine::new(config).with_encoder(Arc::new(TopicEncoder)).0;
        let examples: Vec<String> = (0..labels)
            .map(|l| {
                (0..words)
                    .map(|w| format!("w{l}x{w}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let round: Vec<_> = examples
            .iter()
            .enumerate()
            .map(|(l, text)| label(&format!("label{l}"), &[text.as_str()]))
            .collect();
        engine.apply_round(None, &round).unwrap();
        engine
    };
    let light = engine_with(20, 3);
    let work = fit_work(&probe_material(&light), light.labels.len());
    assert!(work <= MAX_FIT_WORK, "{work}");
    assert!(light.probe.is_some(), "under the bound the probe is fitted");
    let heavy = engine_with(200, 450);
    let work = fit_work(&probe_material(&heavy), heavy.labels.len());
    assert!(work > MAX_FIT_WORK, "{work}");
    assert!(heavy.probe.is_none());
}

#[test]
fn a_state_with_no_fitted_weight_reads_none_until_labelled_material_arrives() {
    let engine = fitted();
    let mut state = EngineState::of(&engine);
    state.fitted_probe_weight = None;
    let mut restored = Engine::from_state(engine.config().clone(), state)
        .unwrap()
        .with_encoder(Arc::new(TopicEncoder))
        .0;
    assert_eq!(restored.retriever().probe_weight(), 0.0);
    restored
        .add_examples("market", &["a bank loan".to_string()])
        .unwrap();
    assert!(EngineState::of(&restored).fitted_probe_weight.is_some());
}

#[test]
fn a_weight_set_by_hand_is_not_fitted() {
    let mut config = EngineConfig::default();
    config.ranking.probe_weight = ProbeWeight::Fixed(1.5);
    let mut engine = Engine::new(config).with_encoder(Arc::new(TopicEncoder)).0;
    engine
        .apply_round(None, &[label("orbit", &["rockets launched into space"])])
        .unwrap();
    assert_eq!(engine.retriever().probe_weight(), 1.5);
    assert_eq!(EngineState::of(&engine).fitted_probe_weight, None);
}

#[test]
fn each_example_is_scored_by_a_probe_that_did_not_learn_it() {
    let engine = fitted();
    let folds = cross_fit(&engine, &probe_material(&engine));
    let market = engine.labels().position("market").unwrap();
    let text = "money on the stock exchange";
    let (doc, _) = engine
        .index()
        .documents()
        .alive_with_ids()
        .find(|(_, doc)| doc.text.as_deref() == Some(text))
        .unwrap();
    let words = word_counts(text);
    let belief = |probe: &Probe| probe.probabilities(None, &words, |_| true)[market];
    let without = belief(folds.probe_without(doc).unwrap());
    let material = probe_material(&engine);
    let full = fit_probe_on(&material, |_| true, engine.labels().len()).unwrap();
    let with = belief(&full);
    assert!(without < with, "{without} ≥ {with}");
}
