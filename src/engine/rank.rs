//! Ranked retrieval: per-label scores from a query's hits in the [`super::index::TextIndex`],
//! ranked and capped.
//!
//! Two kinds of evidence, measured separately (`gorag eval --strategy ranked,proximity,hybrid`):
//! - **first hop** (`ranked`): how close the query is to the label's own material — its
//!   labelled examples' cosines, best first, each weighted `example_decay` times the one before
//!   (the best example alone with one shot), plus `name_weight` × cosine with its name and
//!   `description_weight` × cosine with its description;
//! - **second hop** (`proximity`, TopoRAG's proximity retrieval over a graph of texts): the
//!   query's `proximity_k` nearest texts — labelled examples and texts already classified with
//!   confidence — each voting for its label with its similarity. For a text the first hop finds
//!   nothing for, texts classified *without* confidence (tentative texts) vote too, as much as
//!   confident ones: an unsure decision is better evidence than none. Such a text is never
//!   confident, so what it is decided reaches only the tentative texts, never the keyword graph
//!   or the confident ones (README, "Texts nothing labelled explains").
//!
//! `hybrid` adds the second hop to the first as a bounded nudge: the neighbours' votes as a
//! distribution, times `proximity_weight` × the best first-hop score; the second hop then
//! counts only texts classified earlier (the examples already speak through the first hop), and
//! only those at least as close to the query as its closest labelled example. Pure functions
//! over hits, so they are unit-tested without an index.

use serde::{Deserialize, Serialize};

use super::index::{ClassifiedCapacity, DocKind, Hit, TermWeighting};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RankingConfig {
    /// Candidates offered to the LLM, best first.
    pub max_candidates: usize,
    /// A label's examples count best first, each weighted this times the one before (0: its
    /// best example alone, the nearest-example rule). With several shots a label whose
    /// examples agree beats one with a single lucky match (README, "Several examples").
    pub example_decay: f64,
    /// Weight of the cosine with a label's name.
    pub name_weight: f64,
    /// Weight of the cosine with a label's description.
    pub description_weight: f64,
    /// Nearest texts that vote in the second hop.
    pub proximity_k: usize,
    /// Weight of the second hop in `hybrid`.
    pub proximity_weight: f64,
    /// Learn from a graph-only decision when its score margin (best − second) reaches this.
    pub learn_margin: f64,
    /// Learn from an LLM decision that agrees with retrieval's best label when the margin
    /// reaches this (a label the LLM chose against retrieval's best is never learned). The
    /// default equals `learn_margin`: the local 0.5B model's agreement was measured to add
    /// mostly wrong texts (README, "The model's agreement is no evidence"); a model whose
    /// agreement is measured to be evidence can be given a lower margin.
    pub learn_margin_agreeing: f64,
    /// Texts kept in the text graph (oldest evicted first). Part of what makes replicas equal:
    /// every replica of a group must use the same value.
    pub seen_capacity: usize,
    /// Texts classified without confidence kept as tentative texts (oldest evicted first; 0
    /// keeps none). They speak only for a text nothing labelled explains. The same on every
    /// replica, like `seen_capacity`.
    pub tentative_capacity: usize,
    /// Weight of the embedding signal (used only when a sentence encoder is configured).
    pub embedding_weight: f64,
    /// Within the embedding signal, weight of the cosine with a label's name.
    pub embedding_name_weight: f64,
    /// How the index weighs terms (`naive` always uses `idf`, the baseline's). Part of what
    /// makes replicas equal, like `seen_capacity`.
    pub term_weighting: TermWeighting,
}

impl RankingConfig {
    /// What the retrieval index keeps of each kind of classified text.
    pub fn capacity(&self) -> ClassifiedCapacity {
        ClassifiedCapacity {
            seen: self.seen_capacity,
            tentative: self.tentative_capacity,
        }
    }
}

impl Default for RankingConfig {
    fn default() -> Self {
        Self {
            max_candidates: 5,
            example_decay: 0.25,
            name_weight: 1.0,
            description_weight: 0.5,
            proximity_k: 10,
            proximity_weight: 0.1,
            learn_margin: 0.05,
            learn_margin_agreeing: 0.05,
            seen_capacity: 20_000,
            tentative_capacity: 20_000,
            embedding_weight: 0.1,
            embedding_name_weight: 2.0,
            term_weighting: TermWeighting::LabelSpread,
        }
    }
}

/// Which evidence a ranked strategy uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evidence {
    pub first_hop: bool,
    pub second_hop: bool,
}

/// Per-label scores, best first, active labels with a positive score only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranking {
    pub ranked: Vec<(u32, f64)>,
    /// Per ranked label, its most similar labelled example (document id), if any. Valid until
    /// the index next changes (compaction renumbers documents).
    pub best_example: Vec<Option<u32>>,
    /// Labels with first-hop evidence (0 when the first hop is off or found nothing).
    pub first_hop_labels: usize,
    /// The best score any label would have if no label had a description (0 when nothing
    /// scored; it may belong to another label than `ranked`'s first): the scale emerging-class
    /// discovery judges by, which must not move when an LLM writes descriptions for some
    /// labels (see `discovery::unexplained`).
    pub best_without_descriptions: f64,
}

impl Ranking {
    /// Best score minus the second best (the best alone when only one label scored).
    pub fn margin(&self) -> f64 {
        match self.ranked.as_slice() {
            [] => 0.0,
            [(_, only)] => *only,
            [(_, first), (_, second), ..] => first - second,
        }
    }
}

/// Score labels from a query's hits. `is_active(label)` filters retired labels; `labels` is the
/// number of label positions.
pub fn score(
    hits: &[Hit],
    labels: usize,
    is_active: impl Fn(u32) -> bool,
    config: &RankingConfig,
    evidence: Evidence,
) -> Ranking {
    let mut gathered = Gathered::from_hits(hits, labels, is_active, evidence, config.example_decay);
    let mut total = gathered.first_hop(config, evidence, config.description_weight);
    let first_hop_labels = total.iter().filter(|&&s| s > 0.0).count();
    let votes = if evidence.second_hop {
        let mut neighbours = std::mem::take(&mut gathered.neighbours);
        // Nothing labelled explains the text: there is no first hop for an unsure decision to
        // mislead, and the nearest texts, sure or not, are all the evidence there is.
        if evidence.first_hop && first_hop_labels == 0 {
            neighbours.append(&mut gathered.tentative);
        }
        second_hop_votes(neighbours, &gathered.example, config, evidence.first_hop)
    } else {
        Vec::new()
    };
    add_votes(&mut total, &votes, config, evidence.first_hop);
    // Discovery's scale: the same scoring as if no label had a description (the second hop's
    // bound included). Without descriptions among the hits it is the best score itself.
    let described = evidence.first_hop && gathered.description.iter().any(|&d| d > 0.0);
    let best_without_descriptions = if described {
        let mut undescribed = gathered.first_hop(config, evidence, 0.0);
        add_votes(&mut undescribed, &votes, config, evidence.first_hop);
        undescribed.into_iter().fold(0.0f64, f64::max)
    } else {
        total.iter().copied().fold(0.0f64, f64::max)
    };
    let ranked = best_first(total);
    let best_example = ranked
        .iter()
        .map(|(l, _)| gathered.example_doc[*l as usize])
        .collect();
    Ranking {
        ranked,
        best_example,
        first_hop_labels,
        best_without_descriptions,
    }
}

/// The embedding signal: `weight` × each active label's embedding similarity (one per label
/// position) added to its score, labels re-ranked; a label without lexical evidence can enter.
/// `first_hop_labels` and the discovery scale stay lexical: whether anything labelled explains
/// a text, and how well, is judged on its words.
pub fn add_embedding(
    ranking: &mut Ranking,
    similarity: &[f64],
    weight: f64,
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
    let ranked = best_first(total);
    ranking.best_example = ranked.iter().map(|(l, _)| example[*l as usize]).collect();
    ranking.ranked = ranked;
}

/// Labels with a positive score, best first (ties by label position).
fn best_first(total: Vec<f64>) -> Vec<(u32, f64)> {
    let mut ranked: Vec<(u32, f64)> = total
        .into_iter()
        .enumerate()
        .filter(|&(_, s)| s > 0.0)
        .map(|(l, s)| (l as u32, s))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

/// A query's hits sorted by what they say, per active label position: its closest example
/// (and which document that is), its examples' combined evidence, its name's and description's
/// similarity; and the texts that may vote in the second hop.
struct Gathered<'h> {
    example: Vec<f64>,
    examples_combined: Vec<f64>,
    example_doc: Vec<Option<u32>>,
    name: Vec<f64>,
    description: Vec<f64>,
    neighbours: Vec<&'h Hit>,
    tentative: Vec<&'h Hit>,
}

impl<'h> Gathered<'h> {
    /// Per label position, the first hop with descriptions at `description_weight` (all 0
    /// when `evidence` leaves the first hop out).
    fn first_hop(
        &self,
        config: &RankingConfig,
        evidence: Evidence,
        description_weight: f64,
    ) -> Vec<f64> {
        let mut total = vec![0.0f64; self.example.len()];
        if evidence.first_hop {
            for (l, score) in total.iter_mut().enumerate() {
                *score = self.examples_combined[l]
                    + config.name_weight * self.name[l]
                    + description_weight * self.description[l];
            }
        }
        total
    }

    fn from_hits(
        hits: &'h [Hit],
        labels: usize,
        is_active: impl Fn(u32) -> bool,
        evidence: Evidence,
        example_decay: f64,
    ) -> Self {
        let mut example_hits: Vec<(u32, f64)> = Vec::new();
        let mut gathered = Gathered {
            example: vec![0.0; labels],
            examples_combined: Vec::new(),
            example_doc: vec![None; labels],
            name: vec![0.0; labels],
            description: vec![0.0; labels],
            neighbours: Vec::new(),
            tentative: Vec::new(),
        };
        for hit in hits {
            let l = hit.label as usize;
            if l >= labels || !is_active(hit.label) {
                continue;
            }
            match hit.kind {
                DocKind::Example => {
                    example_hits.push((hit.label, hit.similarity));
                    if hit.similarity > gathered.example[l] {
                        gathered.example[l] = hit.similarity;
                        gathered.example_doc[l] = Some(hit.doc);
                    }
                    // With the first hop on, examples already speak through it.
                    if !evidence.first_hop {
                        gathered.neighbours.push(hit);
                    }
                }
                DocKind::Name => gathered.name[l] = gathered.name[l].max(hit.similarity),
                DocKind::Description => {
                    gathered.description[l] = gathered.description[l].max(hit.similarity)
                }
                DocKind::Seen => gathered.neighbours.push(hit),
                DocKind::Tentative => gathered.tentative.push(hit),
            }
        }
        gathered.examples_combined = combine_examples(example_hits, labels, example_decay);
        gathered
    }
}

/// Per label position, its examples' cosines best first, each weighted `decay` times the one
/// before: `s₁ + decay·s₂ + decay²·s₃ + …` (with one example, or `decay` 0, the best alone).
fn combine_examples(mut hits: Vec<(u32, f64)>, labels: usize, decay: f64) -> Vec<f64> {
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

/// TopoRAG's second hop: the nearest texts that may vote, each voting its similarity for its
/// label.
fn second_hop_votes(
    mut neighbours: Vec<&Hit>,
    example: &[f64],
    config: &RankingConfig,
    first_hop: bool,
) -> Vec<(usize, f64)> {
    if first_hop {
        // A text already seen speaks only when it is at least as close to the query as the
        // closest labelled example: farther ones add nothing the first hop does not already
        // say, and mostly repeat the labels seen most often.
        let closest_example = example.iter().copied().fold(0.0f64, f64::max);
        neighbours.retain(|hit| hit.similarity >= closest_example);
    }
    proximity_votes(neighbours, example.len(), config.proximity_k)
}

/// Adds the second hop's votes to the first hop's scores. Alone, the votes are the scores.
/// With the first hop, they are a distribution scaled by the best first-hop score: the second
/// hop can move a label by at most `proximity_weight` × that score, whatever the dataset's
/// text-to-text similarity (near-duplicate news items would otherwise drown the labels' own
/// evidence).
fn add_votes(total: &mut [f64], votes: &[(usize, f64)], config: &RankingConfig, first_hop: bool) {
    if votes.is_empty() {
        return;
    }
    let total_votes: f64 = votes.iter().map(|(_, v)| v).sum();
    let best_first = total.iter().copied().fold(0.0f64, f64::max);
    let scale = if !first_hop {
        1.0
    } else if best_first > 0.0 {
        config.proximity_weight * best_first / total_votes
    } else {
        config.proximity_weight / total_votes
    };
    for &(l, vote) in votes {
        total[l] += scale * vote;
    }
}

/// The `k` most similar texts (ties: earlier document first), each voting its similarity for
/// its label.
fn proximity_votes(mut neighbours: Vec<&Hit>, labels: usize, k: usize) -> Vec<(usize, f64)> {
    neighbours.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then(a.doc.cmp(&b.doc))
    });
    neighbours.truncate(k);
    let mut votes = vec![0.0f64; labels];
    for hit in neighbours {
        votes[hit.label as usize] += hit.similarity;
    }
    votes
        .into_iter()
        .enumerate()
        .filter(|&(_, v)| v > 0.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(doc: u32, kind: DocKind, label: u32, similarity: f64) -> Hit {
        Hit {
            doc,
            kind,
            label,
            similarity,
        }
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

    #[test]
    fn best_example_and_name_decide_the_first_hop() {
        let hits = [
            hit(0, DocKind::Example, 0, 0.30),
            hit(1, DocKind::Example, 0, 0.10),
            hit(2, DocKind::Example, 1, 0.25),
            hit(3, DocKind::Name, 1, 0.20),
        ];
        let config = RankingConfig::default();
        let first = Evidence {
            first_hop: true,
            second_hop: false,
        };
        let ranking = score(&hits, 3, |_| true, &config, first);
        // label 1: 0.25 + 1.0 * 0.20 = 0.45 > label 0: 0.30 + 0.25 * 0.10 (its examples best
        // first, decayed)
        assert_eq!(ranking.ranked[0].0, 1);
        assert!((ranking.ranked[0].1 - 0.45).abs() < 1e-9);
        assert!((ranking.ranked[1].1 - 0.325).abs() < 1e-9);
        assert_eq!(ranking.best_example, vec![Some(2), Some(0)]);
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
        let first = Evidence {
            first_hop: true,
            second_hop: false,
        };
        let decayed = score(&hits, 2, |_| true, &RankingConfig::default(), first);
        // label 0: 0.30 + 0.25 * 0.28 + 0.0625 * 0.20 = 0.3825 (best first, whatever the order
        // of the hits) > label 1: 0.35
        assert_eq!(decayed.ranked[0].0, 0);
        assert!((decayed.ranked[0].1 - 0.3825).abs() < 1e-9);
        assert_eq!(decayed.best_example, vec![Some(2), Some(1)]);
        let nearest = RankingConfig {
            example_decay: 0.0,
            ..RankingConfig::default()
        };
        let best_alone = score(&hits, 2, |_| true, &nearest, first);
        assert_eq!(best_alone.ranked, vec![(1, 0.35), (0, 0.30)]);
    }

    #[test]
    fn discovery_scale_leaves_descriptions_out() {
        let first = Evidence {
            first_hop: true,
            second_hop: false,
        };
        let config = RankingConfig::default();
        let plain = [
            hit(0, DocKind::Example, 0, 0.08),
            hit(1, DocKind::Example, 1, 0.06),
        ];
        let ranking = score(&plain, 2, |_| true, &config, first);
        // Without descriptions, the same number as the best score.
        assert_eq!(ranking.best_without_descriptions, ranking.ranked[0].1);
        // A description (weight 0.5) lifts label 1 above label 0 and over a 0.1 threshold; the
        // discovery scale stays at the examples' 0.08.
        let described = [plain[0], plain[1], hit(2, DocKind::Description, 1, 0.2)];
        let ranking = score(&described, 2, |_| true, &config, first);
        assert_eq!(ranking.ranked[0].0, 1);
        assert!((ranking.ranked[0].1 - 0.16).abs() < 1e-9);
        assert!((ranking.best_without_descriptions - 0.08).abs() < 1e-12);
        // Without the first hop (`proximity`), a description was never part of the score.
        let seen = [
            hit(3, DocKind::Seen, 1, 0.3),
            hit(2, DocKind::Description, 1, 0.2),
        ];
        let alone = Evidence {
            first_hop: false,
            second_hop: true,
        };
        let ranking = score(&seen, 2, |_| true, &config, alone);
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
        let alone = Evidence {
            first_hop: false,
            second_hop: true,
        };
        let ranking = score(&hits, 2, |_| true, &config, alone);
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
        let alone = Evidence {
            first_hop: false,
            second_hop: true,
        };
        let ranking = score(&unsure, 2, |_| true, &config, alone);
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

    #[test]
    fn the_embedding_signal_adds_to_active_labels_and_reranks() {
        let mut ranking = Ranking {
            ranked: vec![(0, 0.5), (1, 0.4)],
            best_example: vec![Some(7), Some(8)],
            first_hop_labels: 2,
            best_without_descriptions: 0.5,
        };
        // Label 1 gains most; label 2 had no lexical evidence and enters; label 3 is retired.
        add_embedding(&mut ranking, &[0.1, 0.5, 0.2, 0.9], 0.5, |l| l != 3);
        assert_eq!(ranking.ranked.len(), 3);
        let order: Vec<u32> = ranking.ranked.iter().map(|(l, _)| *l).collect();
        assert_eq!(order, vec![1, 0, 2]);
        assert!((ranking.ranked[0].1 - 0.65).abs() < 1e-12);
        assert_eq!(ranking.best_example, vec![Some(8), Some(7), None]);
        assert_eq!(
            ranking.first_hop_labels, 2,
            "whether words explain the text stays lexical"
        );
        assert_eq!(ranking.best_without_descriptions, 0.5);
    }
}
