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
//!   or the confident ones (docs/design/proximity.md, "Texts nothing labelled explains").
//!
//! `hybrid` adds the second hop to the first as a bounded nudge: the neighbours' votes as a
//! distribution, times `proximity_weight` × the best first-hop score; the second hop then
//! counts only texts classified earlier (the examples already speak through the first hop), and
//! only those at least as close to the query as its closest labelled example. Pure functions
//! over hits, so they are unit-tested without an index.

use serde::{Deserialize, Serialize};

use super::index::{DocId, DocKind, Hit, TermWeighting};
use super::probe::ProbeWeight;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
#[command(next_help_heading = "Ranking (engine.ranking)")]
pub struct RankingConfig {
    /// Candidates offered to the LLM, best first.
    #[arg(long, default_value_t = RankingConfig::default().max_candidates)]
    pub max_candidates: usize,
    /// A label's examples count best first, each weighted this times the one before (0: its
    /// best example alone, the nearest-example rule). With several shots a label whose
    /// examples agree beats one with a single lucky match (docs/design/retrieval.md, "Several
    /// examples per label").
    #[arg(long, default_value_t = RankingConfig::default().example_decay)]
    pub example_decay: f64,
    /// Weight of the cosine with a label's name.
    #[arg(long, default_value_t = RankingConfig::default().name_weight)]
    pub name_weight: f64,
    /// Weight of the cosine with a label's description.
    #[arg(long, default_value_t = RankingConfig::default().description_weight)]
    pub description_weight: f64,
    /// Nearest texts that vote in the second hop.
    #[arg(long, default_value_t = RankingConfig::default().proximity_k)]
    pub proximity_k: usize,
    /// Weight of the second hop in `hybrid`.
    #[arg(long, default_value_t = RankingConfig::default().proximity_weight)]
    pub proximity_weight: f64,
    /// Weight of the embedding signal (when the engine has a sentence encoder: by default).
    #[arg(long, default_value_t = RankingConfig::default().embedding_weight)]
    pub embedding_weight: f64,
    /// Within the embedding signal, weight of the cosine with a label's name.
    #[arg(long, default_value_t = RankingConfig::default().embedding_name_weight)]
    pub embedding_name_weight: f64,
    /// A text of at most this many distinct terms (content words, stemmed) is short: its
    /// words are too few to decide alone, and meaning weighs `embedding_weight_short` in it
    /// (0: no text is short).
    #[arg(long, default_value_t = RankingConfig::default().short_text_terms)]
    pub short_text_terms: usize,
    /// Weight of the embedding signal in a short text.
    #[arg(long, default_value_t = RankingConfig::default().embedding_weight_short)]
    pub embedding_weight_short: f64,
    /// Within the embedding signal of a short text, weight of the cosine with a label's name.
    #[arg(long, default_value_t = RankingConfig::default().embedding_name_weight_short)]
    pub embedding_name_weight_short: f64,
    /// A short text whose label reads less close in meaning than this (the cosine with its
    /// closest example or name) needs review, whatever its confidence: ranked by meaning, a
    /// query no label fits still comes out with a clear winner.
    #[arg(long, default_value_t = RankingConfig::default().short_text_min_meaning)]
    pub short_text_min_meaning: f64,
    /// A decided label that shares at most [`FEW_SHARED_WORDS`] of the text's words and reads
    /// less close in meaning than this needs review, whatever the text's length and its
    /// confidence: the fitted probe names some label firmly even for a text no label covers,
    /// and a word or two in common is all such a text has (docs/design/confidence.md, "Few
    /// words in common").
    #[arg(long, default_value_t = RankingConfig::default().few_words_min_meaning)]
    pub few_words_min_meaning: f64,
    /// Weight of the probe's belief (a label's probability over the best one, times the best
    /// score before it) in `ranked` and `hybrid`: `fitted` to the stream's examples, or a
    /// number (0 turns the probe off; [`super::probe_weight`]).
    #[arg(long, default_value_t = RankingConfig::default().probe_weight)]
    pub probe_weight: ProbeWeight,
    /// How the index weighs terms (`naive` always uses `idf`, the baseline's). Part of what
    /// makes replicas equal, like `seen_capacity`.
    #[arg(long, value_enum, default_value_t = RankingConfig::default().term_weighting)]
    pub term_weighting: TermWeighting,
}

/// Shared words (stems) that count as "a word or two" for `few_words_min_meaning`.
pub const FEW_SHARED_WORDS: usize = 2;

impl RankingConfig {
    /// Whether a text of `terms` distinct terms is short (never when `short_text_terms` is 0:
    /// the rule off).
    pub fn is_short(&self, terms: usize) -> bool {
        self.short_text_terms > 0 && terms <= self.short_text_terms
    }

    /// What is wrong with the settings, each problem starting with its key (none: they hold).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.max_candidates == 0 {
            problems.push("max_candidates: must be at least 1".to_string());
        }
        let weights = [
            ("name_weight", self.name_weight),
            ("example_decay", self.example_decay),
            ("description_weight", self.description_weight),
            ("proximity_weight", self.proximity_weight),
            ("embedding_weight", self.embedding_weight),
            ("embedding_name_weight", self.embedding_name_weight),
            ("embedding_weight_short", self.embedding_weight_short),
            (
                "embedding_name_weight_short",
                self.embedding_name_weight_short,
            ),
            ("short_text_min_meaning", self.short_text_min_meaning),
            ("few_words_min_meaning", self.few_words_min_meaning),
            ("probe_weight", self.probe_weight.fixed().unwrap_or(0.0)),
        ];
        for (key, value) in weights {
            if !(value.is_finite() && value >= 0.0) {
                problems.push(format!("{key}: must be a number ≥ 0"));
            }
        }
        if self.example_decay >= 1.0 {
            // At 1 a label's score would be the sum of its examples' cosines: it would grow
            // with every example, and every threshold on scores with it.
            problems.push("example_decay: must be below 1".to_string());
        }
        // A floor above every cosine would send every such text to review.
        let floors = [
            (
                "short_text_min_meaning",
                self.short_text_min_meaning,
                "short text",
            ),
            (
                "few_words_min_meaning",
                self.few_words_min_meaning,
                "text sharing a word or two with its label",
            ),
        ];
        for (key, floor, whom) in floors {
            if floor > 1.0 {
                problems.push(format!(
                    "{key}: a cosine, at most 1 (above it every {whom} would need review)"
                ));
            }
        }
        problems
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
            embedding_weight: 0.05,
            embedding_name_weight: 2.0,
            short_text_terms: 8,
            embedding_weight_short: 2.0,
            embedding_name_weight_short: 1.0,
            short_text_min_meaning: 0.4,
            few_words_min_meaning: 0.45,
            probe_weight: ProbeWeight::FITTED,
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
    /// Every active label with a positive score: the first [`Ranking::sorted`] of them best
    /// first (all of them from [`score`]; [`score_top`] orders only the best few, and the rest
    /// follow in no particular order).
    pub ranked: Vec<(u32, f64)>,
    /// How many of `ranked`'s first entries are in order.
    pub sorted: usize,
    /// Per ranked label, its most similar labelled example (document id), if any. Valid until
    /// the index next changes (compaction renumbers documents).
    pub best_example: Vec<Option<DocId>>,
    /// Labels with first-hop evidence (0 when the first hop is off or found nothing).
    pub first_hop_labels: usize,
    /// The best score any label would have if no label had a description (0 when nothing
    /// scored; it may belong to another label than `ranked`'s first): the scale emerging-class
    /// discovery judges by, which must not move when an LLM writes descriptions for some
    /// labels (see `discovery::unexplained`).
    pub best_without_descriptions: f64,
    /// Per label position, what its score is made of (confidence reads it).
    pub parts: ScoreParts,
}

/// Per label position, the parts of its score that say how sure a decision for it is: the
/// cosine with its closest labelled example, with its name, and its share of the second hop's
/// votes (0 when no text voted). Empty when nothing scored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreParts {
    pub example: Vec<f64>,
    pub name: Vec<f64>,
    pub vote_share: Vec<f64>,
}

impl ScoreParts {
    /// The parts of one label position (zeros for a position out of range).
    pub fn of(&self, label: u32) -> (f64, f64, f64) {
        let at = |v: &Vec<f64>| v.get(label as usize).copied().unwrap_or(0.0);
        (at(&self.example), at(&self.name), at(&self.vote_share))
    }
}

impl Ranking {
    /// Put every entry of `ranked` in order (and its best examples with them).
    pub fn sort_all(&mut self) {
        if self.sorted >= self.ranked.len() {
            return;
        }
        let mut entries: Vec<((u32, f64), Option<DocId>)> = self
            .ranked
            .iter()
            .copied()
            .zip(self.best_example.iter().copied())
            .collect();
        entries.sort_unstable_by(|a, b| in_order(&a.0, &b.0));
        (self.ranked, self.best_example) = entries.into_iter().unzip();
        self.sorted = self.ranked.len();
    }

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
    score_top(hits, labels, is_active, config, evidence, usize::MAX)
}

/// [`score`] with only the best `top` labels put in order (the rest of `ranked` follows them
/// unordered): what a caller reading only the best few needs, without sorting every label
/// that shares a common word with the query.
pub fn score_top(
    hits: &[Hit],
    labels: usize,
    is_active: impl Fn(u32) -> bool,
    config: &RankingConfig,
    evidence: Evidence,
    top: usize,
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
    let parts = score_parts(&mut gathered, &votes);
    let (ranked, sorted) = best_first(total, top);
    let best_example = ranked
        .iter()
        .map(|(l, _)| gathered.example_doc[*l as usize])
        .collect();
    Ranking {
        ranked,
        sorted,
        best_example,
        first_hop_labels,
        best_without_descriptions,
        parts,
    }
}

/// Takes the per-label cosines out of `gathered` (read last).
fn score_parts(gathered: &mut Gathered<'_>, votes: &[(usize, f64)]) -> ScoreParts {
    let all_votes: f64 = votes.iter().map(|(_, v)| v).sum();
    let mut vote_share = vec![0.0f64; gathered.example.len()];
    if all_votes > 0.0 {
        for &(l, vote) in votes {
            if let Some(share) = vote_share.get_mut(l) {
                *share = vote / all_votes;
            }
        }
    }
    ScoreParts {
        example: std::mem::take(&mut gathered.example),
        name: std::mem::take(&mut gathered.name),
        vote_share,
    }
}

/// Best first, ties by label position: labels are distinct, so the order is total (an
/// unstable sort gives the stable one's, and the best `k` picked first then sorted are the
/// first `k` of sorting them all).
fn in_order(a: &(u32, f64), b: &(u32, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// Labels with a positive score, the best `top` of them first and in order; how many are in
/// order comes back too (all of them when there are no more than `top`).
pub(super) fn best_first(total: Vec<f64>, top: usize) -> (Vec<(u32, f64)>, usize) {
    let mut ranked: Vec<(u32, f64)> = total
        .into_iter()
        .enumerate()
        .filter(|&(_, s)| s > 0.0)
        .map(|(l, s)| (l as u32, s))
        .collect();
    if top == 0 {
        return (ranked, 0);
    }
    if ranked.len() > top {
        ranked.select_nth_unstable_by(top - 1, in_order);
        ranked[..top].sort_unstable_by(in_order);
        return (ranked, top);
    }
    ranked.sort_unstable_by(in_order);
    let sorted = ranked.len();
    (ranked, sorted)
}

/// A query's hits sorted by what they say, per active label position: its closest example
/// (and which document that is), its examples' combined evidence, its name's and description's
/// similarity; and the texts that may vote in the second hop.
struct Gathered<'h> {
    example: Vec<f64>,
    examples_combined: Vec<f64>,
    example_doc: Vec<Option<DocId>>,
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
            let l = hit.label.index();
            if l >= labels || !is_active(hit.label.0) {
                continue;
            }
            match hit.kind {
                DocKind::Example => {
                    example_hits.push((hit.label.0, hit.similarity));
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
/// A label's one or two example hits are combined as they come (most labels have one or two
/// examples), and only labels with more are sorted, among themselves: a query sharing a common
/// word with every label's examples has as many hits as there are examples.
fn combine_examples(hits: Vec<(u32, f64)>, labels: usize, decay: f64) -> Vec<f64> {
    /// A label with two hits whose first is held in `combined` until the second comes.
    const HELD: u32 = u32::MAX;
    let mut combined = vec![0.0f64; labels];
    let mut count = vec![0u32; labels];
    for &(label, _) in &hits {
        count[label as usize] += 1;
    }
    let mut several: Vec<(u32, f64)> = Vec::new();
    for (label, similarity) in hits {
        let l = label as usize;
        match count[l] {
            1 => combined[l] += 1.0 * similarity,
            2 => {
                combined[l] = similarity;
                count[l] = HELD;
            }
            HELD => {
                let first = combined[l];
                let (best, other) = if similarity.total_cmp(&first).is_gt() {
                    (similarity, first)
                } else {
                    (first, similarity)
                };
                // As the sum below: 1 × the best, then `decay` (1 × decay) × the other.
                combined[l] = 0.0;
                combined[l] += 1.0 * best;
                combined[l] += (1.0 * decay) * other;
            }
            _ => several.push((label, similarity)),
        }
    }
    several.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut factor = 1.0;
    let mut previous = None;
    for (label, similarity) in several {
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
    if neighbours.is_empty() || k == 0 {
        return Vec::new();
    }
    neighbours.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then(a.doc.cmp(&b.doc))
    });
    neighbours.truncate(k);
    let mut votes = vec![0.0f64; labels];
    for hit in neighbours {
        votes[hit.label.index()] += hit.similarity;
    }
    votes
        .into_iter()
        .enumerate()
        .filter(|&(_, v)| v > 0.0)
        .collect()
}

#[cfg(test)]
mod tests;
