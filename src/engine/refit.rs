//! Refitting confidence where gorag runs, from the labelled texts its log brings
//! (docs/decisions.md, "Refitting where gorag runs").
//!
//! The shipped calibrator was fitted on the tuning streams; a deployment's texts can be easier
//! or harder than those. Two kinds of labelled text reach every replica in the log's order, and
//! each becomes an [`Outcome`] (a decision's features, and whether its label was right):
//! - an example of a label that has several, scored as if it were not indexed (its document
//!   and vector left out), when its round or `add_examples` is applied;
//! - a correction, scored as gorag decided the text just before it was corrected.
//!
//! The engine keeps the latest [`OUTCOME_CAPACITY`] outcomes and fits a [`Recalibration`] of the
//! configured calibrator's log-odds z: confidence = σ(shift + scale · z), pulled towards the
//! identity (0, 1). With a positive scale it changes how sure the confidence is, never which
//! texts rank above which. A pure function of the log: replicas score the same examples
//! against the same state, and a restart refits from the outcomes its snapshot keeps.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::confidence::{sigmoid, Calibrator, Outcome, Signals};
use super::Engine;

/// Outcomes kept (oldest dropped first): recent texts describe the current label set.
pub const OUTCOME_CAPACITY: usize = 2_000;

/// Strength of the pull towards the identity (0, 1), in the units of the log-likelihood: about
/// as many outcomes' worth of evidence (docs/decisions.md has how it was chosen).
pub const REFIT_PULL: f64 = 1.0;

/// Outcomes needed before the first refit: below it the calibrator is used as configured (a
/// handful of outcomes, such as a first round of a few labels with two examples each, swings a
/// two-parameter fit; docs/decisions.md).
pub const MIN_OUTCOMES: usize = 30;

/// A labelled example left out of retrieval while it is scored.
#[derive(Debug, Clone)]
pub struct HeldOut {
    /// Its document in the retrieval index.
    pub doc: u32,
    /// Its label's position.
    pub label: u32,
    /// Its vector, with the embedding signal.
    pub vector: Option<Vec<f32>>,
}

/// confidence = σ(shift + scale · z), z the calibrator's log-odds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Recalibration {
    pub shift: f64,
    pub scale: f64,
}

impl Default for Recalibration {
    fn default() -> Self {
        Self {
            shift: 0.0,
            scale: 1.0,
        }
    }
}

impl Recalibration {
    /// The recalibrated probability of log-odds `z`.
    pub fn probability(&self, z: f64) -> f64 {
        sigmoid(self.shift + self.scale * z)
    }

    /// Logistic regression of the outcomes on their log-odds, by Newton's method with a
    /// Gaussian pull of strength `pull` towards the identity. Deterministic: the same outcomes
    /// in the same order give the same fit. A scale the data would make negative is held at 0
    /// or above (confidence must not rank the surest texts last).
    pub fn fit(outcomes: &[(f64, bool)], pull: f64) -> Self {
        let pull = pull.max(1e-6);
        let (mut a, mut b) = (0.0f64, 1.0f64);
        for _ in 0..NEWTON_STEPS {
            let (mut ga, mut gb) = (pull * a, pull * (b - 1.0));
            let (mut haa, mut hab, mut hbb) = (pull, 0.0, pull);
            for &(z, right) in outcomes {
                if !z.is_finite() {
                    continue;
                }
                let p = sigmoid(a + b * z);
                let residual = p - if right { 1.0 } else { 0.0 };
                let curvature = (p * (1.0 - p)).max(1e-9);
                ga += residual;
                gb += residual * z;
                haa += curvature;
                hab += curvature * z;
                hbb += curvature * z * z;
            }
            let determinant = haa * hbb - hab * hab;
            if determinant.abs() < 1e-12 {
                break;
            }
            let step_a = (hbb * ga - hab * gb) / determinant;
            let step_b = (haa * gb - hab * ga) / determinant;
            a -= step_a;
            b = (b - step_b).max(0.0);
            if step_a.abs().max(step_b.abs()) < 1e-10 {
                break;
            }
        }
        Self { shift: a, scale: b }
    }
}

const NEWTON_STEPS: usize = 50;

/// The outcomes the log brought, and the recalibration fitted on them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Calibration {
    outcomes: VecDeque<Outcome>,
    recalibration: Recalibration,
}

impl Calibration {
    /// Restored from a snapshot's outcomes (the recalibration is refitted by the engine).
    pub fn from_outcomes(outcomes: Vec<Outcome>) -> Self {
        let mut calibration = Self::default();
        for outcome in outcomes {
            calibration.push(outcome);
        }
        calibration
    }

    /// Oldest first.
    pub fn outcomes(&self) -> impl ExactSizeIterator<Item = &Outcome> {
        self.outcomes.iter()
    }

    pub fn recalibration(&self) -> Recalibration {
        self.recalibration
    }

    fn push(&mut self, outcome: Outcome) {
        if self.outcomes.len() == OUTCOME_CAPACITY {
            self.outcomes.pop_front();
        }
        self.outcomes.push_back(outcome);
    }

    fn refit(&mut self, calibrator: &Calibrator) {
        if self.outcomes.len() < MIN_OUTCOMES {
            self.recalibration = Recalibration::default();
            return;
        }
        let scored: Vec<(f64, bool)> = self
            .outcomes
            .iter()
            .map(|o| (calibrator.log_odds(&o.features), o.right))
            .collect();
        self.recalibration = Recalibration::fit(&scored, REFIT_PULL);
    }
}

/// An example just indexed, to be scored as if it were not ([`Engine::score_held_out`]).
pub(super) struct IndexedExample<'t> {
    pub position: usize,
    pub doc: u32,
    pub text: &'t str,
    pub vector: Option<Vec<f32>>,
}

impl Engine {
    /// The probability that a decision with these signals is right: the calibrator's, as
    /// recalibrated from the log's outcomes; 0 when the signals make no number.
    pub(super) fn confidence_of(&self, signals: &Signals) -> f64 {
        let z = self.config.calibrator.log_odds(&signals.features());
        let p = self.calibration.recalibration.probability(z);
        if p.is_nan() {
            0.0
        } else {
            p
        }
    }

    /// The outcomes the log brought and the recalibration fitted on them.
    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    /// Score examples just indexed, each as if it were not (only those whose label has other
    /// examples: a lone example says how well a name alone does, not how the label's texts are
    /// found), and refit. Nothing when refitting is off.
    pub(super) fn score_held_out(&mut self, examples: &[IndexedExample<'_>]) {
        if !self.config.refit_confidence {
            return;
        }
        let mut outcomes = Vec::new();
        for example in examples {
            let Some(label) = self.labels.get(example.position) else {
                continue;
            };
            if label.examples < 2 {
                continue;
            }
            let mut analysis = self.analyze(example.text);
            analysis.embedding = example.vector.clone();
            let held_out = HeldOut {
                doc: example.doc,
                label: example.position as u32,
                vector: example.vector.clone(),
            };
            let Some(retrieval) = self.retrieve_held_out(&analysis, &held_out) else {
                continue;
            };
            let decided = self.decide(&retrieval, None).label;
            let signals = self.signals(&retrieval, &decided, None, &[]);
            outcomes.push(Outcome {
                features: signals.features(),
                right: decided == label.id,
            });
        }
        self.record_outcomes(outcomes);
    }

    /// Keep outcomes and refit (nothing when refitting is off or there are none).
    pub(super) fn record_outcomes(&mut self, outcomes: Vec<Outcome>) {
        if !self.config.refit_confidence || outcomes.is_empty() {
            return;
        }
        for outcome in outcomes {
            self.calibration.push(outcome);
        }
        self.calibration.refit(&self.config.calibrator);
    }

    /// After a restore: the recalibration the kept outcomes give under this configuration.
    pub(super) fn refit_restored(&mut self) {
        if self.config.refit_confidence {
            self.calibration.refit(&self.config.calibrator);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_no_outcomes_the_recalibration_is_the_identity() {
        assert_eq!(
            Recalibration::fit(&[], REFIT_PULL),
            Recalibration::default()
        );
    }

    #[test]
    fn outcomes_right_more_often_than_claimed_raise_the_confidence() {
        // Log-odds 0 (a claimed 0.5) right 9 times in 10, many times over.
        let outcomes: Vec<(f64, bool)> = (0..500).map(|i| (0.0, i % 10 != 0)).collect();
        let fitted = Recalibration::fit(&outcomes, REFIT_PULL);
        let p = fitted.probability(0.0);
        assert!(p > 0.85 && p < 0.9, "{fitted:?} gives {p}");
    }

    #[test]
    fn a_few_outcomes_move_the_confidence_less_than_many() {
        let all: Vec<(f64, bool)> = (0..400).map(|i| (1.0, i % 2 == 0)).collect();
        let few = Recalibration::fit(&all[..10], REFIT_PULL).probability(1.0);
        let many = Recalibration::fit(&all, REFIT_PULL).probability(1.0);
        let claimed = sigmoid(1.0);
        assert!(claimed > few && few > many, "{claimed} {few} {many}");
        assert!((many - 0.5).abs() < 0.05, "{many}");
    }

    #[test]
    fn the_scale_never_turns_negative() {
        // The surest texts wrong, the least sure right.
        let outcomes: Vec<(f64, bool)> = (0..200)
            .map(|i| {
                let z = f64::from(i) / 20.0 - 5.0;
                (z, z < 0.0)
            })
            .collect();
        assert!(Recalibration::fit(&outcomes, REFIT_PULL).scale >= 0.0);
    }

    #[test]
    fn the_calibration_keeps_the_latest_outcomes() {
        let outcome = |right| Outcome {
            features: [0.0; super::super::confidence::FEATURES],
            right,
        };
        let mut calibration = Calibration::default();
        calibration.push(outcome(false));
        for _ in 0..OUTCOME_CAPACITY {
            calibration.push(outcome(true));
        }
        assert_eq!(calibration.outcomes().len(), OUTCOME_CAPACITY);
        assert!(calibration.outcomes().all(|o| o.right));
    }
}
