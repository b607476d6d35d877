//! What retrieval hands the decision step: the candidate labels, each one value with its score
//! and its evidence, and how the scores may be read.

use super::confidence::CandidateParts;
use super::index::ExampleMatch;
use super::no_match::MatchEvidence;
use super::Basis;

/// One candidate label and what retrieval found for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The label's id.
    pub label: String,
    /// Its score: the fused score under a ranked strategy, the closest example's cosine under
    /// `nearest`, a peer's own score under `prototype` and `probe`; None under the strategies
    /// without scores and for a text no label's material explains.
    pub score: Option<f64>,
    /// A ranked strategy's evidence for it (None elsewhere).
    pub evidence: Option<CandidateEvidence>,
}

/// A ranked strategy's evidence for one candidate: what its score is made of, how much of its own
/// material the text matches, and its most similar labelled example.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateEvidence {
    /// Each signal's part of the score (what confidence reads).
    pub parts: CandidateParts,
    /// Its score before the fitted probe was added (words and meaning; the score itself when
    /// the probe does not weigh; 0 for a label only the probe brought in): what confidence reads
    /// as the score (its margin stays the fused one), since the probe's softmax names some label
    /// firmly even for a text no label covers.
    pub before_probe: f64,
    /// How much of the label's own material the text matches (what the no-match rule reads).
    pub matched: MatchEvidence,
    /// Its most similar labelled example's text, for the prompt.
    pub example: Option<String>,
    /// Why that example matched, for a rationale (None for a held-out example's retrieval).
    pub example_match: Option<ExampleMatch>,
}

impl Candidate {
    /// A candidate with nothing but its label.
    pub fn unscored(label: String) -> Self {
        Self {
            label,
            score: None,
            evidence: None,
        }
    }

    /// A candidate with a score and no further evidence (`nearest`, the peers).
    pub fn scored(label: String, score: f64) -> Self {
        Self {
            label,
            score: Some(score),
            evidence: None,
        }
    }
}

/// How a retrieval's scores may be read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scoring {
    /// A ranked strategy (`ranked`, `proximity`, `hybrid`): the calibrator reads its scores, so
    /// its decisions can need review, match nothing, or be too unsure to learn from. `margin`
    /// is the best score minus the second (0 when nothing scored).
    Calibrated { margin: f64 },
    /// The strategies without calibrated scores (`steiner`, `all`, `naive`: the paper's and
    /// its baselines; `nearest`, `prototype`, `probe`: the peers): decided as in the paper,
    /// never held for review, every decision learned.
    Uncalibrated,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Retrieval {
    /// The candidates: best first for the strategies that score, in label registration order
    /// for the others.
    pub candidates: Vec<Candidate>,
    pub scoring: Scoring,
    /// The text's keywords that are graph nodes.
    pub terminals: Vec<String>,
    pub basis: Basis,
    /// Cost of the Steiner tree, when one was built.
    pub tree_cost: Option<f64>,
    /// The retrieval-only prediction (used without an LLM, or when it fails).
    pub graph_choice: String,
    /// Ranked strategies, when the text had evidence: the best score with label descriptions
    /// left out, what emerging-class discovery judges a text by; None otherwise.
    pub discovery_score: Option<f64>,
    /// Labels the first hop found evidence for (0 for the strategies without scores;
    /// `nearest`: the labels with an example vector).
    pub first_hop_labels: usize,
    /// Active labels when the text was retrieved.
    pub active_labels: usize,
    /// A ranked strategy's short text (at most `short_text_terms` distinct terms, or no word
    /// shared with any label's own material), whose ranking meaning carried: its confidence is
    /// read by the calibrator's short-text weights.
    pub short_text: bool,
    /// The fitted probe's highest probability over the active labels, where a ranked strategy
    /// read the probe ([`super::probe`]); None otherwise. Near uniform (1 / active labels),
    /// the fit could not tell the labels apart: discovery pools such a text.
    pub probe_top: Option<f64>,
}

impl Retrieval {
    /// The candidates' label ids, in order.
    pub fn labels(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.candidates.iter().map(|c| c.label.as_str())
    }

    /// The candidates' label ids, owned.
    pub fn label_ids(&self) -> Vec<String> {
        self.candidates.iter().map(|c| c.label.clone()).collect()
    }

    /// Where `label` is among the candidates.
    pub fn position(&self, label: &str) -> Option<usize> {
        self.candidates.iter().position(|c| c.label == label)
    }

    /// `label`'s candidate, when retrieval offered it.
    pub fn candidate(&self, label: &str) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.label == label)
    }

    /// Whether retrieval offered `label`.
    pub fn offers(&self, label: &str) -> bool {
        self.position(label).is_some()
    }

    /// The candidates' scores, in order (empty when they have none). Every strategy scores all
    /// its candidates or none, so the list runs beside the candidates.
    pub fn scores(&self) -> Vec<f64> {
        let scores: Vec<f64> = self.candidates.iter().filter_map(|c| c.score).collect();
        debug_assert!(scores.is_empty() || scores.len() == self.candidates.len());
        scores
    }

    /// Each candidate's evidence, in order (none when no candidate has any; like the scores,
    /// all candidates have evidence or none has).
    pub fn evidence(&self) -> impl Iterator<Item = &CandidateEvidence> + '_ {
        debug_assert!(
            self.candidates.iter().all(|c| c.evidence.is_some())
                || self.candidates.iter().all(|c| c.evidence.is_none())
        );
        self.candidates.iter().filter_map(|c| c.evidence.as_ref())
    }

    /// Best minus second best, for a ranked strategy; None for the strategies without
    /// calibrated scores.
    pub fn margin(&self) -> Option<f64> {
        match self.scoring {
            Scoring::Calibrated { margin } => Some(margin),
            Scoring::Uncalibrated => None,
        }
    }

    /// Whether the calibrator reads these scores ([`Scoring::Calibrated`]).
    pub fn is_calibrated(&self) -> bool {
        matches!(self.scoring, Scoring::Calibrated { .. })
    }
}
