//! Fusion: how a text's signals become one score per candidate label, and how the LLM's belief
//! joins them. Each signal is measured where it lives; this module only weighs them:
//! 1. **words** — the first hop over the labels' own material and the second hop's votes
//!    ([`super::rank::score_top`]);
//! 2. **meaning** — the sentence encoder's similarity with each label's examples and name,
//!    weighed by the text's length ([`meaning_weights`], [`add_meaning`]);
//! 3. **the probe** — the logistic regression fitted on the stream's labelled material, as a
//!    belief relative to the best label's, at the stream's fitted weight ([`add_probe`],
//!    [`super::probe_weight`]);
//! 4. **the LLM** (`scored` choice) — its first-token belief over the candidates against
//!    retrieval's scores ([`with_llm`]).
//!
//! What a fused candidate comes to (its confidence, whether it is published, learned) is read
//! from its parts by [`super::confidence`] and [`super::verdict`].

use super::rank::{best_first, Ranking, RankingConfig};

/// The embedding signal's weight and its name weight for a text of `terms` distinct terms
/// (docs/design/embedding-signal.md, "Short texts").
pub fn meaning_weights(config: &RankingConfig, terms: usize) -> (f64, f64) {
    if config.is_short(terms) {
        (
            config.embedding_weight_short,
            config.embedding_name_weight_short,
        )
    } else {
        (config.embedding_weight, config.embedding_name_weight)
    }
}

/// Meaning: `weight` × each active label's embedding similarity (one per label
/// position) added to its score, labels re-ranked; a label without lexical evidence can enter.
/// `first_hop_labels` and the discovery scale stay lexical: whether anything labelled explains
/// a text, and how well, is judged on its words.
/// The best `top` labels come out in order, as from [`super::rank::score_top`].
pub fn add_meaning(
    ranking: &mut Ranking,
    similarity: &[f64],
    weight: f64,
    top: usize,
    is_active: impl Fn(u32) -> bool,
) {
    let mut total = vec![0.0f64; similarity.len()];
    let mut example = vec![None; similarity.len()];
    for (&(label, score), best) in ranking.ranked.iter().zip(&ranking.best_example) {
        if let Some(slot) = total.get_mut(label as usize) {
            *slot = score;
            example[label as usize] = *best;
        }
    }
    for (label, (score, similarity)) in total.iter_mut().zip(similarity).enumerate() {
        if is_active(label as u32) {
            *score += weight * similarity;
        }
    }
    let (ranked, sorted) = best_first(total, top);
    ranking.best_example = ranked.iter().map(|(l, _)| example[*l as usize]).collect();
    ranking.ranked = ranked;
    ranking.sorted = sorted;
}

/// The probe in `ranked` and `hybrid`: `weight` × the best score so far × each active label's
/// relative belief ([`super::probe::Probe::relative_belief`]) added to its score, on the
/// ranking's own scale.
pub fn add_probe(
    ranking: &mut Ranking,
    belief: &[f64],
    weight: f64,
    top: usize,
    is_active: impl Fn(u32) -> bool,
) {
    let scale = ranking
        .ranked
        .first()
        .map_or(1.0, |&(_, best)| best.max(1e-3));
    add_meaning(ranking, belief, weight * scale, top, is_active);
}

/// The candidate maximising `score / best score + weight × belief` (ties: earlier candidate);
/// `scores` and `belief` are per candidate, in order (a candidate without a score counts 0).
/// Without retrieval scores (`steiner`, `all`, `naive`, or no evidence) the belief decides,
/// whatever the weight.
pub fn with_llm(scores: &[Option<f64>], belief: &[f64], weight: f64) -> usize {
    let top = scores.iter().flatten().copied().fold(0.0f64, f64::max);
    let weight = if top > 0.0 { weight } else { 1.0 };
    let mut best = (0, f64::NEG_INFINITY);
    for (i, b) in belief.iter().enumerate() {
        let retrieval = match (scores.get(i).copied().flatten(), top > 0.0) {
            (Some(s), true) => s / top,
            _ => 0.0,
        };
        let fused = retrieval + weight * b;
        if fused > best.1 {
            best = (i, fused);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::index::DocId;

    fn docs(ids: &[Option<u32>]) -> Vec<Option<DocId>> {
        ids.iter().map(|id| id.map(DocId)).collect()
    }

    #[test]
    fn the_embedding_signal_adds_to_active_labels_and_reranks() {
        let mut ranking = Ranking {
            ranked: vec![(0, 0.5), (1, 0.4)],
            sorted: 2,
            best_example: docs(&[Some(7), Some(8)]),
            first_hop_labels: 2,
            best_without_descriptions: 0.5,
            ..Ranking::default()
        };
        // Label 1 gains most; label 2 had no lexical evidence and enters; label 3 is retired.
        add_meaning(&mut ranking, &[0.1, 0.5, 0.2, 0.9], 0.5, 2, |l| l != 3);
        assert_eq!(ranking.ranked.len(), 3);
        let order: Vec<u32> = ranking.ranked.iter().map(|(l, _)| *l).collect();
        assert_eq!(order, vec![1, 0, 2]);
        assert!((ranking.ranked[0].1 - 0.65).abs() < 1e-12);
        assert_eq!(ranking.best_example, docs(&[Some(8), Some(7), None]));
        assert_eq!(
            ranking.first_hop_labels, 2,
            "whether words explain the text stays lexical"
        );
        assert_eq!(ranking.best_without_descriptions, 0.5);
    }

    #[test]
    fn fusion_lets_a_confident_llm_overturn_a_close_retrieval_call_only() {
        let scores = [Some(0.50), Some(0.45), Some(0.10)];
        let llm_prefers_second = [0.1, 0.9, 0.0];
        assert_eq!(with_llm(&scores, &llm_prefers_second, 1.0), 1);
        let llm_prefers_third = [0.1, 0.0, 0.9];
        assert_eq!(with_llm(&scores, &llm_prefers_third, 0.5), 0);
        // No retrieval scores (steiner, all): the belief decides, even at weight 0.
        assert_eq!(with_llm(&[], &llm_prefers_third, 1.0), 2);
        assert_eq!(with_llm(&[], &llm_prefers_third, 0.0), 2);
        assert_eq!(with_llm(&[Some(0.0); 3], &llm_prefers_third, 0.0), 2);
        // A candidate without a score counts 0, in its own place.
        assert_eq!(with_llm(&[None, Some(0.5)], &[0.0, 0.0], 1.0), 1);
    }
}
