//! Emerging classes (GraphRAG's communities, applied to the stream): texts the active labels
//! explain poorly are pooled; a pass over the pool finds communities of similar texts (Leiden);
//! each community large and cohesive enough, and not explained by the active labels' own
//! material after all, becomes a proposed class, named by its keywords.
//!
//! Pure and synchronous like the engine it reads from: [`unexplained`] judges one classified
//! text, [`Pool`] keeps the bounded set, [`communities::find`] and [`proposal::propose`] turn
//! the pool into proposals. The stream and the eval decide when to run a pass.

pub mod communities;
pub mod hold;
pub mod label_map;
pub mod map_html;
pub mod meaning;
pub mod pool;
pub mod proposal;
pub mod reconcile;
pub mod report;
mod similarity;

use serde::{Deserialize, Serialize};

use crate::engine::answer::HallucinationKind;
use crate::engine::{Basis, Decision, Retrieval, Status};

pub use communities::Community;
pub use hold::{Held, Holding, OpenProposal};
pub use meaning::{meaning_of, Meaning};
pub use pool::{Pool, PoolNote, PooledText};
pub use proposal::Proposal;

/// `[discovery]`; `gorag eval --discover` reads the same fields as flags (`--discover-min-size`
/// is `discovery.min_size`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
#[command(next_help_heading = "Discovery (discovery.*)")]
pub struct DiscoveryConfig {
    /// `gorag serve`: pool poorly explained texts and publish proposals.
    #[arg(skip = DiscoveryConfig::default().enabled)]
    pub enabled: bool,
    /// `gorag serve`: a community pass after every this many pooled texts.
    #[arg(skip = DiscoveryConfig::default().pass_every)]
    pub pass_every: u64,
    /// Pooled texts kept (oldest dropped first).
    #[arg(skip = DiscoveryConfig::default().pool_capacity)]
    pub pool_capacity: usize,
    /// A ranked decision whose best score (label descriptions left out) is below this is
    /// unexplained.
    #[arg(long = "discover-max-score", default_value_t = DiscoveryConfig::default().max_score)]
    pub max_score: f64,
    /// A text whose fitted probe's highest probability over the active labels is below this
    /// multiple of uniform (1 / active labels) is unexplained: the fit could not tell the
    /// labels apart (docs/design/emerging-classes.md, "Doubt"). 0: not read. Only where the
    /// ranking reads a probe.
    #[arg(long = "discover-doubt-below", default_value_t = DiscoveryConfig::default().doubt_below)]
    pub doubt_below: f64,
    /// Neighbours each pooled text links to in the similarity graph.
    #[arg(long = "discover-neighbours", default_value_t = DiscoveryConfig::default().neighbours)]
    pub neighbours: usize,
    /// Weakest similarity that makes an edge.
    #[arg(long = "discover-min-similarity", default_value_t = DiscoveryConfig::default().min_similarity)]
    pub min_similarity: f64,
    /// Smallest community proposed.
    #[arg(long = "discover-min-size", default_value_t = DiscoveryConfig::default().min_size)]
    pub min_size: usize,
    /// Lowest cohesion (mean cosine of members with their centroid) proposed.
    #[arg(long = "discover-min-cohesion", default_value_t = DiscoveryConfig::default().min_cohesion)]
    pub min_cohesion: f64,
    /// A community whose members' mean best score against the active labels' own material
    /// reaches this is not proposed: known classes' thinly covered texts, not a missing class
    /// (see [`communities::known_score`]).
    #[arg(long = "discover-max-community-score", default_value_t = DiscoveryConfig::default().max_community_score)]
    pub max_community_score: f64,
    /// Leiden's resolution (modularity): higher gives smaller communities.
    #[arg(long = "discover-resolution", default_value_t = DiscoveryConfig::default().resolution)]
    pub resolution: f64,
    /// A community whose centroid's cosine with an open proposal's community reaches this joins
    /// it, before the size, cohesion and explained rules (one theme a later pass cut in parts;
    /// 1: only identical centroids, in effect off; docs/design/emerging-classes.md, "One
    /// proposal per theme").
    #[arg(long = "discover-merge-above", default_value_t = DiscoveryConfig::default().merge_above)]
    pub merge_above: f64,
    /// How much a pooled text's meaning (the sentence encoder's vector) weighs against its
    /// words in the similarity communities are found by, from 0 (words alone) to 1 (meaning
    /// alone; docs/design/emerging-classes.md, "Meaning")…
    #[arg(long = "discover-meaning-weight", default_value_t = DiscoveryConfig::default().meaning_weight)]
    pub meaning_weight: f64,
    /// …and in a short text (`engine.ranking.short_text_terms`).
    #[arg(long = "discover-meaning-weight-short", default_value_t = DiscoveryConfig::default().meaning_weight_short)]
    pub meaning_weight_short: f64,
    /// While a proposal is open, a text whose meaning weighs in a pass (a short text, by
    /// default) that reads like its members (in meaning) and not like any active label is
    /// held for review: `needs_review` with the proposal named, learned
    /// under no label, pooled (docs/design/emerging-classes.md, "Texts held for an open
    /// proposal"). Needs a sentence encoder.
    #[arg(long = "discover-hold-open", default_value_t = DiscoveryConfig::default().hold_open, action = clap::ArgAction::Set)]
    pub hold_open: bool,
    /// Pool a text whose LLM answer named no known label (`unknown_label`), whatever its
    /// retrieval score.
    #[arg(long = "discover-pool-unknown-label", default_value_t = DiscoveryConfig::default().pool_unknown_label, action = clap::ArgAction::Set)]
    pub pool_unknown_label: bool,
    /// Pool a text whose prediction needs review (confidence below `engine.abstain_below`),
    /// whatever its score. Off: measured, it pools three times as many known classes' texts
    /// and recovers fewer new classes (docs/design/decisions.md).
    #[arg(long = "discover-pool-needs-review", default_value_t = DiscoveryConfig::default().pool_needs_review, action = clap::ArgAction::Set)]
    pub pool_needs_review: bool,
    /// Pool a text published with no label (`no_match`: `[engine.no_match]`), whatever its
    /// score.
    #[arg(long = "discover-pool-no-match", default_value_t = DiscoveryConfig::default().pool_no_match, action = clap::ArgAction::Set)]
    pub pool_no_match: bool,
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            pass_every: 50,
            pool_capacity: 5_000,
            max_score: 0.1,
            doubt_below: 3.2,
            neighbours: 10,
            min_similarity: 0.1,
            min_size: 8,
            min_cohesion: 0.3,
            max_community_score: 0.08,
            resolution: 8.0,
            merge_above: 0.4,
            meaning_weight: 0.0,
            meaning_weight_short: 0.8,
            hold_open: true,
            pool_unknown_label: true,
            pool_needs_review: false,
            pool_no_match: true,
        }
    }
}

impl DiscoveryConfig {
    /// Settings that would make every pass empty or meaningless, refused up front.
    pub fn validate(&self) -> Result<(), String> {
        for (key, value) in [
            ("max_score", self.max_score),
            ("min_cohesion", self.min_cohesion),
        ] {
            if !value.is_finite() {
                return Err(format!("{key}: {value} is no number"));
            }
        }
        if self.min_size < 2 {
            return Err(format!(
                "min_size: {} (a community needs at least 2 texts)",
                self.min_size
            ));
        }
        if !(self.max_community_score.is_finite() && self.max_community_score > 0.0) {
            return Err(format!(
                "max_community_score: {} (must be positive: no community would be proposed)",
                self.max_community_score
            ));
        }
        if self.pass_every == 0 {
            return Err("pass_every: 0 (must be at least 1)".into());
        }
        if !(self.min_similarity > 0.0 && self.min_similarity <= 1.0) {
            return Err(format!(
                "min_similarity: {} (must be above 0 and at most 1)",
                self.min_similarity
            ));
        }
        // Below 1 × uniform no top probability can fall: a setting that silently never fires.
        if !(self.doubt_below == 0.0 || (self.doubt_below.is_finite() && self.doubt_below >= 1.0)) {
            return Err(format!(
                "doubt_below: {} (a multiple of uniform: 0 to turn it off, else 1 or more)",
                self.doubt_below
            ));
        }
        if !(self.merge_above > 0.0 && self.merge_above <= 1.0) {
            return Err(format!(
                "merge_above: {} (a cosine: above 0 and at most 1)",
                self.merge_above
            ));
        }
        if self.neighbours == 0 {
            return Err("neighbours: 0 (no text would link to any other)".into());
        }
        if !(self.resolution.is_finite() && self.resolution > 0.0) {
            return Err(format!(
                "resolution: {} (must be positive)",
                self.resolution
            ));
        }
        for (key, weight) in [
            ("meaning_weight", self.meaning_weight),
            ("meaning_weight_short", self.meaning_weight_short),
        ] {
            if !(0.0..=1.0).contains(&weight) {
                return Err(format!("{key}: {weight} (must be between 0 and 1)"));
            }
        }
        if self.pool_capacity < self.min_size {
            return Err(format!(
                "pool_capacity: {} below min_size {}",
                self.pool_capacity, self.min_size
            ));
        }
        Ok(())
    }
}

/// Why a text counts as poorly explained by the active labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unexplained {
    /// The LLM named no known label.
    UnknownLabel,
    /// Nothing in the text links to any label's material.
    NoEvidence,
    /// Retrieval's best label scored below `max_score` (descriptions left out).
    WeakScore,
    /// The decision's confidence was below `engine.abstain_below`: published as needing
    /// review. (After the first three, so that notes written before it keep their numbers.)
    NeedsReview,
    /// The text matched no label and was published without one (`no_match`), or an operator
    /// said no label fits it (a correction to none). After the first four, for the same
    /// reason.
    NoMatch,
    /// The fitted probe spread its belief: its highest probability over the active labels was
    /// below `doubt_below` × uniform. Last, for the same reason.
    Doubt,
}

/// Whether (and why) a classified text is poorly explained by the active labels; `status`:
/// what its decision was published as.
pub fn unexplained(
    retrieval: &Retrieval,
    decision: &Decision,
    status: Status,
    config: &DiscoveryConfig,
) -> Option<Unexplained> {
    if config.pool_unknown_label && decision.hallucination == Some(HallucinationKind::UnknownLabel)
    {
        return Some(Unexplained::UnknownLabel);
    }
    if retrieval.basis == Basis::NoEvidence {
        return Some(Unexplained::NoEvidence);
    }
    if weak_score(retrieval, config) {
        return Some(Unexplained::WeakScore);
    }
    if in_doubt(retrieval, config) {
        return Some(Unexplained::Doubt);
    }
    match status {
        Status::NoMatch if config.pool_no_match => Some(Unexplained::NoMatch),
        Status::NeedsReview if config.pool_needs_review => Some(Unexplained::NeedsReview),
        _ => None,
    }
}

/// Whether retrieval's best score on discovery's scale (descriptions left out) is below
/// `max_score`; false for strategies without scores and texts without evidence.
pub fn weak_score(retrieval: &Retrieval, config: &DiscoveryConfig) -> bool {
    retrieval
        .discovery_score
        .is_some_and(|best| best < config.max_score)
}

/// Whether the fitted probe's highest probability is below `doubt_below` × uniform, and
/// below one half (with as few labels as `doubt_below`, the multiple of uniform would reach 1
/// and every text would be in doubt); false where no probe was read.
pub fn in_doubt(retrieval: &Retrieval, config: &DiscoveryConfig) -> bool {
    let active = retrieval.active_labels.max(1) as f64;
    let below = (config.doubt_below / active).min(MAX_DOUBTED_TOP);
    retrieval.probe_top.is_some_and(|top| top < below)
}

/// The highest top probability read as doubt, whatever the number of labels.
const MAX_DOUBTED_TOP: f64 = 0.5;

/// What a pooled text's retrieval said of it when it was classified: its best ranked score
/// without descriptions, 0 when nothing linked it to any label, None for strategies without
/// scores. A community whose members arrived near the weak-score ceiling together is a known
/// class's thinly covered texts (see [`communities::known_score`]).
pub fn arrival_score(retrieval: &Retrieval) -> Option<f64> {
    match retrieval.basis {
        Basis::NoEvidence => Some(0.0),
        Basis::RankedScores => retrieval.discovery_score,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Candidate, Scoring, Source};

    fn retrieval(basis: Basis, scores: Vec<f64>) -> Retrieval {
        Retrieval {
            discovery_score: scores.first().copied(),
            candidates: scores
                .iter()
                .map(|&s| Candidate::scored(format!("l{s}"), s))
                .collect(),
            scoring: Scoring::Uncalibrated,
            terminals: Vec::new(),
            basis,
            tree_cost: None,
            graph_choice: "l".into(),
            first_hop_labels: 0,
            active_labels: 0,
            short_text: false,
            probe_top: None,
        }
    }

    fn decision(hallucination: Option<HallucinationKind>) -> Decision {
        Decision {
            label: "l".into(),
            source: Source::Graph,
            hallucination,
            confidence: 0.5,
        }
    }

    #[test]
    fn settings_that_make_passes_meaningless_are_refused() {
        assert!(DiscoveryConfig::default().validate().is_ok());
        for bad in [
            DiscoveryConfig {
                min_size: 1,
                ..DiscoveryConfig::default()
            },
            DiscoveryConfig {
                neighbours: 0,
                ..DiscoveryConfig::default()
            },
            DiscoveryConfig {
                resolution: -1.0,
                ..DiscoveryConfig::default()
            },
            DiscoveryConfig {
                max_community_score: 0.0,
                ..DiscoveryConfig::default()
            },
            DiscoveryConfig {
                doubt_below: 0.5,
                ..DiscoveryConfig::default()
            },
            DiscoveryConfig {
                doubt_below: f64::NAN,
                ..DiscoveryConfig::default()
            },
            DiscoveryConfig {
                merge_above: 0.0,
                ..DiscoveryConfig::default()
            },
            DiscoveryConfig {
                merge_above: 1.5,
                ..DiscoveryConfig::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn arrival_scores_are_the_ranked_best_zero_without_evidence_and_none_without_scores() {
        assert_eq!(
            arrival_score(&retrieval(Basis::RankedScores, vec![0.07, 0.01])),
            Some(0.07)
        );
        assert_eq!(
            arrival_score(&retrieval(Basis::NoEvidence, Vec::new())),
            Some(0.0)
        );
        assert_eq!(
            arrival_score(&retrieval(Basis::SteinerTree, Vec::new())),
            None
        );
    }

    #[test]
    fn weak_scores_no_evidence_and_unknown_answers_are_unexplained() {
        let config = DiscoveryConfig::default();
        let strong = retrieval(Basis::RankedScores, vec![0.8, 0.1]);
        let weak = retrieval(Basis::RankedScores, vec![0.05, 0.01]);
        let nothing = retrieval(Basis::NoEvidence, Vec::new());
        assert_eq!(
            unexplained(&strong, &decision(None), Status::Decided, &config),
            None
        );
        assert_eq!(
            unexplained(&weak, &decision(None), Status::Decided, &config),
            Some(Unexplained::WeakScore)
        );
        assert_eq!(
            unexplained(&nothing, &decision(None), Status::Decided, &config),
            Some(Unexplained::NoEvidence)
        );
        let unknown = decision(Some(HallucinationKind::UnknownLabel));
        assert_eq!(
            unexplained(&strong, &unknown, Status::Decided, &config),
            Some(Unexplained::UnknownLabel)
        );
        let scores_only = DiscoveryConfig {
            pool_unknown_label: false,
            ..DiscoveryConfig::default()
        };
        assert_eq!(
            unexplained(&strong, &unknown, Status::Decided, &scores_only),
            None
        );
        assert_eq!(
            unexplained(&weak, &unknown, Status::Decided, &scores_only),
            Some(Unexplained::WeakScore)
        );
        // Discovery's score, not the ranked best (which a description may have lifted).
        let described = Retrieval {
            discovery_score: Some(0.05),
            ..retrieval(Basis::RankedScores, vec![0.3])
        };
        assert_eq!(
            unexplained(&described, &decision(None), Status::Decided, &config),
            Some(Unexplained::WeakScore)
        );
        assert_eq!(arrival_score(&described), Some(0.05));
        // A well-scored text whose decision needs review is pooled for that alone, when
        // `pool_needs_review` says so.
        assert_eq!(
            unexplained(&strong, &decision(None), Status::NeedsReview, &config),
            None
        );
        let reviewed = DiscoveryConfig {
            pool_needs_review: true,
            ..config.clone()
        };
        assert_eq!(
            unexplained(&strong, &decision(None), Status::NeedsReview, &reviewed),
            Some(Unexplained::NeedsReview)
        );
        assert_eq!(
            unexplained(&strong, &decision(None), Status::Decided, &config),
            None
        );
        // A text published with no label is pooled for that alone, unless `pool_no_match` is
        // off.
        assert_eq!(
            unexplained(&strong, &decision(None), Status::NoMatch, &config),
            Some(Unexplained::NoMatch)
        );
        let unpooled = DiscoveryConfig {
            pool_no_match: false,
            ..config.clone()
        };
        assert_eq!(
            unexplained(&strong, &decision(None), Status::NoMatch, &unpooled),
            None
        );
        // Where the ranking read the fitted probe, a top probability below `doubt_below` ×
        // uniform (1 / active labels) is doubt, whatever the score.
        let probed = |top: f64| Retrieval {
            probe_top: Some(top),
            active_labels: 40,
            ..retrieval(Basis::RankedScores, vec![0.8, 0.1])
        };
        assert_eq!(
            unexplained(&probed(0.07), &decision(None), Status::Decided, &config),
            Some(Unexplained::Doubt)
        );
        assert_eq!(
            unexplained(&probed(0.09), &decision(None), Status::Decided, &config),
            None
        );
        // With three labels, 3.2 × uniform would pass 1: only a top below one half is doubt.
        let few = |top: f64| Retrieval {
            active_labels: 3,
            ..probed(top)
        };
        assert_eq!(
            unexplained(&few(0.45), &decision(None), Status::Decided, &config),
            Some(Unexplained::Doubt)
        );
        assert_eq!(
            unexplained(&few(0.9), &decision(None), Status::Decided, &config),
            None
        );
        let unread = DiscoveryConfig {
            doubt_below: 0.0,
            ..config.clone()
        };
        assert_eq!(
            unexplained(&probed(0.001), &decision(None), Status::Decided, &unread),
            None
        );
        // Strategies without scores judge only by evidence and the LLM's answer.
        let steiner = retrieval(Basis::SteinerTree, Vec::new());
        assert_eq!(
            unexplained(&steiner, &decision(None), Status::Decided, &config),
            None
        );
    }
}
