//! The embedding signal inside the engine, with a deterministic topic encoder (the real model
//! is tested in tests/embedding.rs).

use std::sync::Arc;

use super::label;
use crate::engine::embedding::tests::TopicEncoder;
use crate::engine::embedding::{EncodeError, TextEncoder};
use crate::engine::saved::EngineState;
use crate::engine::{Engine, EngineConfig};

/// Two labels whose examples share every word but one topic word each, so the words alone
/// barely tell them apart; a query naming neither topic word lexically but a synonym topic.
fn near_twins(config: EngineConfig) -> Engine {
    let mut engine = Engine::new(config).with_encoder(Arc::new(TopicEncoder)).0;
    engine
        .apply_round(
            None,
            &[
                label("orbit", &["report of the week about space launches"]),
                label("market", &["report of the week about money markets"]),
            ],
        )
        .unwrap();
    engine
}

fn config(weight: f64) -> EngineConfig {
    let mut config = EngineConfig::default();
    config.ranking.name_weight = 0.0;
    config.ranking.embedding_weight = weight;
    // The queries here are short texts: the same weight for them.
    config.ranking.embedding_weight_short = weight;
    config
}

fn ranked_labels(engine: &Engine, text: &str) -> Vec<String> {
    let mut analysis = engine.analyzer().analyze(text);
    engine.analyzer().embed_query(&mut analysis, text).unwrap();
    engine.retriever().retrieve(&analysis).unwrap().label_ids()
}

#[test]
fn the_embedding_signal_ranks_the_label_whose_examples_mean_the_same() {
    // "report of the week" ties lexically; only "moneylenders", which the encoder reads as
    // the money topic, says which label it is.
    let query = "the report of the week on moneylenders";
    let lexical = ranked_labels(&near_twins(config(0.0)), query);
    let embedded = ranked_labels(&near_twins(config(1.0)), query);
    assert_eq!(embedded[0], "market", "{embedded:?}");
    // The lexical ranking alone puts the other first (label order breaks the tie), so the
    // signal is what moved it.
    assert_eq!(lexical[0], "orbit", "{lexical:?}");
}

#[test]
fn without_a_query_vector_retrieval_is_lexical() {
    let engine = near_twins(config(1.0));
    let query = "the report of the week on moneylenders";
    let analysis = engine.analyzer().analyze(query); // never embedded
    let lexical = ranked_labels(&near_twins(config(0.0)), query);
    assert_eq!(
        engine.retriever().retrieve(&analysis).unwrap().label_ids(),
        lexical
    );
}

#[test]
fn a_restored_engine_given_the_encoder_retrieves_as_the_live_one() {
    let live = near_twins(config(1.0));
    let restored = Engine::from_state(config(1.0), EngineState::of(&live))
        .unwrap()
        .with_encoder(Arc::new(TopicEncoder))
        .0;
    for query in [
        "money talk",
        "space and the week",
        "nothing known here at all",
    ] {
        let a = {
            let mut analysis = live.analyzer().analyze(query);
            live.analyzer().embed_query(&mut analysis, query).unwrap();
            live.retriever().retrieve(&analysis).unwrap()
        };
        let b = {
            let mut analysis = restored.analyzer().analyze(query);
            restored
                .analyzer()
                .embed_query(&mut analysis, query)
                .unwrap();
            restored.retriever().retrieve(&analysis).unwrap()
        };
        assert_eq!(a, b, "{query}");
    }
}

struct Broken;

impl TextEncoder for Broken {
    fn encode(&self, _: &str) -> Result<Vec<f32>, EncodeError> {
        Err(EncodeError("out of memory".into()))
    }
}

#[test]
fn a_round_the_encoder_fails_on_is_applied_without_vectors() {
    let mut engine = Engine::new(EngineConfig::default())
        .with_encoder(Arc::new(Broken))
        .0;
    let mut lexical = Engine::new(EngineConfig::default());
    let round = [label("orbit", &["space launches"])];
    let report = engine.apply_round(None, &round).unwrap();
    lexical.apply_round(None, &round).unwrap();
    // One example and one name without a vector; the state is the lexical engine's, as every
    // replica's must be whatever its encoder does.
    assert_eq!(report.unencoded, 2);
    assert_eq!(engine.digest(), lexical.digest());
}

#[test]
fn a_restored_engine_encodes_long_examples_and_later_examples_as_the_live_one() {
    let mut live = near_twins(config(1.0));
    // Longer than the index keeps (1,000 characters): both engines encode the kept text.
    let long = format!("{} money at the end", "space ".repeat(400));
    live.add_examples("market", &[long]).unwrap();
    let restored = Engine::from_state(config(1.0), EngineState::of(&live))
        .unwrap()
        .with_encoder(Arc::new(TopicEncoder))
        .0;
    for query in ["space", "money report", "the week"] {
        let retrieve = |engine: &Engine| {
            let mut analysis = engine.analyzer().analyze(query);
            engine.analyzer().embed_query(&mut analysis, query).unwrap();
            engine.retriever().retrieve(&analysis).unwrap()
        };
        assert_eq!(retrieve(&live), retrieve(&restored), "{query}");
    }
}

/// Records the label material it is asked to encode.
#[derive(Default)]
struct Recording(std::sync::Mutex<Vec<String>>);

impl TextEncoder for Recording {
    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        TopicEncoder.encode(text)
    }

    fn encode_material(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        self.0.lock().unwrap().push(text.to_string());
        self.encode(text)
    }
}

#[test]
fn a_round_s_and_added_examples_material_is_what_applying_them_asks_the_encoder_for() {
    let recording = Arc::new(Recording::default());
    let mut engine = Engine::new(EngineConfig::default())
        .with_encoder(recording.clone())
        .0;
    let long = format!("{} money at the end", "space ".repeat(400));
    let mut described = label("junk_food", &["fries and food", "the and of", &long]);
    described.description = Some("food that is not good for you".into());
    let unnamed = crate::engine::NewLabel {
        name: None,
        ..label("sport", &["sport results"])
    };
    let round = vec![described, unnamed];
    let asked = |engine: &mut Engine, apply: &dyn Fn(&mut Engine)| {
        recording.0.lock().unwrap().clear();
        apply(engine);
        let mut asked = recording.0.lock().unwrap().clone();
        asked.sort();
        asked
    };
    let mut ahead = engine.analyzer().round_material(&round);
    ahead.sort();
    let applied = asked(&mut engine, &|engine| {
        engine.apply_round(Some("r1"), &round).unwrap();
    });
    assert!(!applied.is_empty());
    assert_eq!(ahead, applied);
    let added = vec!["a sport match".to_string(), String::new()];
    let mut ahead = engine.analyzer().examples_material("sport", &added);
    ahead.sort();
    let applied = asked(&mut engine, &|engine| {
        engine.add_examples("sport", &added).unwrap();
    });
    assert!(!applied.is_empty());
    assert_eq!(ahead, applied);
    // What the engine refuses encodes nothing.
    let money = ["space money".to_string()];
    assert!(engine
        .analyzer()
        .examples_material("nobody", &money)
        .is_empty());
    let repeated = [label("sport", &["space money"])];
    assert!(engine.analyzer().round_material(&repeated).is_empty());
    engine.retire_label("sport").unwrap();
    assert!(engine
        .analyzer()
        .examples_material("sport", &money)
        .is_empty());
    let lexical = Engine::new(EngineConfig::default());
    assert!(
        lexical
            .analyzer()
            .round_material(&[label("orbit", &["space"])])
            .is_empty(),
        "no signal, no material"
    );
}

/// The default configuration (short texts weigh meaning at 2, longer ones at 0.05).
fn near_twins_by_default() -> Engine {
    near_twins(EngineConfig {
        ranking: crate::engine::rank::RankingConfig {
            name_weight: 0.0,
            ..Default::default()
        },
        ..EngineConfig::default()
    })
}

#[test]
fn a_short_text_is_ranked_by_meaning_and_a_long_one_by_its_words() {
    let engine = near_twins_by_default();
    // Three terms: meaning decides, and the retrieval says the text was short.
    let short = "the report of the week on moneylenders";
    let mut analysis = engine.analyzer().analyze(short);
    // Not read by meaning (no query vector): ranked by its words, its confidence as any text's.
    assert!(!engine.retriever().retrieve(&analysis).unwrap().short_text);
    engine.analyzer().embed_query(&mut analysis, short).unwrap();
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(retrieval.label_ids()[0], "market", "{retrieval:?}");
    assert!(retrieval.short_text);
    // More words, one of them ("launches") in orbit's example, the money topic still in
    // "moneylenders": the words decide a long text; meaning at 0.05 does not move it.
    let long = "the report of the week on moneylenders, with launches, weekly reports, \
                tables, charts, notes, remarks, comments and the usual summary";
    let mut analysis = engine.analyzer().analyze(long);
    engine.analyzer().embed_query(&mut analysis, long).unwrap();
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert!(!retrieval.short_text, "{retrieval:?}");
    assert_eq!(retrieval.label_ids()[0], "orbit", "{retrieval:?}");
}

#[test]
fn a_text_no_label_s_words_explain_is_ranked_by_meaning_when_an_encoder_is_on() {
    let engine = near_twins_by_default();
    let text = "moneylenders galore";
    let mut analysis = engine.analyzer().analyze(text);
    let unembedded = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(unembedded.basis, crate::engine::Basis::NoEvidence);
    engine.analyzer().embed_query(&mut analysis, text).unwrap();
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(retrieval.basis, crate::engine::Basis::RankedScores);
    assert_eq!(retrieval.label_ids()[0], "market", "{retrieval:?}");
    assert_eq!(retrieval.first_hop_labels, 0, "no label's words matched");
}

#[test]
fn a_text_ranked_by_meaning_alone_is_never_learned_as_confident() {
    let engine = near_twins_by_default();
    let text = "moneylenders galore";
    let mut analysis = engine.analyzer().analyze(text);
    engine.analyzer().embed_query(&mut analysis, text).unwrap();
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    let decision = engine.decisions().decide(&retrieval, None);
    assert_eq!(decision.label, "market");
    assert!(
        !engine.decisions().verdict(&retrieval, &decision).confident,
        "{decision:?}"
    );
}

/// `text` encoded, retrieved and decided without an LLM.
fn decided(engine: &Engine, text: &str) -> (crate::engine::Retrieval, crate::engine::Decision) {
    let mut analysis = engine.analyzer().analyze(text);
    engine.analyzer().embed_query(&mut analysis, text).unwrap();
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    let decision = engine.decisions().decide(&retrieval, None);
    (retrieval, decision)
}

#[test]
fn a_short_text_far_from_its_label_in_meaning_needs_review() {
    let text = "the report of the week on moneylenders";
    let status = |floor: f64| {
        let mut config = EngineConfig::default();
        config.ranking.name_weight = 0.0;
        config.ranking.short_text_min_meaning = floor;
        let engine = near_twins(config);
        let (retrieval, decision) = decided(&engine, text);
        engine.decisions().status(&retrieval, &decision)
    };
    // The topic encoder reads the text and market's example as nearly the same (cosine just
    // under 1): a floor of 1 is above it, the default far below.
    assert_eq!(status(1.0), crate::engine::Status::NeedsReview);
    assert_ne!(status(0.4), crate::engine::Status::NeedsReview);
}

#[test]
fn a_label_sharing_a_word_or_two_and_far_in_meaning_needs_review_in_a_long_text_too() {
    // Long (more terms than `short_text_terms`), and "report" is all it shares with either
    // label's example.
    let text = "moneylenders report tables, charts, notes, remarks, comments, summaries, graphs, \
                figures and the usual";
    let status = |floor: f64| {
        let mut config = EngineConfig::default();
        config.ranking.name_weight = 0.0;
        config.ranking.few_words_min_meaning = floor;
        config.abstain_below = 0.0;
        let engine = near_twins(config);
        let (retrieval, decision) = decided(&engine, text);
        assert!(!retrieval.short_text, "{retrieval:?}");
        engine.decisions().status(&retrieval, &decision)
    };
    // The topic encoder reads the text as the money topic (cosine just under 1): a floor of 1
    // is above it, a floor of 0 below anything.
    assert_eq!(status(1.0), crate::engine::Status::NeedsReview);
    assert_eq!(status(0.0), crate::engine::Status::Decided);
}

#[test]
fn a_label_sharing_three_words_is_not_held_back_by_the_few_words_floor() {
    // "report", "week" and "market" are in market's example: more than a word or two.
    let text = "moneylenders report week markets tables, charts, notes, remarks, comments, \
                summaries, graphs, figures";
    let mut config = EngineConfig::default();
    config.ranking.name_weight = 0.0;
    config.ranking.few_words_min_meaning = 1.0;
    config.ranking.short_text_min_meaning = 0.0;
    config.abstain_below = 0.0;
    let engine = near_twins(config);
    let (retrieval, decision) = decided(&engine, text);
    assert_eq!(decision.label, "market");
    let shared = retrieval.candidates[0]
        .evidence
        .as_ref()
        .map(|e| e.matched.shared_words);
    assert!(shared.is_some_and(|n| n > 2), "{retrieval:?}");
    assert_eq!(
        engine.decisions().status(&retrieval, &decision),
        crate::engine::Status::Decided
    );
}

#[test]
fn a_long_text_sharing_no_word_with_the_labels_is_read_by_meaning() {
    let engine = near_twins_by_default();
    // Many words, none in either label's material: long, yet its words say nothing, so
    // meaning weighs in it as in a short text.
    let thin = "moneylenders everywhere, tables, charts, notes, remarks, comments, summaries, \
                graphs, figures and the usual";
    let mut analysis = engine.analyzer().analyze(thin);
    engine.analyzer().embed_query(&mut analysis, thin).unwrap();
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert!(retrieval.short_text, "{retrieval:?}");
    assert_eq!(retrieval.label_ids()[0], "market", "{retrieval:?}");
    // With the rule off (no text is short), the same text is a long one.
    let mut config = EngineConfig::default();
    config.ranking.name_weight = 0.0;
    config.ranking.short_text_terms = 0;
    let engine = near_twins(config);
    let mut analysis = engine.analyzer().analyze(thin);
    engine.analyzer().embed_query(&mut analysis, thin).unwrap();
    assert!(!engine.retriever().retrieve(&analysis).unwrap().short_text);
}
