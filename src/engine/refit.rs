//! Refitting confidence where gorag runs, from the labelled texts its log brings
//! (docs/design/decisions.md, "Refitting where gorag runs").
//!
//! The shipped calibrator was fitted on the tuning streams; a deployment's texts can be easier
//! or harder than those. Two kinds of labelled text reach every replica in the log's order, and
//! each becomes an [`Outcome`] (a decision's features, and whether its label was right):
//! - an example of a label that has several, scored as if it were not indexed (its document,
//!   its vector and any learned copy of its text left out), when its round or `add_examples` is
//!   applied;
//! - an audited correction (a text picked at random, not for its low confidence), scored as gorag
//!   decided the text just before, its own learned copies left out. A reviewer's corrections
//!   are not outcomes: texts picked for their low confidence would bias the fit.
//!
//! The engine keeps the latest [`OUTCOME_CAPACITY`] outcomes in an [`OutcomeLog`] and, from
//! [`MIN_OUTCOMES`] on, fits a [`Recalibration`] of the configured calibrator's log-odds z:
//! confidence = σ(shift + scale · z), pulled towards the identity (0, 1), the scale kept at
//! [`MIN_SCALE`] or above. It changes how sure the confidence is, never which texts rank above
//! which. Outcomes are derived state, like the embedding signal's vectors: kept in the snapshot
//! (a restart refits from them), never in the digest, since they depend on the ranking and
//! embedding settings of the instance that scored them.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::confidence::{sigmoid, Calibrator, Outcome};
use super::held_out::HeldOut;
use super::index::{DocId, DocKind};
use super::probe::CrossFit;
use super::retrieve::Retriever;
use super::{Analysis, Analyzer, Decisions, Engine, EngineConfig};

/// Outcomes kept (oldest dropped first): recent texts describe the current label set.
pub const OUTCOME_CAPACITY: usize = 2_000;

/// Strength of the Gaussian pull towards the identity (0, 1), added to the log-likelihood's
/// curvature (each outcome adds at most 0.25 z²): chosen on the tuning streams
/// (docs/design/decisions.md).
pub const REFIT_PULL: f64 = 1.0;

/// The smallest scale a fit may reach: at 0 every text would get one confidence.
pub const MIN_SCALE: f64 = 0.1;

/// Outcomes needed before the first refit: below it the calibrator is used as configured (a
/// handful of outcomes, such as a first round of a few labels with two examples each, swings a
/// two-parameter fit; docs/design/decisions.md).
pub const MIN_OUTCOMES: usize = 30;

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
    /// in the same order give the same fit. The scale is held at [`MIN_SCALE`] or above
    /// (confidence must keep ranking the surest texts first); a fit that makes no number is the
    /// identity.
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
            b = (b - step_b).max(MIN_SCALE);
            if step_a.abs().max(step_b.abs()) < 1e-10 {
                break;
            }
        }
        if a.is_finite() && b.is_finite() {
            Self { shift: a, scale: b }
        } else {
            Self::default()
        }
    }
}

const NEWTON_STEPS: usize = 50;

/// The outcomes the log brought, and the recalibration fitted on them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutcomeLog {
    outcomes: VecDeque<Outcome>,
    recalibration: Recalibration,
}

impl OutcomeLog {
    /// Restored from a snapshot's outcomes (the recalibration is refitted by [`OutcomeLog::refit_restored`]).
    pub fn from_outcomes(outcomes: Vec<Outcome>) -> Self {
        let mut log = Self::default();
        for outcome in outcomes {
            log.push(outcome);
        }
        log
    }

    /// Oldest first.
    pub fn outcomes(&self) -> impl ExactSizeIterator<Item = &Outcome> {
        self.outcomes.iter()
    }

    pub fn recalibration(&self) -> Recalibration {
        self.recalibration
    }

    /// Keep outcomes and refit (nothing when refitting is off or there are none).
    pub(super) fn record(&mut self, outcomes: Vec<Outcome>, config: &EngineConfig) {
        if !config.refit_confidence || outcomes.is_empty() {
            return;
        }
        for outcome in outcomes {
            self.push(outcome);
        }
        self.refit(&config.calibrator);
    }

    /// After a restore: the recalibration the kept outcomes give under this configuration.
    pub(super) fn refit_restored(&mut self, config: &EngineConfig) {
        if config.refit_confidence {
            self.refit(&config.calibrator);
        }
    }

    fn push(&mut self, outcome: Outcome) {
        if self.outcomes.len() == OUTCOME_CAPACITY {
            self.outcomes.pop_front();
        }
        self.outcomes.push_back(outcome);
    }

    fn refit(&mut self, calibrator: &Calibrator) {
        let finite = self
            .outcomes
            .iter()
            .filter(|o| o.features.iter().all(|x| x.is_finite()))
            .count();
        if finite < MIN_OUTCOMES {
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

/// Held-out examples scored per batch at most (a round, an `add_examples`): enough for the
/// two-parameter refit many times over, and more than any round of the tuning streams brings
/// (WOS 5-shot round 2: 53 labels × 5 examples), so their outcomes are those of scoring every
/// example. A round of 50,000 labels costs this many retrievals, not one per example
/// (docs/results/2026-11-28-round-apply.md, "Applying a round").
pub const HELD_OUT_PER_BATCH: usize = 300;

/// Held-out examples from which scoring them is spread over the cores.
const HELD_OUT_IN_THREADS_FROM: usize = 16;

/// Which of `count` scoreable examples a batch scores: all of them up to `at_most`, else
/// `at_most` spread evenly (positions ⌊i·count/at_most⌋, ascending), so a round's labels are
/// sampled across it whatever order its file lists them in.
pub(super) fn held_out_sample(count: usize, at_most: usize) -> Vec<usize> {
    if count <= at_most {
        return (0..count).collect();
    }
    (0..at_most).map(|i| i * count / at_most).collect()
}

/// An example just indexed, to be scored as if it were not
/// ([`HeldOutScoring::new_examples`]).
pub(super) struct IndexedExample<'t> {
    pub position: usize,
    pub doc: DocId,
    pub text: &'t str,
    pub vector: Option<Vec<f32>>,
}

/// A classified text at least this similar to a corrected text is taken to be that text, as
/// learned (its heaviest terms at the time; the weights may have moved a little since).
pub const SAME_TEXT: f64 = 0.9;

/// Scoring texts as the engine would decide them were they not indexed (held-out examples,
/// corrected texts): analysis, retrieval without their own documents, and the decision, each
/// a read-only part of the engine.
#[derive(Clone, Copy)]
pub(super) struct HeldOutScoring<'e> {
    pub analyzer: Analyzer<'e>,
    pub retriever: Retriever<'e>,
    pub decisions: Decisions<'e>,
    /// Probes that did not learn from the examples scored, when a probe is read.
    pub cross_fit: Option<&'e CrossFit>,
}

impl<'e> HeldOutScoring<'e> {
    pub fn of(engine: &'e Engine) -> Self {
        Self {
            analyzer: engine.analyzer(),
            retriever: engine.retriever(),
            decisions: engine.decisions(),
            cross_fit: None,
        }
    }

    /// Examples scored with the probe of `cross_fit` that did not learn from them.
    pub fn with_cross_fit(self, cross_fit: Option<&'e CrossFit>) -> Self {
        Self { cross_fit, ..self }
    }

    /// The outcomes of examples just indexed, each scored as if it were not (only those whose
    /// label has other examples: a lone example says how well a name alone does, not how the
    /// label's texts are found); none when refitting is off.
    ///
    /// Each costs a retrieval over every label, so a batch scores at most
    /// [`HELD_OUT_PER_BATCH`] of them, spread evenly over it ([`held_out_sample`]): scoring every
    /// example made a round of N labels cost N retrievals of O(N) each.
    pub fn new_examples(&self, examples: &[IndexedExample<'_>]) -> Vec<Outcome> {
        if !self.decisions.config.refit_confidence {
            return Vec::new();
        }
        self.outcomes(examples, HELD_OUT_PER_BATCH)
    }

    /// The outcomes of at most `at_most` of the examples that make one (an even sample when
    /// there are more), in the examples' order; scored on every core for a large batch (each
    /// is a pure function of the engine, so the outcomes are the same).
    pub fn outcomes(&self, examples: &[IndexedExample<'_>], at_most: usize) -> Vec<Outcome> {
        let labels = self.decisions.labels;
        let scoreable: Vec<&IndexedExample<'_>> = examples
            .iter()
            .filter(|example| {
                labels
                    .at(example.position)
                    .is_some_and(|label| label.examples >= 2)
            })
            .collect();
        let sample = held_out_sample(scoreable.len(), at_most);
        let threads = if sample.len() >= HELD_OUT_IN_THREADS_FROM {
            crate::threads::cores()
        } else {
            1
        };
        let picked: Vec<&IndexedExample<'_>> = sample.into_iter().map(|i| scoreable[i]).collect();
        crate::threads::in_threads(picked, threads, |example| self.outcome(example))
            .into_iter()
            .flatten()
            .collect()
    }

    /// How the engine would decide a labelled example were it not indexed (None when retrieval
    /// gives no decision).
    fn outcome(&self, example: &IndexedExample<'_>) -> Option<Outcome> {
        let label = self.decisions.labels.at(example.position)?;
        let mut analysis = self.analyzer.analyze(example.text);
        analysis.embedding = example.vector.clone();
        let mut docs = self.learned_copies(&analysis);
        docs.push(example.doc);
        let held_out = HeldOut {
            docs,
            vector: example
                .vector
                .clone()
                .map(|vector| (example.position as u32, vector)),
        };
        // Never the probe that learned the example.
        let retriever = match self.cross_fit {
            Some(folds) => Retriever {
                probe: folds.probe_without(example.doc),
                ..self.retriever
            },
            None => self.retriever,
        };
        let retrieval = retriever.retrieve_held_out(&analysis, &held_out)?;
        let decided = self.decisions.decide(&retrieval, None).label;
        let signals = self.decisions.signals(&retrieval, &decided, None, &[]);
        // The recalibration reads outcomes by the long-text weights: a short text's, scored
        // on another scale, would skew it (and it does not apply to short texts).
        if self.decisions.config.calibrator.reads_as_short(&signals) {
            return None;
        }
        Some(Outcome {
            features: signals.features(),
            right: decided == label.id,
        })
    }

    /// The learned copies of a text (classified texts at least [`SAME_TEXT`] similar to it,
    /// under any label).
    pub fn learned_copies(&self, analysis: &Analysis) -> Vec<DocId> {
        let index = self.retriever.index;
        let docs = index.documents();
        // None to find (a first round's held-out examples): no search over every labelled text.
        if docs.classified_count(DocKind::Seen) + docs.classified_count(DocKind::Tentative) == 0 {
            return Vec::new();
        }
        let learned = self.analyzer.learnable(analysis);
        index
            .search(&learned.terms)
            .into_iter()
            .filter(|hit| matches!(hit.kind, DocKind::Seen | DocKind::Tentative))
            .filter(|hit| hit.similarity >= SAME_TEXT)
            .map(|hit| hit.doc)
            .collect()
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
    fn a_fit_that_makes_no_number_is_the_identity() {
        let outcomes = [(1e200, true), (-1e200, false), (1e200, false)];
        let fitted = Recalibration::fit(&outcomes, REFIT_PULL);
        assert!(
            fitted.shift.is_finite() && fitted.scale >= MIN_SCALE,
            "{fitted:?}"
        );
    }

    #[test]
    fn the_scale_never_falls_below_its_floor() {
        // The surest texts wrong, the least sure right.
        let outcomes: Vec<(f64, bool)> = (0..200)
            .map(|i| {
                let z = f64::from(i) / 20.0 - 5.0;
                (z, z < 0.0)
            })
            .collect();
        assert!(Recalibration::fit(&outcomes, REFIT_PULL).scale >= MIN_SCALE);
    }

    #[test]
    fn the_calibration_keeps_the_latest_outcomes() {
        let outcome = |right| Outcome {
            features: [0.0; super::super::confidence::FEATURES],
            right,
        };
        let mut log = OutcomeLog::default();
        log.push(outcome(false));
        for _ in 0..OUTCOME_CAPACITY {
            log.push(outcome(true));
        }
        assert_eq!(log.outcomes().len(), OUTCOME_CAPACITY);
        assert!(log.outcomes().all(|o| o.right));
    }
}
