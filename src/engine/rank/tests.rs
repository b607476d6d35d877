use super::*;
use crate::engine::index::LabelPos;

fn hit(doc: u32, kind: DocKind, label: u32, similarity: f64) -> Hit {
    Hit {
        doc: DocId(doc),
        kind,
        label: LabelPos(label),
        similarity,
    }
}

fn docs(ids: &[Option<u32>]) -> Vec<Option<DocId>> {
    ids.iter().map(|id| id.map(DocId)).collect()
}

fn weighted(proximity_weight: f64) -> RankingConfig {
    RankingConfig {
        proximity_weight,
        ..RankingConfig::default()
    }
}

const BOTH: Evidence = Evidence {
    first_hop: true,
    second_hop: true,
};

const FIRST_HOP: Evidence = Evidence {
    first_hop: true,
    second_hop: false,
};

const SECOND_HOP: Evidence = Evidence {
    first_hop: false,
    second_hop: true,
};

#[test]
fn examples_best_first_and_name_decide_the_first_hop() {
    let hits = [
        hit(0, DocKind::Example, 0, 0.30),
        hit(1, DocKind::Example, 0, 0.10),
        hit(2, DocKind::Example, 1, 0.25),
        hit(3, DocKind::Name, 1, 0.20),
    ];
    let config = RankingConfig::default();
    let ranking = score(&hits, 3, |_| true, &config, FIRST_HOP);
    // label 1: 0.25 + 1.0 * 0.20 = 0.45 > label 0: 0.30 + 0.25 * 0.10 (its examples best
    // first, decayed)
    assert_eq!(ranking.ranked[0].0, 1);
    assert!((ranking.ranked[0].1 - 0.45).abs() < 1e-9);
    assert!((ranking.ranked[1].1 - 0.325).abs() < 1e-9);
    assert_eq!(ranking.best_example, docs(&[Some(2), Some(0)]));
    assert!((ranking.margin() - 0.125).abs() < 1e-9);
}

#[test]
fn a_label_whose_examples_agree_beats_one_lucky_match() {
    let hits = [
        hit(0, DocKind::Example, 0, 0.20),
        hit(1, DocKind::Example, 1, 0.35),
        hit(2, DocKind::Example, 0, 0.30),
        hit(3, DocKind::Example, 0, 0.28),
    ];
    let decayed = score(&hits, 2, |_| true, &RankingConfig::default(), FIRST_HOP);
    // label 0: 0.30 + 0.25 * 0.28 + 0.0625 * 0.20 = 0.3825 (best first, whatever the order
    // of the hits) > label 1: 0.35
    assert_eq!(decayed.ranked[0].0, 0);
    assert!((decayed.ranked[0].1 - 0.3825).abs() < 1e-9);
    assert_eq!(decayed.best_example, docs(&[Some(2), Some(1)]));
    let nearest = RankingConfig {
        example_decay: 0.0,
        ..RankingConfig::default()
    };
    let best_alone = score(&hits, 2, |_| true, &nearest, FIRST_HOP);
    assert_eq!(best_alone.ranked, vec![(1, 0.35), (0, 0.30)]);
}

#[test]
fn discovery_scale_leaves_descriptions_out() {
    let config = RankingConfig::default();
    let plain = [
        hit(0, DocKind::Example, 0, 0.08),
        hit(1, DocKind::Example, 1, 0.06),
    ];
    let ranking = score(&plain, 2, |_| true, &config, FIRST_HOP);
    // Without descriptions, the same number as the best score.
    assert_eq!(ranking.best_without_descriptions, ranking.ranked[0].1);
    // A description (weight 0.5) lifts label 1 above label 0 and over a 0.1 threshold; the
    // discovery scale stays at the examples' 0.08.
    let described = [plain[0], plain[1], hit(2, DocKind::Description, 1, 0.2)];
    let ranking = score(&described, 2, |_| true, &config, FIRST_HOP);
    assert_eq!(ranking.ranked[0].0, 1);
    assert!((ranking.ranked[0].1 - 0.16).abs() < 1e-9);
    assert!((ranking.best_without_descriptions - 0.08).abs() < 1e-12);
    // Without the first hop (`proximity`), a description was never part of the score.
    let seen = [
        hit(3, DocKind::Seen, 1, 0.3),
        hit(2, DocKind::Description, 1, 0.2),
    ];
    let ranking = score(&seen, 2, |_| true, &config, SECOND_HOP);
    assert_eq!(ranking.best_without_descriptions, ranking.ranked[0].1);
    // In `hybrid` the second hop's bound is scaled as if no label had a description: the
    // same number as scoring hits without the description at all.
    let close_seen = hit(3, DocKind::Seen, 0, 0.5);
    let with = [
        plain[0],
        plain[1],
        hit(2, DocKind::Description, 1, 0.2),
        close_seen,
    ];
    let without = [plain[0], plain[1], close_seen];
    let hybrid_with = score(&with, 2, |_| true, &config, BOTH);
    let hybrid_without = score(&without, 2, |_| true, &config, BOTH);
    assert_eq!(
        hybrid_with.best_without_descriptions,
        hybrid_without.ranked[0].1
    );
    assert!(hybrid_with.ranked[0].1 > hybrid_with.best_without_descriptions);
}

#[test]
fn seen_texts_vote_in_the_second_hop_and_only_the_k_nearest_count() {
    let hits = [
        hit(0, DocKind::Example, 0, 0.20),
        hit(1, DocKind::Seen, 1, 0.50),
        hit(2, DocKind::Seen, 1, 0.40),
        hit(3, DocKind::Seen, 0, 0.01),
    ];
    let config = RankingConfig {
        proximity_k: 3,
        ..RankingConfig::default()
    };
    let ranking = score(&hits, 2, |_| true, &config, SECOND_HOP);
    assert_eq!(ranking.ranked, vec![(1, 0.9), (0, 0.2)]);
    let config = RankingConfig {
        proximity_weight: 0.3,
        ..config
    };
    let hybrid = score(&hits, 2, |_| true, &config, BOTH);
    // Votes as a distribution (label 1: 0.9/0.9; label 0's seen text, at 0.01, is farther
    // than the closest example and does not vote), scaled by 0.3 × the best first-hop
    // score (0.2).
    assert_eq!(hybrid.ranked[0], (0, 0.2));
    assert!((hybrid.ranked[1].1 - 0.06).abs() < 1e-9);
}

#[test]
fn in_hybrid_only_seen_texts_as_close_as_the_closest_example_vote() {
    let mut hits = vec![
        hit(0, DocKind::Example, 0, 0.30),
        hit(1, DocKind::Example, 1, 0.29),
    ];
    // Many seen texts of label 1, each farther than label 0's example.
    hits.extend((2..5).map(|doc| hit(doc, DocKind::Seen, 1, 0.29 - 0.04 * f64::from(doc - 2))));
    let config = weighted(0.5);
    let far = score(&hits, 2, |_| true, &config, BOTH);
    assert_eq!(far.ranked, vec![(0, 0.30), (1, 0.29)]);
    // One seen text closer than every example: it alone votes.
    hits.push(hit(5, DocKind::Seen, 1, 0.40));
    let near = score(&hits, 2, |_| true, &config, BOTH);
    assert_eq!(near.ranked[0].0, 1);
    assert!((near.ranked[0].1 - (0.29 + 0.5 * 0.30)).abs() < 1e-9);
}

/// The second hop's bar is the closest single example, not a label's combined examples (the
/// nudge is bounded by the best combined score); a retired label's examples count for nothing.
#[test]
fn the_second_hop_bar_is_the_closest_example_not_a_combined_score() {
    let hits = [
        hit(0, DocKind::Example, 0, 0.30),
        hit(1, DocKind::Example, 0, 0.28),
        hit(2, DocKind::Example, 1, 0.20),
        hit(3, DocKind::Seen, 1, 0.31),
        hit(4, DocKind::Example, 2, 0.50),
    ];
    let ranking = score(&hits, 3, |label| label != 2, &weighted(0.5), BOTH);
    // label 0: 0.30 + 0.25 * 0.28 = 0.37. The seen text (0.31) is closer than the closest
    // example (0.30, label 2 retired) though not than label 0's combined 0.37: it votes, and
    // label 1 gets 0.20 + 0.5 * 0.37.
    assert_eq!(ranking.ranked.len(), 2, "{:?}", ranking.ranked);
    assert_eq!(ranking.ranked[0].0, 1);
    assert!((ranking.ranked[0].1 - (0.20 + 0.5 * 0.37)).abs() < 1e-9);
    assert!((ranking.ranked[1].1 - 0.37).abs() < 1e-9);
}

#[test]
fn tentative_texts_vote_only_for_a_text_nothing_labelled_explains() {
    let unsure = [
        hit(1, DocKind::Seen, 0, 0.10),
        hit(2, DocKind::Tentative, 1, 0.60),
        hit(3, DocKind::Tentative, 1, 0.50),
    ];
    let config = RankingConfig::default();
    // No first-hop evidence: the tentative texts are the nearest and outvote the seen one.
    let blind = score(&unsure, 2, |_| true, &config, BOTH);
    assert_eq!(blind.first_hop_labels, 0);
    assert_eq!(blind.ranked.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 0]);
    // With an example in reach they are not heard, however close.
    let mut explained = unsure.to_vec();
    explained.push(hit(0, DocKind::Example, 0, 0.05));
    let ranking = score(&explained, 2, |_| true, &config, BOTH);
    assert_eq!(ranking.ranked.iter().map(|r| r.0).collect::<Vec<_>>(), [0]);
    // Nor on their own in `proximity`, which has no first hop to be blind.
    let ranking = score(&unsure, 2, |_| true, &config, SECOND_HOP);
    assert_eq!(ranking.ranked, vec![(0, 0.10)]);
}

#[test]
fn retired_labels_and_empty_evidence_give_nothing() {
    let hits = [
        hit(0, DocKind::Example, 0, 0.9),
        hit(1, DocKind::Seen, 0, 0.9),
    ];
    let ranking = score(&hits, 1, |_| false, &RankingConfig::default(), BOTH);
    assert!(ranking.ranked.is_empty());
    assert_eq!(ranking.margin(), 0.0);
}

/// Per label, its examples' cosines best first with the decay, as first written: every hit
/// sorted by label, then by cosine (the oracle for the bucketed version).
fn combined_by_sorting(mut hits: Vec<(u32, f64)>, labels: usize, decay: f64) -> Vec<f64> {
    hits.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut combined = vec![0.0f64; labels];
    let mut factor = 1.0;
    let mut previous = None;
    for (label, similarity) in hits {
        if previous != Some(label) {
            factor = 1.0;
            previous = Some(label);
        }
        combined[label as usize] += factor * similarity;
        factor *= decay;
    }
    combined
}

proptest::proptest! {
    #[test]
    fn bucketed_examples_combine_bit_for_bit_as_sorted_ones(
        hits in proptest::collection::vec(
            (0u32..12, proptest::prop_oneof![proptest::strategy::Just(0.5f64), 0.0f64..1.0]),
            0..40,
        ),
        decay in 0.0f64..1.0,
    ) {
        let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
        proptest::prop_assert_eq!(
            bits(combine_examples(hits.clone(), 12, decay)),
            bits(combined_by_sorting(hits, 12, decay))
        );
    }
}

proptest::proptest! {
    /// The best few in order are the first few of every label in order, and sorting the rest
    /// afterwards gives the whole order.
    #[test]
    fn the_best_few_in_order_are_the_first_of_all_in_order(
        totals in proptest::collection::vec(proptest::prop_oneof![
            proptest::strategy::Just(0.0f64),
            0.0f64..1.0,
            proptest::strategy::Just(0.5f64),
        ], 0..30),
        top in 0usize..8,
    ) {
        let (all, sorted_all) = best_first(totals.clone(), usize::MAX);
        proptest::prop_assert_eq!(sorted_all, all.len());
        let (few, sorted) = best_first(totals, top);
        proptest::prop_assert_eq!(sorted, top.min(all.len()));
        proptest::prop_assert_eq!(&few[..sorted], &all[..sorted]);
        let mut ranking = Ranking {
            best_example: vec![None; few.len()],
            ranked: few,
            sorted,
            ..Ranking::default()
        };
        ranking.sort_all();
        proptest::prop_assert_eq!(ranking.ranked, all);
    }
}
