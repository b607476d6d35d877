use std::collections::HashSet;

use super::*;

fn t(text: &str) -> TermCounts {
    TermCounts::of(text)
}

fn index() -> TextIndex {
    let mut index = TextIndex::new(
        ClassifiedCapacity {
            seen: 3,
            tentative: 2,
        },
        TermWeighting::LabelSpread,
    );
    index.add_labelled(
        DocKind::Example,
        LabelPos(0),
        t("telescopes observe distant galaxies"),
        Some("x"),
    );
    index.add_labelled(
        DocKind::Example,
        LabelPos(1),
        t("bread dough rises in the oven"),
        None,
    );
    index.add_labelled(DocKind::Name, LabelPos(1), t("cooking"), None);
    index.reweigh();
    index
}

#[test]
fn a_query_finds_the_documents_sharing_its_terms_and_self_similarity_is_one() {
    let index = index();
    let hits = index.search(&t("galaxies seen by telescopes"));
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].label, LabelPos(0));
    let same = index.search(&t("telescopes observe distant galaxies"));
    assert!((same[0].similarity - 1.0).abs() < 1e-6, "{same:?}");
    assert!(index.search(&t("nothing shared here")).is_empty());
}

#[test]
fn hits_come_in_document_order_whether_a_query_touches_few_documents_or_most() {
    let mut index = TextIndex::new(ClassifiedCapacity::NONE, TermWeighting::LabelSpread);
    for i in 0..40 {
        let text = format!("common word{i} shared{}", i % 3);
        index.add_labelled(DocKind::Example, LabelPos(i % 5), t(&text), None);
    }
    index.reweigh();
    // Three documents of forty: the touched ids are sorted.
    let few = index.search(&t("word31 word7 word2"));
    let docs: Vec<usize> = few.iter().map(|h| h.doc.index()).collect();
    assert_eq!(docs, vec![2, 7, 31]);
    // Every document: the accumulator is read in order.
    let many = index.search(&t("common word7"));
    assert_eq!(many.len(), 40);
    assert!(many.windows(2).all(|w| w[0].doc < w[1].doc));
    let best = many
        .iter()
        .max_by(|a, b| a.similarity.total_cmp(&b.similarity));
    assert_eq!(best.map(|h| h.doc.index()), Some(7));
}

#[test]
fn seen_texts_are_bounded_and_the_oldest_goes_first() {
    let mut index = index();
    for i in 0..5 {
        index.add_classified(
            DocKind::Seen,
            LabelPos(1),
            &t(&format!("oven bread recipe number{i}")),
        );
    }
    assert_eq!(index.docs.classified_count(DocKind::Seen), 3);
    let hits = index.search(&t("number0 number4"));
    assert_eq!(hits.len(), 1, "{hits:?}");
    let kept: Vec<_> = index
        .documents()
        .alive()
        .filter(|d| d.kind == DocKind::Seen)
        .collect();
    assert!(kept[0].terms.counts.iter().any(|(t, _)| t == "number2"));
}

#[test]
fn tentative_texts_have_their_own_bound_and_never_evict_seen_ones() {
    let mut index = index();
    index.add_classified(DocKind::Seen, LabelPos(1), &t("oven bread recipe"));
    for i in 0..4 {
        index.add_classified(
            DocKind::Tentative,
            LabelPos(0),
            &t(&format!("galaxies survey number{i}")),
        );
    }
    assert_eq!(
        (
            index.docs.classified_count(DocKind::Seen),
            index.docs.classified_count(DocKind::Tentative)
        ),
        (1, 2)
    );
    // The two newest tentative texts and the seen one answer; the oldest two are gone.
    let hits = index.search(&t("number0 number1 number2 number3 recipe"));
    let count = |kind| hits.iter().filter(|h| h.kind == kind).count();
    assert_eq!(
        (count(DocKind::Seen), count(DocKind::Tentative)),
        (1, 2),
        "{hits:?}"
    );
}

fn similarities(index: &TextIndex, query: &TermCounts) -> Vec<(u32, f64)> {
    index
        .search(query)
        .iter()
        .map(|h| (h.label.0, h.similarity))
        .collect()
}

#[test]
fn rebuilding_from_the_stored_documents_gives_the_same_similarities() {
    let mut index = index();
    for i in 0..7 {
        index.add_classified(
            DocKind::Seen,
            LabelPos(i % 2),
            &t(&format!("distant oven galaxies word{i}")),
        );
    }
    let learned_then_evicted = index.vocabulary.len();
    let copy = restored(&index);
    let query = t("distant galaxies and an oven word5");
    assert_eq!(similarities(&index, &query), similarities(&copy, &query));
    // Evicted texts' terms are kept while something learned of them is not folded; a fold
    // forgets them and the next compaction drops them (three terms only each evicted text had).
    let mut index = copy;
    index.reweigh();
    index.compact();
    assert!(
        index.vocabulary.len() + 4 * 3 <= learned_then_evicted,
        "{} terms, {learned_then_evicted} before",
        index.vocabulary.len()
    );
    let copy = TextIndex::from_docs(
        index.documents().alive().cloned().collect(),
        index.weights().learned_state(),
        index.docs.capacity(),
        index.stats.weighting(),
    );
    let query = t("distant galaxies and an oven word5");
    assert_eq!(similarities(&index, &query), similarities(&copy, &query));
}

/// Every live document's posted weights (by term, every posting of it, bit for bit) and every
/// held term's inverse factor: what a full recompute would give, whatever the ids.
type Posted = (Vec<Vec<(String, Vec<u32>)>>, Vec<(String, u64)>);

fn posted(index: &TextIndex) -> Posted {
    let names = index.vocabulary.names();
    let docs = (0..index.docs.len())
        .map(DocId::at)
        .filter(|&id| index.docs.is_alive(id))
        .map(|id| {
            index
                .docs
                .term_ids(id)
                .iter()
                .map(|&term| {
                    let weights = index.postings.posted(term, id);
                    (names[term.index()].to_string(), weights)
                })
                .collect()
        })
        .collect();
    let mut inverse: Vec<(String, u64)> = names
        .iter()
        .enumerate()
        .filter_map(|(id, term)| {
            let bits = index.stats.held_inverse(TermId::at(id))?;
            Some((term.to_string(), bits))
        })
        .collect();
    inverse.sort_unstable();
    (docs, inverse)
}

/// A term's weight at one occurrence.
fn weight(index: &TextIndex, term: &str) -> f64 {
    index.stats.weight(index.vocabulary.get(term), 1)
}

fn restored(index: &TextIndex) -> TextIndex {
    TextIndex::from_docs(
        index.documents().alive().cloned().collect(),
        index.weights().learned_state(),
        index.docs.capacity(),
        index.stats.weighting(),
    )
}

/// Through folds, pending learning, evicted documents not yet compacted away and compactions,
/// an index rebuilt from what a snapshot stores answers bit for bit as the one that kept
/// running — when rebuilt, and as both go on learning the same texts.
#[test]
fn a_rebuilt_index_weighs_terms_as_the_running_one_at_every_point() {
    let mut index = index();
    let queries = [
        t("distant galaxies observed near the oven word3 word150"),
        t("bread rises word16"),
    ];
    let mut copies: Vec<(u32, TextIndex)> = Vec::new();
    let mut folds = 0;
    for i in 0..300u32 {
        let before = index.weights().learned_state().folded_texts;
        let text = t(&format!("distant oven galaxies word{} word{}", i % 17, i));
        for target in std::iter::once(&mut index).chain(copies.iter_mut().map(|(_, c)| c)) {
            if i % 3 == 0 {
                target.add_classified(DocKind::Tentative, LabelPos(i % 2), &text);
            } else {
                target.add_classified(DocKind::Seen, LabelPos((i + 1) % 2), &text);
            }
        }
        folds += usize::from(index.weights().learned_state().folded_texts != before);
        if [5, 63, 64, 100, 190].contains(&i) {
            copies.push((i, restored(&index)));
        }
        let weights = posted(&index);
        assert_eq!(weights, posted(&restored(&index)), "after text {i}");
        for (at, copy) in &copies {
            assert_eq!(weights, posted(copy), "after text {i}, copy at {at}");
        }
        for query in &queries {
            let running = similarities(&index, query);
            assert_eq!(
                running,
                similarities(&restored(&index), query),
                "after text {i}"
            );
            for (at, copy) in &copies {
                assert_eq!(
                    running,
                    similarities(copy, query),
                    "after text {i}, copy at {at}"
                );
            }
        }
    }
    assert_eq!(folds, 3, "folds after 64, 128 and 256 texts");
}

/// The paths the test above does not take, driven in lockstep the same way, under both
/// weightings: a label known only by its name learning texts (the spread's N changes at a fold:
/// everything is recomputed), a document holding a term twice (a stored document is read, not
/// trusted: the in-place repost gives up and everything is recomputed), and a round arriving
/// mid-stream.
#[test]
fn a_rebuilt_index_keeps_in_lockstep_through_new_labels_rounds_and_odd_documents() {
    for weighting in [TermWeighting::LabelSpread, TermWeighting::Idf] {
        let mut index = index();
        index.set_weighting(weighting);
        index.add_labelled(DocKind::Name, LabelPos(2), t("astronomy"), None);
        index.reweigh();
        let mut copies: Vec<(u32, TextIndex)> = Vec::new();
        for i in 0..200u32 {
            let mut text = t(&format!("distant oven galaxies word{} word{i}", i % 13));
            // From text 100 on, so the fold after 64 texts reposts in place (the number of
            // labels aside) and the one after 128 meets such a document.
            if i > 100 && i % 5 == 2 {
                let first = text.counts[0].clone();
                text.counts.push(first);
            }
            // Label 2 has a name and no example: what it learns from text 21 on makes it count
            // in N at the fold after 64 texts; the fold after 128 is incremental.
            let label = if i > 20 && i % 3 == 0 { 2 } else { i % 2 };
            for target in std::iter::once(&mut index).chain(copies.iter_mut().map(|(_, c)| c)) {
                if i == 150 {
                    target.add_labelled(DocKind::Example, LabelPos(3), t("quasar spectra"), None);
                    target.reweigh();
                }
                target.add_classified(DocKind::Seen, LabelPos(label), &text);
            }
            if [30, 90, 151].contains(&i) {
                copies.push((i, restored(&index)));
            }
            let weights = posted(&index);
            let context = format!("{} after text {i}", weighting.name());
            assert_eq!(weights, posted(&restored(&index)), "{context}");
            for (at, copy) in &copies {
                assert_eq!(weights, posted(copy), "{context}, copy at {at}");
            }
        }
        // Folds after 64 and 128 texts, and at the round (150 texts).
        assert_eq!(index.stats.folded_texts(), 150, "{}", weighting.name());
    }
}

/// Over a long stream of texts whose words are all new, the vocabulary stays bounded by the
/// live documents' terms and what was learned since the last fold (with the terms of the texts
/// live at that fold, evicted since): a fold forgets, a compaction drops.
#[test]
fn the_vocabulary_stays_bounded_by_live_documents_and_the_last_fold() {
    let mut index = index();
    let mut since_fold: HashSet<String> = HashSet::new();
    let mut live_at_fold: Vec<TermCounts> = Vec::new();
    let mut largest = 0;
    for i in 0..3000u32 {
        let text = t(&format!("fresh{i} words{i} only{i} here{i}"));
        let folded = index.stats.folded_texts();
        index.add_classified(DocKind::Seen, LabelPos(i % 2), &text);
        since_fold.extend(text.counts.into_iter().map(|(term, _)| term));
        if index.stats.folded_texts() != folded {
            since_fold.clear();
            live_at_fold = index
                .documents()
                .alive()
                .map(|doc| doc.terms.clone())
                .collect();
        }
        if index.docs.tombstones() == 0 {
            let live = index.documents().alive().map(|doc| &doc.terms);
            let others: HashSet<&str> = live
                .chain(&live_at_fold)
                .flat_map(|terms| terms.counts.iter().map(|(term, _)| term.as_str()))
                .filter(|term| !since_fold.contains(*term))
                .collect();
            let bound = since_fold.len() + others.len();
            assert!(
                index.vocabulary.len() <= bound,
                "after text {i}: {} terms, bound {bound}",
                index.vocabulary.len()
            );
        }
        largest = largest.max(index.vocabulary.len());
    }
    // Folds after 64, 128, …, 1024 and 2048 texts: at most the 1,024 texts learned between the
    // last two are held for what they taught (every text brings at most 9 terms: 4 words and
    // their 2- and 3-grams).
    assert!(largest < 1024 * 9 + 100, "{largest}");
}

/// Texts learned under labels that have no example (a round of names only) count in the
/// spread's N too: a term under every label weighs least, never less than nothing.
#[test]
fn labels_without_examples_keep_weights_positive_and_generic_terms_lightest() {
    let mut index = TextIndex::new(
        ClassifiedCapacity {
            seen: 1000,
            tentative: 0,
        },
        TermWeighting::LabelSpread,
    );
    for label in 0..3 {
        index.add_labelled(
            DocKind::Name,
            LabelPos(label),
            t(&format!("name{label}")),
            None,
        );
    }
    index.reweigh();
    for i in 0..FOLD_AT_LEAST as u32 {
        index.add_classified(
            DocKind::Seen,
            LabelPos(i % 3),
            &t(&format!("report rare{}", i % 3)),
        );
    }
    let (generic, rare) = (weight(&index, "report"), weight(&index, "rare0"));
    assert!(generic > 0.0 && generic < rare, "{generic} vs {rare}");
}

#[test]
fn a_term_learned_under_every_label_weighs_least_once_folded() {
    let mut index = index();
    let (galaxies, oven) = (weight(&index, "galaxi"), weight(&index, "oven"));
    assert_eq!(galaxies, oven, "each under one label of two");
    // "galaxi" is learned under label 1 too; "oven" stays under label 1 alone.
    for i in 0..FOLD_AT_LEAST - 1 {
        index.add_classified(
            DocKind::Seen,
            LabelPos(1),
            &t(&format!("galaxies bread word{i}")),
        );
    }
    assert_eq!(weight(&index, "galaxi"), galaxies, "not folded yet");
    index.add_classified(DocKind::Seen, LabelPos(1), &t("galaxies bread last"));
    assert!(weight(&index, "galaxi") < galaxies);
    assert_eq!(weight(&index, "oven"), oven);
}

#[test]
fn idf_counts_examples_whatever_classified_texts_say() {
    let mut index = TextIndex::new(
        ClassifiedCapacity {
            seen: 100,
            tentative: 0,
        },
        TermWeighting::Idf,
    );
    for (label, text) in [
        (0, "galaxies survey"),
        (0, "galaxies telescope"),
        (1, "oven bread"),
    ] {
        index.add_labelled(DocKind::Example, LabelPos(label), t(text), None);
    }
    index.reweigh();
    let galaxies = weight(&index, "galaxi");
    assert!(galaxies < weight(&index, "survey"), "two examples hold it");
    for i in 0..2 * FOLD_AT_LEAST {
        index.add_classified(
            DocKind::Seen,
            LabelPos(1),
            &t(&format!("galaxies bread word{i}")),
        );
    }
    assert_eq!(weight(&index, "galaxi"), galaxies);
}

mod against_brute_force {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    const WORDS: &[&str] = &[
        "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta",
    ];

    fn text(words: &[usize]) -> String {
        words
            .iter()
            .map(|&i| WORDS[i])
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Cosine computed from scratch, `(1 + ln tf)·w`, L2 norms, with `w` the smoothed inverse
    /// frequency of the term: among the examples (`idf`), or among the labels of the examples
    /// and of the classified texts, out of all their labels (label spread; all folded here).
    fn brute_force(
        weighting: TermWeighting,
        examples: &[(u32, TermCounts)],
        classified: &[(u32, TermCounts)],
        query: &TermCounts,
    ) -> Vec<f64> {
        let holds = |t: &TermCounts, term: &str| t.counts.iter().any(|(u, _)| u == term);
        let idf = |term: &str| {
            let (n, k) = match weighting {
                TermWeighting::Idf => (
                    examples.len(),
                    examples.iter().filter(|(_, e)| holds(e, term)).count(),
                ),
                TermWeighting::LabelSpread => {
                    let labels: HashSet<u32> =
                        examples.iter().chain(classified).map(|(l, _)| *l).collect();
                    let under: HashSet<u32> = examples
                        .iter()
                        .chain(classified)
                        .filter(|(_, d)| holds(d, term))
                        .map(|(l, _)| *l)
                        .collect();
                    (labels.len(), under.len())
                }
            };
            ((1.0 + n as f64) / (1.0 + k as f64)).ln() + 1.0
        };
        let docs: Vec<&TermCounts> = examples.iter().chain(classified).map(|(_, d)| d).collect();
        let vector = |t: &TermCounts| -> Vec<(String, f64)> {
            t.counts
                .iter()
                .map(|(term, c)| (term.clone(), (1.0 + f64::from(*c).ln()) * idf(term)))
                .collect()
        };
        let norm = |v: &[(String, f64)]| v.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
        let q = vector(query);
        docs.into_iter()
            .map(|d| {
                let v = vector(d);
                let dot: f64 = q
                    .iter()
                    .filter_map(|(t, w)| v.iter().find(|(u, _)| u == t).map(|(_, x)| w * x))
                    .sum();
                dot / (norm(&q) * norm(&v))
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The inverted index returns exactly the brute-force cosine of every document that
        /// shares a term with the query, and nothing else.
        #[test]
        fn search_equals_brute_force_cosine(
            examples in proptest::collection::vec((0u32..4, proptest::collection::vec(0usize..10, 1..8)), 1..8),
            seen in proptest::collection::vec((0u32..4, proptest::collection::vec(0usize..10, 1..8)), 0..6),
            query in proptest::collection::vec(0usize..10, 1..8),
            spread in any::<bool>(),
        ) {
            let weighting = if spread { TermWeighting::LabelSpread } else { TermWeighting::Idf };
            let mut index = TextIndex::new(ClassifiedCapacity { seen: 100, tentative: 0 }, weighting);
            let terms_of = |docs: &[(u32, Vec<usize>)]| -> Vec<(u32, TermCounts)> {
                docs.iter().map(|(l, d)| (*l, TermCounts::of(&text(d)))).collect()
            };
            let (examples, seen) = (terms_of(&examples), terms_of(&seen));
            for (label, terms) in &examples {
                index.add_labelled(DocKind::Example, LabelPos(*label), terms.clone(), None);
            }
            index.reweigh();
            for (label, terms) in &seen {
                index.add_classified(DocKind::Seen, LabelPos(*label), terms);
            }
            // Folds what the seen texts taught (the weights know nothing of them before).
            index.reweigh();
            let query = TermCounts::of(&text(&query));
            let expected = brute_force(weighting, &examples, &seen, &query);
            let hits = index.search(&query);
            prop_assert!(hits.windows(2).all(|w| w[0].doc < w[1].doc), "{hits:?}");
            for (doc, want) in expected.iter().enumerate() {
                let got = hits.iter().find(|h| h.doc.index() == doc).map(|h| h.similarity);
                match got {
                    Some(got) => prop_assert!((got - want).abs() < 1e-5, "doc {doc}: {got} vs {want}"),
                    None => prop_assert!(*want < 1e-12, "doc {doc} missing, cosine {want}"),
                }
            }
        }
    }
}
