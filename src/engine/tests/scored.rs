//! Reading the LLM's answer in `scored` and `numbered` modes: whose favourite a label is, and
//! what a label retired while the model answered becomes.

use super::{label, three_topics};
use crate::engine::answer::HallucinationKind;
use crate::engine::learning::LearningConfig;
use crate::engine::prompt::{self, ChoiceMode};
use crate::engine::{Basis, Candidate, Engine, EngineConfig, Retrieval, Scoring, Source};

/// Two labels whose names begin with the same word, and one apart; learning needs a margin of
/// 1 unless the model agrees.
fn shared_first_word() -> (Engine, Retrieval) {
    let mut engine = Engine::new(EngineConfig {
        learning: LearningConfig {
            margin: 1.0,
            margin_agreeing: 0.0,
        },
        ..EngineConfig::default()
    });
    engine
        .apply_round(
            None,
            &[
                label(
                    "computer_vision",
                    &["camera images segmented and objects detected by a convolutional network"],
                ),
                label(
                    "computer_graphics",
                    &["rendering shaded triangles with ray tracing and texture maps"],
                ),
                label("cooking", &["bread dough with flour and yeast"]),
            ],
        )
        .unwrap();
    let analysis = engine
        .analyzer()
        .analyze("objects detected in camera images, then rendered with texture");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(retrieval.graph_choice, "computer_vision", "{retrieval:?}");
    assert!(retrieval.offers("computer_graphics"));
    (engine, retrieval)
}

/// A ranked retrieval of the three topics, astronomy first, with these scores.
fn ranked_three(scores: [f64; 3]) -> Retrieval {
    Retrieval {
        candidates: ["astronomy", "cooking", "football"]
            .into_iter()
            .zip(scores)
            .map(|(label, score)| Candidate::scored(label.into(), score))
            .collect(),
        scoring: Scoring::Calibrated {
            margin: scores[0] - scores[1],
        },
        terminals: Vec::new(),
        basis: Basis::RankedScores,
        tree_cost: None,
        graph_choice: "astronomy".into(),
        discovery_score: None,
        first_hop_labels: 3,
        active_labels: 3,
        short_text: false,
        probe_top: None,
    }
}

#[test]
fn a_first_token_shared_by_two_names_is_not_agreement() {
    let (engine, retrieval) = shared_first_word();
    let computer = vec![(" Computer".to_string(), -0.05)];
    // The answer names the other one: retrieval decided (weight 0), against the model.
    let other = engine.decisions().decide_with_alternatives(
        &retrieval,
        Some("Computer graphics"),
        &computer,
    );
    assert_eq!(other.label, "computer_vision");
    assert_eq!(other.source, Source::Graph);
    assert_eq!(other.hallucination, None);
    // It names retrieval's best: agreement.
    let same =
        engine
            .decisions()
            .decide_with_alternatives(&retrieval, Some("Computer vision"), &computer);
    assert_eq!(same.source, Source::Llm);
    // It names neither: the shared token favours no candidate, so no agreement.
    let neither =
        engine
            .decisions()
            .decide_with_alternatives(&retrieval, Some("Computer"), &computer);
    assert_eq!(neither.source, Source::Graph);
    assert_eq!(neither.hallucination, None, "its first token began names");
    // Only agreement lowers the margin a decision needs to be learned from.
    assert!(engine.decisions().verdict(&retrieval, &same).confident);
    assert!(!engine.decisions().verdict(&retrieval, &other).confident);
    assert!(!engine.decisions().verdict(&retrieval, &neither).confident);
}

#[test]
fn a_blend_that_is_neither_favourite_is_not_learned() {
    let engine = three_topics(EngineConfig::default());
    let retrieval = ranked_three([0.50, 0.44, 0.20]);
    // The model prefers football, a little over cooking; at weight 1 cooking wins the blend
    // (0.88 + 0.45 against 1.0 and 0.4 + 0.55): neither retrieval's best nor the model's.
    let alternatives = vec![
        ("cook".to_string(), (0.45f64).ln()),
        ("foot".to_string(), (0.55f64).ln()),
    ];
    let blend = engine.decisions().decide_as(
        &retrieval,
        Some("football"),
        &alternatives,
        ChoiceMode::Scored,
        1.0,
    );
    assert_eq!(
        (blend.label.as_str(), blend.source),
        ("cooking", Source::Graph)
    );
    assert!(
        !engine.decisions().verdict(&retrieval, &blend).confident,
        "margin 0.06 says astronomy"
    );
}

#[test]
fn a_label_retired_while_the_model_answered_is_not_the_prediction() {
    let mut engine = three_topics(EngineConfig {
        choice: ChoiceMode::Numbered,
        ..EngineConfig::default()
    });
    let analysis = engine
        .analyzer()
        .analyze("telescope galaxies and a bread recipe with yeast and flour");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    let (best, second) = (
        retrieval.label_ids()[0].clone(),
        retrieval.label_ids()[1].clone(),
    );
    engine.retire_label(&best).unwrap();
    // No answer, or an answer naming no label: retrieval's choice is gone, the next stands.
    assert_eq!(engine.decisions().decide(&retrieval, None).label, second);
    assert_eq!(
        engine
            .decisions()
            .decide(&retrieval, Some("nonsense"))
            .label,
        second
    );
    // The model named the retired label's number: no hallucination, the next candidate.
    let numbered = engine.decisions().decide(&retrieval, Some("1"));
    assert_eq!(
        (numbered.label.as_str(), numbered.hallucination),
        (second.as_str(), None)
    );
}

#[test]
fn an_answer_whose_first_token_begins_no_name_still_leaves_the_choice_to_the_weights() {
    let engine = three_topics(EngineConfig::default());
    let analysis = engine
        .analyzer()
        .analyze("telescope galaxies and a bread recipe with yeast and flour");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    let (best, second) = (&retrieval.label_ids()[0], &retrieval.label_ids()[1]);
    let the = vec![("The".to_string(), -0.1), ("**".to_string(), -2.5)];
    let answer = format!("The answer is {second}");
    // Weight 0: retrieval decides, whatever the answer's text named (it used to win here).
    let at_zero =
        engine
            .decisions()
            .decide_as(&retrieval, Some(&answer), &the, ChoiceMode::Scored, 0.0);
    assert_eq!(
        (&at_zero.label, at_zero.source, at_zero.hallucination),
        (best, Source::Graph, None)
    );
    // Weight 1: the named candidate is the model's whole belief.
    let at_one =
        engine
            .decisions()
            .decide_as(&retrieval, Some(&answer), &the, ChoiceMode::Scored, 1.0);
    assert_eq!((&at_one.label, at_one.source), (second, Source::Llm));
    // Naming no label: flagged, and the decision stays among the candidates.
    let made_up = engine.decisions().decide_as(
        &retrieval,
        Some("The answer is marine biology"),
        &the,
        ChoiceMode::Scored,
        0.0,
    );
    assert_eq!(&made_up.label, best);
    assert_eq!(
        made_up.hallucination,
        Some(crate::engine::HallucinationKind::UnknownLabel)
    );
}

#[test]
fn a_scored_winner_retired_meanwhile_gives_way_to_the_next_candidate_not_the_answer() {
    let mut engine = three_topics(EngineConfig::default());
    let retrieval = ranked_three([0.5, 0.4, 0.3]);
    engine.retire_label("astronomy").unwrap();
    let astro = vec![("astro".to_string(), -0.01)];
    let decision =
        engine
            .decisions()
            .decide_with_alternatives(&retrieval, Some("football"), &astro);
    assert_eq!(decision.label, "cooking", "not the answer's text: weight 0");
    assert!(!engine.decisions().verdict(&retrieval, &decision).confident);
}

#[test]
fn an_answer_naming_nothing_leaves_retrieval_s_choice_even_without_scores() {
    let engine = three_topics(EngineConfig {
        strategy: crate::engine::Strategy::Naive,
        ..EngineConfig::default()
    });
    let analysis = engine
        .analyzer()
        .analyze("the striker scored a goal in the match, then baked bread");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(retrieval.graph_choice, "football", "{retrieval:?}");
    assert_ne!(
        retrieval.label_ids()[0],
        "football",
        "label order: {retrieval:?}"
    );
    let the = vec![("The".to_string(), -0.1)];
    let decision = engine.decisions().decide_with_alternatives(
        &retrieval,
        Some("The answer is marine biology"),
        &the,
    );
    assert_eq!(decision.label, "football");
}

#[test]
fn scored_choice_fuses_the_llm_belief_and_still_flags_its_answer() {
    let engine = three_topics(EngineConfig {
        llm_weight: 1.0,
        ..EngineConfig::default()
    });
    let analysis = engine
        .analyzer()
        .analyze("telescope galaxies and a bread recipe with yeast and flour");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(retrieval.label_ids().len(), 2);
    let second = retrieval.label_ids()[1].clone();
    let belief = vec![(second[..4].to_string(), -0.01), ("x".to_string(), -5.0)];
    let decision = engine
        .decisions()
        .decide_with_alternatives(&retrieval, Some(&second), &belief);
    assert_eq!(
        (decision.label.as_str(), decision.source),
        (second.as_str(), Source::Llm)
    );
    assert_eq!(decision.hallucination, None);
    // Weight 0 (the default): retrieval decides; the LLM's favourite lost, so `graph`.
    let retrieval_decides = engine.decisions().decide_as(
        &retrieval,
        Some(&second),
        &belief,
        prompt::ChoiceMode::Scored,
        0.0,
    );
    assert_eq!(
        (retrieval_decides.label.as_str(), retrieval_decides.source),
        (retrieval.graph_choice.as_str(), Source::Graph)
    );
    // An off-list answer is flagged only when most of its first-token mass was off the list;
    // the decision stays among the candidates either way.
    let off_list = vec![
        ("marine".to_string(), -0.1),
        (second[..4].to_string(), -3.0),
    ];
    let made_up =
        engine
            .decisions()
            .decide_with_alternatives(&retrieval, Some("marine biology"), &off_list);
    assert_eq!(made_up.hallucination, Some(HallucinationKind::UnknownLabel));
    assert!(retrieval.label_ids().contains(&made_up.label));
    let began_on_list =
        engine
            .decisions()
            .decide_with_alternatives(&retrieval, Some("bread things"), &belief);
    assert_eq!(began_on_list.hallucination, None);
    // No alternatives (an endpoint without logprobs): read as a free answer.
    let free = engine
        .decisions()
        .decide_with_alternatives(&retrieval, Some("marine biology"), &[]);
    assert_eq!(free.source, Source::Graph);
    assert_eq!(free.hallucination, Some(HallucinationKind::UnknownLabel));
}

#[test]
fn numbered_choice_reads_the_number() {
    let engine = three_topics(EngineConfig {
        choice: prompt::ChoiceMode::Numbered,
        ..EngineConfig::default()
    });
    let analysis = engine
        .analyzer()
        .analyze("telescope galaxies and a bread recipe with yeast and flour");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    let prompt = engine
        .decisions()
        .classification_prompt(&retrieval, "text", &analysis);
    assert!(prompt.user.contains("2. "), "{}", prompt.user);
    let decision = engine.decisions().decide(&retrieval, Some("2"));
    assert_eq!(decision.label, retrieval.label_ids()[1]);
    let nonsense = engine.decisions().decide(&retrieval, Some("7"));
    assert_eq!(
        nonsense.hallucination,
        Some(HallucinationKind::UnknownLabel)
    );
}
