//! Confidence: the probability that a decision's label is right, read from the decision's
//! evidence by a small logistic calibrator.
//!
//! A decision's [`Signals`] (its label's score against the best other candidate's, how close its
//! closest labelled example and its name are, its share of the second hop's votes, how many
//! labels are active and how many the first hop found, the LLM's belief when it was asked) become
//! a few [`FEATURES`]; the [`Calibrator`] weighs them into a log-odds. The default weights are
//! fitted on the tuning streams ([`Calibrator::default`]); [`fit`] refits them from labelled
//! outcomes, pulled towards the weights it starts from, deterministically (same outcomes in the
//! same order, same weights), so replicas that refit from the same log agree.

use serde::{Deserialize, Serialize};

use super::{Basis, Retrieval};

/// What a candidate's score is made of (see [`super::rank::ScoreParts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CandidateParts {
    /// Cosine with the label's closest labelled example.
    pub example: f64,
    /// Cosine with the label's name.
    pub name: f64,
    /// The label's share of the second hop's votes.
    pub vote_share: f64,
}

impl From<(f64, f64, f64)> for CandidateParts {
    fn from((example, name, vote_share): (f64, f64, f64)) -> Self {
        Self {
            example,
            name,
            vote_share,
        }
    }
}

/// What the LLM said of the decided label, when it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LlmOpinion {
    /// Its first-token belief in the label (1 or 0 from the answer's text when the endpoint
    /// gave no log-probabilities).
    pub belief: f64,
}

/// The evidence for one decided label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// Whether the label was ranked by score among the candidates (a ranked strategy with
    /// evidence); false for a text with no evidence and the strategies without scores.
    pub scored: bool,
    /// The label's score before the fitted probe (0 when not scored).
    pub score: f64,
    /// `score` less the label's fused margin over the best other candidate.
    pub best_other: f64,
    pub parts: CandidateParts,
    /// The largest closest-example and name cosines among the other candidates.
    pub other_example: f64,
    pub other_name: f64,
    pub first_hop_labels: usize,
    pub active_labels: usize,
    pub llm: Option<LlmOpinion>,
    /// A short text ranked by meaning ([`super::Retrieval::short_text`]).
    #[serde(default)]
    pub short: bool,
}

impl Signals {
    /// The signals of `label` in `retrieval` (the LLM's opinion is added by the caller).
    pub fn of(retrieval: &Retrieval, label: &str) -> Self {
        let at = retrieval.position(label);
        let own = at.map(|i| &retrieval.candidates[i]);
        let scored =
            retrieval.basis == Basis::RankedScores && own.is_some_and(|c| c.score.is_some());
        let others = || {
            retrieval
                .candidates
                .iter()
                .enumerate()
                .filter(move |&(i, _)| Some(i) != at)
                .map(|(_, c)| c)
        };
        // The score as words and meaning made it, before the fitted probe: the probe names some
        // label firmly even for a text no label covers. The margin over the others is the
        // fused one, the probe's included: among the labels, it says which is right
        // (docs/design/fitted-probe.md, "Confidence").
        let score = own.and_then(|c| c.score).unwrap_or(0.0);
        let best_other = others().filter_map(|c| c.score).fold(0.0f64, f64::max);
        let before_probe = own
            .and_then(|c| c.evidence.as_ref())
            .map_or(score, |e| e.before_probe);
        let (score, best_other) = (before_probe, before_probe - (score - best_other));
        let parts = own
            .and_then(|c| c.evidence.as_ref())
            .map(|e| e.parts)
            .unwrap_or_default();
        let other_parts = || {
            others()
                .filter_map(|c| c.evidence.as_ref())
                .map(|e| e.parts)
        };
        Self {
            scored,
            score,
            best_other,
            parts,
            other_example: other_parts().map(|p| p.example).fold(0.0, f64::max),
            other_name: other_parts().map(|p| p.name).fold(0.0, f64::max),
            first_hop_labels: retrieval.first_hop_labels,
            active_labels: retrieval.active_labels,
            llm: None,
            short: retrieval.short_text,
        }
    }

    /// The calibrator's inputs.
    pub fn features(&self) -> [f64; FEATURES] {
        let labels = (self.active_labels.max(1) as f64).ln();
        if !self.scored {
            // Nothing ranked the label: only how many labels there were to guess from.
            let mut x = [0.0; FEATURES];
            x[0] = 1.0;
            x[1] = 1.0;
            x[9] = labels;
            return x;
        }
        // The margin over the best other candidate, square-rooted like the score (signed: a
        // label the LLM chose below another is behind). Not relative to the score: a weak
        // match that is the only one would otherwise look as sure as a strong one.
        let margin = self.score - self.best_other;
        let root_margin = margin.signum() * margin.abs().sqrt();
        let crowd = (self.first_hop_labels.max(1) as f64).ln();
        let (asked, belief) = match self.llm {
            Some(opinion) if opinion.belief.is_finite() => (1.0, opinion.belief.clamp(0.0, 1.0)),
            Some(_) | None => (0.0, 0.0),
        };
        [
            1.0,
            0.0,
            root_margin,
            self.score.sqrt(),
            self.parts.example,
            self.parts.name,
            self.parts.vote_share,
            self.parts.example - self.other_example,
            self.parts.name - self.other_name,
            labels,
            crowd,
            asked * (belief - 0.5),
        ]
    }
}

/// How many inputs the calibrator weighs (the first is the constant 1).
pub const FEATURES: usize = 12;

/// The inputs' names, for reports and the fitted weights' file.
pub const FEATURE_NAMES: [&str; FEATURES] = [
    "bias",
    "no_evidence",
    "sqrt_margin",
    "sqrt_score",
    "example_cosine",
    "name_cosine",
    "vote_share",
    "example_margin",
    "name_margin",
    "ln_active_labels",
    "ln_first_hop_labels",
    "llm_belief",
];

/// A logistic calibrator: confidence = σ(w · features), with weights of its own for short texts
/// when it has them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibrator {
    pub weights: [f64; FEATURES],
    /// The weights for short texts ranked by meaning, whose scores are on another scale than
    /// the words' (docs/design/confidence.md, "Short texts"); None: `weights` for every text,
    /// as a calibrator fitted by `gorag calibrate` on a deployment's own texts is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_weights: Option<[f64; FEATURES]>,
}

impl Default for Calibrator {
    /// The weights fitted on the tuning streams (docs/design/decisions.md says how to refit them).
    fn default() -> Self {
        Self {
            weights: DEFAULT_WEIGHTS,
            short_weights: Some(SHORT_TEXT_WEIGHTS),
        }
    }
}

/// Fitted by `scripts/fit-confidence.sh` on the tuning streams of every paper dataset (no test
/// text; the fit of 2026-11-26, kept when the short-text weights came, so that texts over
/// `short_text_terms` are read by the same weights; a refit on 2026-11-28 differed from it by a
/// few tenths a weight), with the default ranking weights and the default embedding signal (potion-base-8M):
/// the scores it reads change scale with them (docs/design/decisions.md; with words only it was
/// measured too, docs/design/sentence-encoder.md). `no_evidence` and `llm_belief` stay 0: the tuning runs
/// had neither.
const DEFAULT_WEIGHTS: [f64; FEATURES] = [
    -2.0673, 0.0, 7.0601, 1.1642, -1.6175, -1.7660, 0.5904, -0.7969, 5.3501, -0.2406, 0.2772, 0.0,
];

/// Fitted by `scripts/fit-confidence.sh` on HWU64's dev texts at 1 and 5 shots that the ranking
/// calls short (customer queries; no test text), with the default ranking weights and encoder
/// and the probe's weight fitted to each stream. Refitted on 2026-12-06 when the score came to be
/// read before the probe (docs/design/fitted-probe.md, "Confidence").
const SHORT_TEXT_WEIGHTS: [f64; FEATURES] = [
    0.1885, 0.0, 1.3994, 1.8115, -0.7929, -1.1496, 1.2823, -0.0429, 1.4375, -0.9198, -0.0515, 0.0,
];

/// Why a calibrator file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CalibratorFileError {
    #[error("reading {0}: {1}")]
    Read(std::path::PathBuf, std::io::Error),
    #[error("{0} is not a calibrator ({FEATURES} weights): {1}")]
    Parse(std::path::PathBuf, serde_json::Error),
}

impl Calibrator {
    /// A calibrator written by `gorag calibrate --out`.
    pub fn read(path: &std::path::Path) -> Result<Self, CalibratorFileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CalibratorFileError::Read(path.to_path_buf(), e))?;
        serde_json::from_str(&text).map_err(|e| CalibratorFileError::Parse(path.to_path_buf(), e))
    }

    /// Whether the LLM's belief moves the confidence (its weight is not 0).
    pub fn reads_llm(&self) -> bool {
        self.weights[FEATURES - 1] != 0.0
    }

    /// The probability that a decision with these signals is right; 0 when the signals make
    /// no number (an endpoint's log-probabilities can overflow): an unknown is no confidence.
    pub fn confidence(&self, signals: &Signals) -> f64 {
        let p = sigmoid(self.log_odds_of(signals));
        if p.is_nan() {
            0.0
        } else {
            p
        }
    }
}

impl Calibrator {
    /// The log-odds that a decision with these features is right (before any recalibration:
    /// [`super::refit`]).
    pub fn log_odds(&self, features: &[f64; FEATURES]) -> f64 {
        dot(&self.weights, features)
    }

    /// The weights that read a decision with these signals: the short-text ones for a short
    /// text when there are any.
    fn weights_for(&self, signals: &Signals) -> &[f64; FEATURES] {
        match (&self.short_weights, signals.short) {
            (Some(short), true) => short,
            _ => &self.weights,
        }
    }

    /// Whether these signals are read by the short-text weights.
    pub fn reads_as_short(&self, signals: &Signals) -> bool {
        signals.short && self.short_weights.is_some()
    }

    /// The log-odds of a decision with these signals, by the weights that read it.
    pub fn log_odds_of(&self, signals: &Signals) -> f64 {
        dot(self.weights_for(signals), &signals.features())
    }
}

fn dot(a: &[f64; FEATURES], b: &[f64; FEATURES]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The logistic function, without overflow at either end.
pub(super) fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// One labelled outcome: a decision's features and whether its label was right.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub features: [f64; FEATURES],
    pub right: bool,
}

/// Logistic regression by Newton's method (of `weights`; the prior's short-text weights are kept
/// as they are), with a Gaussian prior of strength `pull` centred on
/// `prior`'s weights (the bias included): with few outcomes the fit stays near the prior, with
/// many it follows the data. Deterministic: a fixed number of steps, no randomness.
pub fn fit(outcomes: &[Outcome], prior: &Calibrator, pull: f64) -> Calibrator {
    let mut w = prior.weights;
    for _ in 0..NEWTON_STEPS {
        let mut gradient = [0.0f64; FEATURES];
        let mut hessian = [[0.0f64; FEATURES]; FEATURES];
        for (g, (wi, pi)) in gradient.iter_mut().zip(w.iter().zip(&prior.weights)) {
            *g = pull * (wi - pi);
        }
        for (i, row) in hessian.iter_mut().enumerate() {
            row[i] = pull.max(1e-6);
        }
        for outcome in outcomes {
            let x = &outcome.features;
            let p = sigmoid(dot(&w, x));
            let y = if outcome.right { 1.0 } else { 0.0 };
            let curvature = (p * (1.0 - p)).max(1e-9);
            for i in 0..FEATURES {
                gradient[i] += (p - y) * x[i];
                for j in 0..FEATURES {
                    hessian[i][j] += curvature * x[i] * x[j];
                }
            }
        }
        let Some(step) = solve(hessian, gradient) else {
            break;
        };
        let mut largest = 0.0f64;
        for (wi, si) in w.iter_mut().zip(step) {
            *wi -= si;
            largest = largest.max(si.abs());
        }
        if largest < 1e-9 {
            break;
        }
    }
    Calibrator {
        weights: w,
        short_weights: prior.short_weights,
    }
}

const NEWTON_STEPS: usize = 50;

/// Solves `a x = b` by Gaussian elimination with partial pivoting; None when `a` is singular.
fn solve(mut a: [[f64; FEATURES]; FEATURES], mut b: [f64; FEATURES]) -> Option<[f64; FEATURES]> {
    for col in 0..FEATURES {
        let pivot = (col..FEATURES).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for (offset, row) in lower.iter_mut().enumerate() {
            let factor = row[col] / pivot_row[col];
            for (cell, above) in row.iter_mut().zip(pivot_row).skip(col) {
                *cell -= factor * above;
            }
            b[col + 1 + offset] -= factor * b[col];
        }
    }
    let mut x = [0.0f64; FEATURES];
    for row in (0..FEATURES).rev() {
        let rest: f64 = (row + 1..FEATURES).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(margin: f64) -> [f64; FEATURES] {
        let mut x = [0.0; FEATURES];
        x[0] = 1.0;
        x[2] = margin;
        x
    }

    #[test]
    fn a_fit_follows_outcomes_that_a_larger_margin_is_right_more_often() {
        // Right with probability σ(-1 + 4·margin): the fit should find weights near (-1, 4).
        let mut outcomes = Vec::new();
        for i in 0..200 {
            let margin = f64::from(i) / 200.0;
            let p = sigmoid(-1.0 + 4.0 * margin);
            // Deterministic share of rights per margin: 20 outcomes, round(20 p) of them right.
            let rights = (20.0 * p).round() as usize;
            for k in 0..20 {
                outcomes.push(Outcome {
                    features: features(margin),
                    right: k < rights,
                });
            }
        }
        let fitted = fit(
            &outcomes,
            &Calibrator {
                weights: [0.0; FEATURES],
                short_weights: None,
            },
            1e-3,
        );
        assert!(
            (fitted.weights[0] + 1.0).abs() < 0.1,
            "{:?}",
            fitted.weights
        );
        assert!(
            (fitted.weights[2] - 4.0).abs() < 0.2,
            "{:?}",
            fitted.weights
        );
    }

    #[test]
    fn the_shipped_fit_does_not_weigh_the_llm_s_belief() {
        // It was fitted without LLM answers (docs/design/decisions.md); the service warns when that
        // leaves every text it asks the LLM about under review.
        assert!(!Calibrator::default().reads_llm());
        let mut weights = [0.0; FEATURES];
        weights[FEATURES - 1] = 1.0;
        assert!(Calibrator {
            weights,
            short_weights: None
        }
        .reads_llm());
    }

    #[test]
    fn with_no_outcomes_the_fit_is_the_prior() {
        let prior = Calibrator::default();
        assert_eq!(fit(&[], &prior, 1.0), prior);
    }

    #[test]
    fn confidence_is_a_probability_even_for_extreme_inputs() {
        let calibrator = Calibrator {
            weights: [1e6; FEATURES],
            short_weights: None,
        };
        let signals = Signals {
            scored: true,
            score: 1e9,
            best_other: 0.0,
            parts: CandidateParts::default(),
            other_example: 0.0,
            other_name: 0.0,
            first_hop_labels: 1,
            active_labels: 1,
            llm: None,
            short: false,
        };
        let c = calibrator.confidence(&signals);
        assert!((0.0..=1.0).contains(&c));
    }

    #[test]
    fn the_signals_read_the_score_before_the_probe_and_the_fused_margin() {
        use crate::engine::no_match::MatchEvidence;
        use crate::engine::{Candidate, CandidateEvidence, Scoring};
        // Fused 2.0 over 0.5, of which the probe added 1.5 to the first and 0.3 to the second.
        let candidate = |label: &str, score: f64, before_probe: f64| Candidate {
            label: label.into(),
            score: Some(score),
            evidence: Some(CandidateEvidence {
                parts: CandidateParts::default(),
                before_probe,
                matched: MatchEvidence::default(),
                example: None,
                example_match: None,
            }),
        };
        let retrieval = Retrieval {
            candidates: vec![candidate("alarm", 2.0, 0.5), candidate("timer", 0.5, 0.2)],
            scoring: Scoring::Calibrated { margin: 1.5 },
            terminals: Vec::new(),
            basis: Basis::RankedScores,
            tree_cost: None,
            graph_choice: "alarm".into(),
            discovery_score: Some(0.5),
            first_hop_labels: 2,
            active_labels: 2,
            short_text: true,
            probe_top: None,
        };
        let signals = Signals::of(&retrieval, "alarm");
        assert_eq!(signals.score, 0.5);
        assert_eq!(signals.score - signals.best_other, 1.5);
        let behind = Signals::of(&retrieval, "timer");
        assert_eq!(behind.score, 0.2);
        assert_eq!(behind.score - behind.best_other, -1.5);
    }

    #[test]
    fn a_short_text_is_read_by_the_short_text_weights_and_a_file_without_them_reads_all() {
        let mut signals = Signals {
            scored: true,
            score: 0.5,
            best_other: 0.1,
            active_labels: 10,
            first_hop_labels: 3,
            ..Signals::default()
        };
        let shipped = Calibrator::default();
        let long = shipped.confidence(&signals);
        signals.short = true;
        let short = shipped.confidence(&signals);
        assert_ne!(long, short);
        assert!(shipped.reads_as_short(&signals));
        // A calibrator file from before short-text weights (or from `gorag calibrate`).
        let file: Calibrator =
            serde_json::from_str(&format!("{{\"weights\": {:?}}}", DEFAULT_WEIGHTS)).unwrap();
        assert_eq!(file.short_weights, None);
        assert!(!file.reads_as_short(&signals));
        assert_eq!(file.confidence(&signals), long);
    }
}
