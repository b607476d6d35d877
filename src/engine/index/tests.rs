use super::*;

fn t(text: &str) -> TermCounts {
    TermCounts::of(text)
}

fn index() -> TextIndex {
    let mut index = TextIndex::new(ClassifiedCapacity {
        seen: 3,
        tentative: 2,
    });
    index.add_labelled(
        DocKind::Example,
        0,
        t("telescopes observe distant galaxies"),
        Some("x"),
    );
    index.add_labelled(
        DocKind::Example,
        1,
        t("bread dough rises in the oven"),
        None,
    );
    index.add_labelled(DocKind::Name, 1, t("cooking"), None);
    index.reweigh();
    index
}

#[test]
fn a_query_finds_the_documents_sharing_its_terms_and_self_similarity_is_one() {
    let index = index();
    let hits = index.search(&t("galaxies seen by telescopes"));
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].label, 0);
    let same = index.search(&t("telescopes observe distant galaxies"));
    assert!((same[0].similarity - 1.0).abs() < 1e-6, "{same:?}");
    assert!(index.search(&t("nothing shared here")).is_empty());
}

#[test]
fn seen_texts_are_bounded_and_the_oldest_goes_first() {
    let mut index = index();
    for i in 0..5 {
        index.add_seen(1, &t(&format!("oven bread recipe number{i}")));
    }
    assert_eq!(index.seen_count(), 3);
    let hits = index.search(&t("number0 number4"));
    assert_eq!(hits.len(), 1, "{hits:?}");
    let kept: Vec<_> = index.docs().filter(|d| d.kind == DocKind::Seen).collect();
    assert!(kept[0].terms.counts.iter().any(|(t, _)| t == "number2"));
}

#[test]
fn tentative_texts_have_their_own_bound_and_never_evict_seen_ones() {
    let mut index = index();
    index.add_seen(1, &t("oven bread recipe"));
    for i in 0..4 {
        index.add_tentative(0, &t(&format!("galaxies survey number{i}")));
    }
    assert_eq!((index.seen_count(), index.tentative_count()), (1, 2));
    // The two newest tentative texts and the seen one answer; the oldest two are gone.
    let hits = index.search(&t("number0 number1 number2 number3 recipe"));
    let count = |kind| hits.iter().filter(|h| h.kind == kind).count();
    assert_eq!(
        (count(DocKind::Seen), count(DocKind::Tentative)),
        (1, 2),
        "{hits:?}"
    );
}

#[test]
fn rebuilding_from_the_stored_documents_gives_the_same_similarities() {
    let mut index = index();
    for i in 0..7 {
        index.add_seen(i % 2, &t(&format!("distant oven galaxies word{i}")));
    }
    assert!(
        index.vocabulary_len() < 40,
        "evicted terms are dropped on compaction"
    );
    let copy = TextIndex::from_docs(index.docs().cloned().collect(), index.capacity);
    let query = t("distant galaxies and an oven word5");
    let a: Vec<_> = index
        .search(&query)
        .iter()
        .map(|h| (h.label, h.similarity))
        .collect();
    let b: Vec<_> = copy
        .search(&query)
        .iter()
        .map(|h| (h.label, h.similarity))
        .collect();
    assert_eq!(a, b);
}

mod against_brute_force {
    use super::*;
    use proptest::prelude::*;

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

    /// Cosine computed from scratch: idf from the examples, `(1 + ln tf)·idf`, L2 norms.
    fn brute_force(examples: &[TermCounts], docs: &[TermCounts], query: &TermCounts) -> Vec<f64> {
        let n = examples.len() as f64;
        let idf = |term: &str| {
            let df = examples
                .iter()
                .filter(|e| e.counts.iter().any(|(t, _)| t == term))
                .count() as f64;
            ((1.0 + n) / (1.0 + df)).ln() + 1.0
        };
        let vector = |t: &TermCounts| -> Vec<(String, f64)> {
            t.counts
                .iter()
                .map(|(term, c)| (term.clone(), (1.0 + f64::from(*c).ln()) * idf(term)))
                .collect()
        };
        let norm = |v: &[(String, f64)]| v.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
        let q = vector(query);
        docs.iter()
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
            examples in proptest::collection::vec(proptest::collection::vec(0usize..10, 1..8), 1..8),
            seen in proptest::collection::vec(proptest::collection::vec(0usize..10, 1..8), 0..6),
            query in proptest::collection::vec(0usize..10, 1..8),
        ) {
            let mut index = TextIndex::new(ClassifiedCapacity { seen: 100, tentative: 0 });
            let example_terms: Vec<TermCounts> =
                examples.iter().map(|e| TermCounts::of(&text(e))).collect();
            for (i, terms) in example_terms.iter().enumerate() {
                index.add_labelled(DocKind::Example, i as u32, terms.clone(), None);
            }
            index.reweigh();
            let mut all_docs = example_terms.clone();
            for s in &seen {
                let terms = TermCounts::of(&text(s));
                index.add_seen(0, &terms);
                all_docs.push(terms);
            }
            let query = TermCounts::of(&text(&query));
            let expected = brute_force(&example_terms, &all_docs, &query);
            let hits = index.search(&query);
            for (doc, want) in expected.iter().enumerate() {
                let got = hits.iter().find(|h| h.doc as usize == doc).map(|h| h.similarity);
                match got {
                    Some(got) => prop_assert!((got - want).abs() < 1e-5, "doc {doc}: {got} vs {want}"),
                    None => prop_assert!(*want < 1e-12, "doc {doc} missing, cosine {want}"),
                }
            }
        }
    }
}
