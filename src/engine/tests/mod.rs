use super::*;

/// Retrieval for a text encoded by the engine's encoder, as the shell would have it.
fn retrieve_encoded(engine: &Engine, text: &str) -> Retrieval {
    let mut analysis = engine.analyzer().analyze(text);
    engine.analyzer().embed_query(&mut analysis, text).unwrap();
    engine.retriever().retrieve(&analysis).unwrap()
}

fn label(id: &str, examples: &[&str]) -> NewLabel {
    NewLabel {
        id: id.to_string(),
        name: Some(id.replace('_', " ")),
        description: None,
        examples: examples.iter().map(|s| s.to_string()).collect(),
    }
}

/// The paper's strategy, for the tests of the Steiner path.
fn steiner() -> EngineConfig {
    EngineConfig {
        strategy: Strategy::Steiner,
        ..EngineConfig::default()
    }
}

fn three_topics(config: EngineConfig) -> Engine {
    let mut engine = Engine::new(config);
    engine
        .apply_round(
            None,
            &[
                label(
                    "astronomy",
                    &["telescope observations of distant galaxies and stars in the night sky"],
                ),
                label(
                    "cooking",
                    &["a recipe for bread dough with flour, yeast and butter baked in the oven"],
                ),
                label(
                    "football",
                    &["the striker scored a goal in the final minute of the football match"],
                ),
            ],
        )
        .unwrap();
    engine
}

#[test]
fn round_registers_labels_and_indexes_examples() {
    let engine = three_topics(EngineConfig::default());
    assert_eq!(engine.labels().len(), 3);
    assert_eq!(engine.stats().documents, 3);
    assert!(engine.graph().keyword("telescope").is_some());
    assert_eq!(engine.labels().version(), 1);
}

#[test]
fn invalid_round_changes_nothing() {
    let mut engine = three_topics(EngineConfig::default());
    let before = (engine.graph().node_count(), engine.stats().documents);
    let err = engine
        .apply_round(
            None,
            &[label("physics", &["quantum"]), label("cooking", &["soup"])],
        )
        .unwrap_err();
    assert_eq!(err, EngineError::DuplicateLabel("cooking".into()));
    let err = engine
        .apply_round(None, &[label("physics", &["a"]), label("physics", &["b"])])
        .unwrap_err();
    assert_eq!(err, EngineError::RepeatedInRound("physics".into()));
    assert_eq!(
        (engine.graph().node_count(), engine.stats().documents),
        before
    );
    assert!(engine.labels().get("physics").is_none());
}

#[test]
fn steiner_retrieval_finds_the_matching_topic() {
    let engine = three_topics(steiner());
    let analysis = engine
        .analyzer()
        .analyze("new telescope images of galaxies");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert!(retrieval.label_ids().contains(&"astronomy".to_string()));
    assert!(!retrieval.label_ids().contains(&"cooking".to_string()));
    assert_eq!(retrieval.graph_choice, "astronomy");
    assert_eq!(retrieval.basis, Basis::SteinerTree);
}

#[test]
fn keywords_spanning_two_topics_bring_both_labels() {
    let engine = three_topics(steiner());
    let analysis = engine.analyzer().analyze("galaxies telescope bread oven");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(retrieval.label_ids(), vec!["astronomy", "cooking"]);
    assert!(retrieval.tree_cost.unwrap() > 0.0);
}

#[test]
fn text_with_no_known_keyword_gets_every_label() {
    let engine = three_topics(steiner());
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("zzz qqq"))
        .unwrap();
    assert_eq!(retrieval.basis, Basis::NoEvidence);
    assert_eq!(retrieval.label_ids().len(), 3);
}

#[test]
fn single_terminal_offers_its_own_labels() {
    let engine = three_topics(steiner());
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("yeast"))
        .unwrap();
    assert_eq!(retrieval.basis, Basis::SingleTerminal);
    assert_eq!(retrieval.label_ids(), vec!["cooking"]);
}

#[test]
fn decisions_flag_both_kinds_of_hallucination() {
    let engine = three_topics(steiner());
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("telescope galaxies stars"))
        .unwrap();
    let ok = engine.decisions().decide(&retrieval, Some("Astronomy"));
    assert_eq!(
        (ok.label.as_str(), ok.source, ok.hallucination),
        ("astronomy", Source::Llm, None)
    );
    let outside = engine.decisions().decide(&retrieval, Some("football"));
    assert_eq!(
        outside.hallucination,
        Some(HallucinationKind::OutsideCandidates)
    );
    assert_eq!(outside.label, "football");
    let unknown = engine
        .decisions()
        .decide(&retrieval, Some("marine biology"));
    assert_eq!(unknown.hallucination, Some(HallucinationKind::UnknownLabel));
    assert_eq!(
        (unknown.label.as_str(), unknown.source),
        ("astronomy", Source::Graph)
    );
    let no_llm = engine.decisions().decide(&retrieval, None);
    assert_eq!((no_llm.source, no_llm.hallucination), (Source::Graph, None));
}

#[test]
fn online_indexing_links_new_keywords_only() {
    let mut engine = three_topics(EngineConfig::default());
    let analysis = engine.analyzer().analyze("radio telescope pulsar survey");
    let nodes_before = engine.graph().node_count();
    let added = engine.learn(&analysis, "astronomy", true);
    assert!(added > 0);
    assert_eq!(engine.graph().node_count(), nodes_before + added);
    assert_eq!(engine.stats().documents, 4);
    let pulsar = engine.graph().keyword("pulsar").unwrap();
    assert_eq!(
        engine
            .graph()
            .labels_of(pulsar)
            .map(|(l, _)| l)
            .collect::<Vec<_>>(),
        vec!["astronomy"]
    );
    // "telescope" existed: its single edge is untouched.
    let telescope = engine.graph().keyword("telescope").unwrap();
    assert_eq!(engine.graph().labels_of(telescope).count(), 1);
}

#[test]
fn offline_ablation_learns_nothing() {
    let mut engine = three_topics(EngineConfig {
        online_indexing: false,
        ..EngineConfig::default()
    });
    let analysis = engine.analyzer().analyze("radio telescope pulsar survey");
    let before = (engine.graph().node_count(), engine.stats().documents);
    assert_eq!(engine.learn(&analysis, "astronomy", true), 0);
    assert_eq!(
        (engine.graph().node_count(), engine.stats().documents),
        before
    );
}

#[test]
fn retired_labels_are_never_candidates_nor_answers() {
    let mut engine = three_topics(EngineConfig::default());
    engine.retire_label("astronomy").unwrap();
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("telescope galaxies"))
        .unwrap();
    assert!(!retrieval.label_ids().contains(&"astronomy".to_string()));
    let decision = engine.decisions().decide(&retrieval, Some("astronomy"));
    assert_eq!(
        decision.hallucination,
        Some(HallucinationKind::UnknownLabel)
    );
    assert_eq!(
        engine.retire_label("astronomy"),
        Err(EngineError::RetiredLabel("astronomy".into()))
    );
    assert_eq!(
        engine.learn(&engine.analyzer().analyze("telescope"), "astronomy", true),
        0
    );
}

#[test]
fn classifying_before_any_round_is_an_error() {
    let engine = Engine::new(EngineConfig::default());
    assert_eq!(
        engine
            .retriever()
            .retrieve(&engine.analyzer().analyze("anything")),
        Err(EngineError::NoActiveLabels)
    );
}

#[test]
fn all_strategy_offers_every_active_label() {
    let engine = three_topics(EngineConfig {
        strategy: Strategy::All,
        ..EngineConfig::default()
    });
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("telescope"))
        .unwrap();
    assert_eq!(retrieval.label_ids().len(), 3);
    assert_eq!(retrieval.graph_choice, "astronomy");
}

#[test]
fn naive_strategy_uses_the_most_similar_examples() {
    let engine = three_topics(EngineConfig {
        strategy: Strategy::Naive,
        naive_k: 1,
        ..EngineConfig::default()
    });
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("the goal in the football match"))
        .unwrap();
    assert_eq!(retrieval.label_ids(), vec!["football"]);
    assert_eq!(retrieval.basis, Basis::SimilarExamples);
}

#[test]
fn zero_shot_labels_are_reached_through_their_descriptions() {
    let mut engine = Engine::new(EngineConfig::default());
    engine
        .apply_round(
            None,
            &[
                NewLabel {
                    id: "chemistry".into(),
                    name: Some("chemistry".into()),
                    description: Some("molecules, reactions, catalysts and chemical bonds".into()),
                    examples: vec![],
                },
                NewLabel {
                    id: "music".into(),
                    name: Some("music".into()),
                    description: Some("songs, melodies, orchestras and musical instruments".into()),
                    examples: vec![],
                },
            ],
        )
        .unwrap();
    let retrieval = engine
        .retriever()
        .retrieve(
            &engine
                .analyzer()
                .analyze("a new catalyst speeds up reactions"),
        )
        .unwrap();
    assert_eq!(retrieval.graph_choice, "chemistry");
    assert!(!retrieval.label_ids().contains(&"music".to_string()));
}

#[test]
fn keyword_input_ablation_sends_keywords() {
    let engine = three_topics(EngineConfig {
        keyword_input: true,
        ..EngineConfig::default()
    });
    let text = "telescope galaxies stars observations";
    let analysis = engine.analyzer().analyze(text);
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    let prompt = engine
        .decisions()
        .classification_prompt(&retrieval, text, &analysis);
    let fenced = prompt.user.strip_prefix("Text:\n<text>\n").unwrap();
    let body = fenced.split("\n</text>").next().unwrap();
    assert!(body.contains(", "));
    assert_ne!(body, text);
}

#[test]
fn unit_ablation_still_retrieves() {
    let engine = three_topics(EngineConfig {
        unit_costs: true,
        ..steiner()
    });
    let retrieval = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("galaxies telescope bread oven"))
        .unwrap();
    assert!(retrieval.label_ids().contains(&"astronomy".to_string()));
    assert!(retrieval.label_ids().contains(&"cooking".to_string()));
}

mod pruned_search;

#[test]
fn ranked_retrieval_orders_candidates_by_score_and_names_count() {
    let engine = three_topics(EngineConfig::default());
    let analysis = engine
        .analyzer()
        .analyze("telescope images of galaxies, and a note on bread");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    assert_eq!(retrieval.basis, Basis::RankedScores);
    assert_eq!(retrieval.label_ids(), vec!["astronomy", "cooking"]);
    assert_eq!(retrieval.graph_choice, "astronomy");
    assert!(retrieval.scores()[0] > retrieval.scores()[1]);
    assert_eq!(
        retrieval.candidates[0]
            .evidence
            .as_ref()
            .and_then(|e| e.example.as_deref()),
        Some("telescope observations of distant galaxies and stars in the night sky")
    );
    assert!(
        (retrieval.margin().unwrap() - (retrieval.scores()[0] - retrieval.scores()[1])).abs()
            < 1e-12
    );
    // The label's name alone is evidence: "cooking" is in no example.
    let named = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("cooking"))
        .unwrap();
    assert_eq!(named.label_ids(), vec!["cooking"]);
}

#[test]
fn candidates_are_capped_best_first() {
    let engine = three_topics(EngineConfig {
        ranking: rank::RankingConfig {
            max_candidates: 1,
            ..Default::default()
        },
        ..EngineConfig::default()
    });
    let retrieval = engine
        .retriever()
        .retrieve(
            &engine
                .analyzer()
                .analyze("galaxies and bread and a football goal in the oven"),
        )
        .unwrap();
    assert_eq!(retrieval.label_ids().len(), 1);
    assert_eq!(retrieval.label_ids()[0], retrieval.graph_choice);
}

#[test]
fn only_confident_decisions_teach_the_graph_and_the_text_graph() {
    let mut engine = three_topics(EngineConfig::default());
    let analysis = engine
        .analyzer()
        .analyze("radio telescope pulsar survey of galaxies");
    let retrieval = engine.retriever().retrieve(&analysis).unwrap();
    let graph_only = engine.decisions().decide(&retrieval, None);
    assert!(
        engine
            .decisions()
            .verdict(&retrieval, &graph_only)
            .confident,
        "{retrieval:?}"
    );
    let disagreeing = engine.decisions().decide(&retrieval, Some("cooking"));
    assert!(
        !engine
            .decisions()
            .verdict(&retrieval, &disagreeing)
            .confident
    );
    let hallucinated = engine
        .decisions()
        .decide(&retrieval, Some("marine biology"));
    assert!(
        !engine
            .decisions()
            .verdict(&retrieval, &hallucinated)
            .confident
    );

    let nodes = engine.graph().node_count();
    assert_eq!(engine.learn(&analysis, "astronomy", false), 0);
    assert_eq!(engine.graph().node_count(), nodes);
    assert_eq!(
        engine.stats().documents,
        4,
        "statistics learn from every text"
    );
    assert!(engine.learn(&analysis, "astronomy", true) > 0);
    // The learned text now votes for its label: "pulsar" is in no example, so every label is
    // offered, the second hop's vote first.
    let seen = engine
        .retriever()
        .retrieve(&engine.analyzer().analyze("pulsar"))
        .unwrap();
    assert_eq!(seen.basis, Basis::NoEvidence);
    assert_eq!(seen.graph_choice, "astronomy");
    assert_eq!(seen.label_ids(), vec!["astronomy", "cooking", "football"]);
}

#[test]
fn a_text_the_labels_material_does_not_know_is_offered_every_label_and_never_confident() {
    for strategy in [Strategy::Ranked, Strategy::Hybrid] {
        let engine = three_topics(EngineConfig {
            strategy,
            ..EngineConfig::default()
        });
        let analysis = engine.analyzer().analyze("zzz qqq 1987 12 cts");
        let retrieval = engine.retriever().retrieve(&analysis).unwrap();
        assert_eq!(retrieval.basis, Basis::NoEvidence, "{strategy:?}");
        assert_eq!(retrieval.label_ids().len(), 3, "{strategy:?}");
        assert!(retrieval.label_ids().contains(&retrieval.graph_choice));
        let decision = engine.decisions().decide(&retrieval, None);
        assert!(
            !engine.decisions().verdict(&retrieval, &decision).confident,
            "{strategy:?}"
        );
    }
}

#[test]
fn an_unsure_decision_speaks_only_for_a_text_nothing_labelled_explains() {
    for tentative_capacity in [20_000, 0] {
        let mut engine = three_topics(EngineConfig {
            capacity: index::ClassifiedCapacity {
                tentative: tentative_capacity,
                ..index::ClassifiedCapacity::default()
            },
            ..EngineConfig::default()
        });
        // An earnings table, decided without confidence as "football".
        let table = engine
            .analyzer()
            .analyze("zzz corp qtr shr 28 cts vs 22 cts");
        engine.learn(&table, "football", false);
        let kept = tentative_capacity > 0;
        assert_eq!(
            engine
                .index()
                .documents()
                .classified_count(DocKind::Tentative),
            usize::from(kept)
        );
        // The next table shares no word with any label's material: the unsure decision is the
        // only evidence, so it leads (unless none is kept); the text is still never confident.
        let next = engine
            .analyzer()
            .analyze("yyy inc qtr shr 40 cts vs 31 cts");
        let retrieval = engine.retriever().retrieve(&next).unwrap();
        assert_eq!(retrieval.basis, Basis::NoEvidence);
        assert_eq!(retrieval.graph_choice == "football", kept, "{retrieval:?}");
        let decision = engine.decisions().decide(&retrieval, None);
        assert!(!engine.decisions().verdict(&retrieval, &decision).confident);
        // A text its labels' material explains is not moved by it.
        let explained = engine
            .analyzer()
            .analyze("radio telescope survey qtr shr cts");
        let ranked = engine.retriever().retrieve(&explained).unwrap();
        assert_eq!(ranked.basis, Basis::RankedScores);
        assert_eq!(ranked.label_ids(), vec!["astronomy"], "{ranked:?}");
    }
}

#[test]
fn a_pooled_text_keeps_at_most_its_pool_terms_heaviest_terms() {
    let engine = three_topics(EngineConfig::default());
    let short = engine.analyzer().analyze("the telescope saw a pulsar");
    assert_eq!(engine.analyzer().poolable_terms(&short.terms), short.terms);
    // Hundreds of distinct made-up words: thousands of distinct 1–3-grams.
    let long_text: String = (0..800).map(|i| format!("word{i} ")).collect();
    let long = engine.analyzer().analyze(&long_text);
    assert!(long.terms.counts.len() > POOL_TERMS);
    let kept = engine.analyzer().poolable_terms(&long.terms);
    assert_eq!(kept.counts.len(), POOL_TERMS);
    assert!(
        kept.counts.windows(2).all(|w| w[0].0 < w[1].0),
        "sorted by term"
    );
    assert!(kept
        .counts
        .iter()
        .all(|entry| long.terms.counts.contains(entry)));
    assert_eq!(engine.analyzer().poolable(&long).terms, kept);
}

#[test]
fn naive_keeps_idf_whatever_the_configured_weighting() {
    assert_eq!(
        EngineConfig::default().term_weighting(),
        TermWeighting::LabelSpread
    );
    let naive = EngineConfig {
        strategy: Strategy::Naive,
        ..EngineConfig::default()
    };
    assert_eq!(naive.term_weighting(), TermWeighting::Idf);
    // An engine switched to `naive` weighs its examples as one built for it, though it has
    // folded "bread" under astronomy into its label spread.
    let mut engine = three_topics(EngineConfig::default());
    let built = three_topics(naive);
    let examples = |engine: &Engine, text: &str| -> Vec<(u32, f64)> {
        let query = engine.analyzer().analyze(text);
        let hits = engine.index().search(&query.terms);
        hits.iter()
            .filter(|h| h.kind == index::DocKind::Example)
            .map(|h| (h.label.0, h.similarity))
            .collect()
    };
    let before = examples(&engine, "a galaxy of bread");
    assert_eq!(before, examples(&built, "a galaxy of bread"));
    for i in 0..index::FOLD_AT_LEAST {
        let analysis = engine
            .analyzer()
            .analyze(&format!("a comet, a galaxy and a bread recipe {i}"));
        engine.learn(&analysis, "astronomy", false);
    }
    assert_ne!(examples(&engine, "a galaxy of bread"), before);
    engine.set_strategy(Strategy::Naive);
    assert_eq!(examples(&engine, "a galaxy of bread"), before);
}

mod corrections;
mod embedding;
mod nearest;
mod peers;
mod phrase_bound;
mod probe_weight;
mod refit;
mod restore;
mod scored;
