//! An honest "no match": when nothing the labels know explains a text, gorag publishes no label
//! rather than the first of a list or a label that shares a word or two with it.
//!
//! One small rule over retrieval's evidence, kept apart so that it can be retuned without
//! touching how retrieval ranks: a text matches none of the active labels when
//! - retrieval found no evidence at all (`Basis::NoEvidence`: no word of the text is in any
//!   label's examples, name or description), or
//! - the decided label's own material shares at most [`NoMatchConfig::max_words`] words with
//!   the text, **and** the meaning signal finds the label no closer than
//!   [`NoMatchConfig::min_meaning`] (without a sentence encoder: its confidence is below
//!   [`NoMatchConfig::below_confidence`]).
//!
//! A text that shares a word or two with a label *and* means what the label's examples mean
//! (an intent said in other words: "wake me at six" for `alarm_set`) keeps its label; a
//! support ticket that shares "card" with `payment_issue` and means something else has none.
//! The thresholds are the configuration's `[engine.no_match]` keys, chosen on dev texts and an
//! out-of-scope set (docs/results/2026-11-28-no-match.md).

use serde::{Deserialize, Serialize};

use super::index::IndexDoc;
use super::terms::TermCounts;
use super::{Basis, Retrieval};

/// How strongly a candidate label's own material (its examples, name and description) matches a
/// text, beside its ranked score.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MatchEvidence {
    /// Distinct words (stems) of the text found in the label's examples, name or description.
    pub shared_words: usize,
    /// How close in meaning the text is to the label: the sentence encoder's best cosine
    /// with the label's examples or its name (not weighted as ranking weighs them, so that a
    /// label without a name is judged on the same scale); None without a sentence encoder.
    pub meaning: Option<f64>,
}

/// The no-match rule's thresholds (`[engine.no_match]`; `gorag eval --no-match-*`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
#[command(next_help_heading = "No match (engine.no_match)")]
pub struct NoMatchConfig {
    /// Whether the rule applies at all (off: every text is published with a label, as before).
    #[arg(long = "no-match", action = clap::ArgAction::Set, default_value_t = NoMatchConfig::default().enabled)]
    pub enabled: bool,
    /// A label matched by at most this many of the text's words is matched "by a word or two".
    #[arg(long = "no-match-max-words", default_value_t = NoMatchConfig::default().max_words)]
    pub max_words: usize,
    /// …and it is no match when the meaning signal's similarity to it is below this.
    #[arg(long = "no-match-min-meaning", default_value_t = NoMatchConfig::default().min_meaning)]
    pub min_meaning: f64,
    /// Without the meaning signal: …it is no match when its confidence is below this.
    #[arg(long = "no-match-below-confidence", default_value_t = NoMatchConfig::default().below_confidence)]
    pub below_confidence: f64,
}

impl Default for NoMatchConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_words: DEFAULT_MAX_WORDS,
            min_meaning: DEFAULT_MIN_MEANING,
            below_confidence: DEFAULT_BELOW_CONFIDENCE,
        }
    }
}

/// `max_words`' default (docs/results/2026-11-28-no-match.md).
pub const DEFAULT_MAX_WORDS: usize = 1;
/// `min_meaning`'s default (docs/results/2026-11-28-no-match.md).
pub const DEFAULT_MIN_MEANING: f64 = 0.2;
/// `below_confidence`'s default (docs/results/2026-11-28-no-match.md).
pub const DEFAULT_BELOW_CONFIDENCE: f64 = 0.2;

impl NoMatchConfig {
    /// What is wrong with the settings, each problem starting with its key (none: they hold).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.min_meaning.is_finite() {
            problems.push(format!("min_meaning: {} is no number", self.min_meaning));
        }
        if !(0.0..=1.0).contains(&self.below_confidence) {
            problems.push(format!(
                "below_confidence: {} (must be between 0 and 1)",
                self.below_confidence
            ));
        }
        problems
    }
}

/// Whether a text matches none of the active labels: `retrieval` is its retrieval, `label` the
/// decided label and `confidence` the decision's confidence.
pub fn matches_nothing(
    config: &NoMatchConfig,
    retrieval: &Retrieval,
    label: &str,
    confidence: f64,
) -> bool {
    // The strategies without scores (`steiner`, `all`, `naive`: the paper's and its baselines,
    // whose retrieval has no margin) always decide a label, as in the paper.
    if !config.enabled || !retrieval.is_calibrated() {
        return false;
    }
    if retrieval.basis == Basis::NoEvidence {
        return true;
    }
    let Some(evidence) = retrieval
        .candidate(label)
        .and_then(|c| c.evidence.as_ref())
        .map(|e| &e.matched)
    else {
        // A label retrieval did not rank (the LLM's, outside the candidates): retrieval has
        // nothing to say against it.
        return false;
    };
    weak(config, evidence, confidence)
}

/// A label matched by a word or two whose meaning is not close either.
fn weak(config: &NoMatchConfig, evidence: &MatchEvidence, confidence: f64) -> bool {
    if evidence.shared_words > config.max_words {
        return false;
    }
    match evidence.meaning {
        Some(meaning) => meaning < config.min_meaning,
        // A confidence that is no number counts as below, as `needs_review` counts it.
        None => confidence.is_nan() || confidence < config.below_confidence,
    }
}

/// Distinct single words (stems) of `query` that occur in any of `docs` (a label's own
/// material): both are sorted term lists, so each word costs a binary search per document.
pub fn shared_words<'a>(query: &TermCounts, docs: impl Iterator<Item = &'a IndexDoc>) -> usize {
    let docs: Vec<&IndexDoc> = docs.collect();
    query
        .counts
        .iter()
        .filter(|(term, _)| !term.contains(' '))
        .filter(|(term, _)| {
            docs.iter().any(|doc| {
                doc.terms
                    .counts
                    .binary_search_by(|(t, _)| t.as_str().cmp(term))
                    .is_ok()
            })
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::confidence::CandidateParts;
    use crate::engine::index::{DocKind, LabelPos};
    use crate::engine::{Candidate, CandidateEvidence, Scoring};

    fn retrieval(basis: Basis, evidence: MatchEvidence) -> Retrieval {
        Retrieval {
            candidates: [
                ("payment_issue", 0.2, evidence),
                ("exchange", 0.1, MatchEvidence::default()),
            ]
            .into_iter()
            .map(|(label, score, matched)| Candidate {
                label: label.into(),
                score: Some(score),
                evidence: Some(CandidateEvidence {
                    parts: CandidateParts::default(),
                    before_probe: score,
                    matched,
                    example: None,
                    example_match: None,
                }),
            })
            .collect(),
            scoring: Scoring::Calibrated { margin: 0.1 },
            terminals: Vec::new(),
            basis,
            tree_cost: None,
            graph_choice: "payment_issue".into(),
            discovery_score: Some(0.2),
            first_hop_labels: 2,
            active_labels: 2,
            short_text: false,
            probe_top: None,
        }
    }

    fn evidence(shared_words: usize, meaning: Option<f64>) -> MatchEvidence {
        MatchEvidence {
            shared_words,
            meaning,
        }
    }

    #[test]
    fn no_evidence_is_no_match() {
        let config = NoMatchConfig::default();
        let nothing = retrieval(Basis::NoEvidence, MatchEvidence::default());
        assert!(matches_nothing(&config, &nothing, "payment_issue", 0.9));
        let off = NoMatchConfig {
            enabled: false,
            ..config
        };
        assert!(!matches_nothing(&off, &nothing, "payment_issue", 0.9));
    }

    #[test]
    fn one_weak_shared_word_is_no_match() {
        let config = NoMatchConfig::default();
        // Spam that shares "card" with `payment_issue` and means something else, however
        // confident retrieval is.
        let card = retrieval(Basis::RankedScores, evidence(1, Some(0.1)));
        assert!(matches_nothing(&config, &card, "payment_issue", 0.55));
        // Two shared words are more than "a word".
        let two = retrieval(Basis::RankedScores, evidence(2, Some(0.1)));
        assert!(!matches_nothing(&config, &two, "payment_issue", 0.55));
        // Without the meaning signal the confidence decides.
        let words_only = retrieval(Basis::RankedScores, evidence(1, None));
        assert!(matches_nothing(&config, &words_only, "payment_issue", 0.1));
        assert!(!matches_nothing(&config, &words_only, "payment_issue", 0.8));
    }

    #[test]
    fn a_real_match_keeps_its_label() {
        let config = NoMatchConfig::default();
        // Many shared words: a real match, whatever the meaning signal says.
        let words = retrieval(Basis::RankedScores, evidence(6, Some(0.1)));
        assert!(!matches_nothing(&config, &words, "payment_issue", 0.2));
        // A word or two, but close in meaning: an intent said in other words.
        let meaning = retrieval(Basis::RankedScores, evidence(1, Some(0.9)));
        assert!(!matches_nothing(&config, &meaning, "payment_issue", 0.4));
        // No word at all, close in meaning (the meaning signal alone ranked it).
        let unspoken = retrieval(Basis::RankedScores, evidence(0, Some(0.9)));
        assert!(!matches_nothing(&config, &unspoken, "payment_issue", 0.4));
    }

    #[test]
    fn a_label_retrieval_did_not_rank_and_the_paper_strategies_keep_their_label() {
        let config = NoMatchConfig::default();
        let card = retrieval(Basis::RankedScores, evidence(1, Some(0.1)));
        assert!(!matches_nothing(&config, &card, "refund", 0.1));
        for basis in [Basis::SteinerTree, Basis::NoEvidence] {
            let paper = Retrieval {
                scoring: Scoring::Uncalibrated,
                ..retrieval(basis, evidence(0, None))
            };
            assert!(!matches_nothing(&config, &paper, "payment_issue", 0.0));
        }
    }

    #[test]
    fn shared_words_counts_distinct_single_words_in_any_document() {
        let doc = |text: &str| IndexDoc {
            kind: DocKind::Example,
            label: LabelPos::at(0),
            terms: TermCounts::of(text),
            text: None,
        };
        let query = TermCounts::of("my credit card was charged twice");
        let docs = [doc("the card was declined"), doc("charged for nothing")];
        // "card" and "charg": phrases ("credit card") are not counted again.
        assert_eq!(shared_words(&query, docs.iter()), 2);
        assert_eq!(shared_words(&query, std::iter::empty()), 0);
    }
}
