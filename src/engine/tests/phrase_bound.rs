//! The keyword statistics' bound (`phrase_capacity`): where the engine applies it, and that
//! replicas agree across it.

use super::{label, three_topics};
use crate::engine::saved::EngineState;
use crate::engine::{Engine, EngineConfig, NewLabel};

#[test]
fn a_restore_between_phrase_bounds_behaves_like_an_engine_that_never_stopped() {
    let config = EngineConfig {
        phrase_capacity: 60,
        ..EngineConfig::default()
    };
    let mut live = three_topics(config.clone());
    let mut restored: Option<Engine> = None;
    for i in 0..40 {
        if i == 17 {
            restored = Some(Engine::from_state(config.clone(), EngineState::of(&live)).unwrap());
        }
        // Shared words, and words no other text has: the statistics keep outgrowing 60.
        let text = format!("telescope comet orbit{i} nebula{i} galaxy{}", i % 5);
        let analysis = live.analyzer().analyze(&text);
        let chosen = live.retriever().retrieve(&analysis).unwrap().graph_choice;
        let confident = i % 2 == 0;
        live.learn(&analysis, &chosen, confident);
        // The replica learns as a changelog replay does: the same learn record.
        if let Some(replica) = restored.as_mut() {
            assert_eq!(replica.analyzer().analyze(&text), analysis);
            replica.learn(&analysis, &chosen, confident);
        }
        assert!(live.stats().phrase_count() <= 60);
    }
    let restored = restored.unwrap();
    assert_eq!(restored.digest(), live.digest());
    // Every text and the astronomy example: a common phrase keeps its exact count.
    assert_eq!(live.stats().df("telescope"), 41);
    assert_eq!(
        live.stats().df("orbit3"),
        0,
        "a phrase of one text is forgotten"
    );
    let query = "comet orbit39 galaxy4";
    assert_eq!(
        live.analyzer().analyze(query),
        restored.analyzer().analyze(query),
        "the same keywords after the restore"
    );
}

/// Keyword edges as comparable data: (keyword, label, mean cost), sorted.
fn keyword_edges(engine: &Engine) -> Vec<(String, String, f64)> {
    let mut edges: Vec<_> = engine
        .graph()
        .keyword_edges()
        .map(|(k, l, cost)| (k.to_string(), l.to_string(), cost.mean()))
        .collect();
    edges.sort_by(|a, b| a.partial_cmp(b).unwrap());
    edges
}

#[test]
fn a_round_past_the_capacity_chooses_its_keywords_before_forgetting() {
    // Three examples of 40 words none other has: 117 phrases each, 351 in all.
    let round: Vec<NewLabel> = (0..3)
        .map(|l| {
            let words: Vec<String> = (0..40).map(|w| format!("word{l}x{w}")).collect();
            label(&format!("topic{l}"), &[words.join(" ").as_str()])
        })
        .collect();
    let mut bounded = Engine::new(EngineConfig {
        phrase_capacity: 100,
        ..EngineConfig::default()
    });
    let mut unbounded = Engine::new(EngineConfig::default());
    bounded.apply_round(None, &round).unwrap();
    unbounded.apply_round(None, &round).unwrap();
    assert_eq!(unbounded.stats().phrase_count(), 351);
    assert!(bounded.stats().phrase_count() <= 100);
    // The examples' keywords, and their costs, as if nothing had been forgotten.
    assert!(!keyword_edges(&unbounded).is_empty());
    assert_eq!(keyword_edges(&bounded), keyword_edges(&unbounded));
}
