//! Corrections: an operator's label for a text gorag classified. The text becomes a labelled
//! example of that label, and what gorag had learned from its own decision for the text (a
//! classified text under another label) is taken back, as eviction would take it.

use serde::{Deserialize, Serialize};

use super::confidence::Outcome;
use super::held_out::HeldOut;
use super::index::{DocId, LabelPos};
use super::refit::HeldOutScoring;
use super::rounds::Indexer;
use super::{Engine, EngineError, IndexReport};

/// What a correction found and changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CorrectionReport {
    /// What gorag decides for the text just before the correction is applied (retrieval alone,
    /// on its words: not necessarily what it published when the text came, which the engine
    /// does not keep): the label and its confidence. None when no label was active.
    pub decided: Option<(String, f64)>,
    /// Whether a learned copy of the text under another label was taken back.
    pub took_back: bool,
    /// A correction to none of the labels: what retrieval made of the text just before, on
    /// discovery's scale (`discovery::arrival_score`: its best score with descriptions left out,
    /// 0 with no evidence; None without scores), for the discovery pool the text joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_score: Option<f64>,
}

/// Why an operator labelled a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorrectionKind {
    /// A reviewer's: the text was picked because its prediction needed review. It teaches the
    /// label only (a sample picked for its low confidence would bias the refit).
    Review,
    /// An audit's: the text was picked at random to check gorag. Its decision is also an
    /// outcome the confidence is refitted on ([`super::refit`]).
    Audit,
}

impl Engine {
    /// An operator's correction of `text`: its `label`, or None for "none of these" (no active
    /// label fits it).
    ///
    /// - To a label: the text becomes one of its labelled examples, and its learned copies
    ///   under other labels are taken back. Errors for an unknown or retired label.
    /// - To none: it becomes no label's example, and every learned copy of it, under any label,
    ///   is taken back. Errors when no label is active.
    ///
    /// An audit's decision also counts for the confidence refit (to none: as a decision whose
    /// label was wrong, whatever gorag decided). The text's place in the discovery pool is the
    /// replicated state's ([`crate::state::State::apply`]). On error nothing changes.
    pub fn correct(
        &mut self,
        label: Option<&str>,
        text: &str,
        kind: CorrectionKind,
    ) -> Result<(IndexReport, CorrectionReport), EngineError> {
        let position = match label {
            Some(label) => Some(LabelPos::at(self.labels.active_position(label)?)),
            None if self.labels.active().next().is_none() => {
                return Err(EngineError::NoActiveLabels)
            }
            None => None,
        };
        let judged = HeldOutScoring::of(self).judge(text, label);
        // Its copies under other labels are taken back (a text sent twice was learned twice).
        let wrong: Vec<DocId> = judged
            .copies
            .into_iter()
            .filter(|&doc| {
                position.is_none_or(|position| {
                    self.index
                        .documents()
                        .get(doc)
                        .is_some_and(|d| d.label != position)
                })
            })
            .collect();
        let took_back = self.index.remove_classified(&wrong) > 0;
        let report = match label {
            Some(label) => {
                // Its outcome is the decision it corrects, not how it fares as an example.
                let (report, _) = Indexer::of(self).examples(label, &[text.to_string()])?;
                // A reviewer's answer is labelled material: the probe learns it now, as a
                // restore would (its weight waits for the next round or examples).
                self.refit_probe();
                report
            }
            None => IndexReport::default(),
        };
        if kind == CorrectionKind::Audit {
            self.outcomes
                .record(judged.outcome.into_iter().collect(), &self.config);
        }
        let correction = CorrectionReport {
            decided: judged.decided,
            took_back,
            // Only a text no label fits joins the discovery pool.
            arrival_score: judged.arrival_score.filter(|_| label.is_none()),
        };
        Ok((report, correction))
    }
}

impl HeldOutScoring<'_> {
    /// The decision a correction corrects, as gorag would take it now, without the text's own
    /// learned copies (which would vouch for their own label); `right` is the right label
    /// (None: none of them). Without scores (`steiner`, `all`, `naive`) there is nothing to
    /// hold out and no confidence to refit.
    fn judge(&self, text: &str, right: Option<&str>) -> Judged {
        let mut analysis = self.analyzer.analyze(text);
        let copies = self.learned_copies(&analysis);
        if self.decisions.config.strategy.evidence().is_none() {
            let decided = self.retriever.retrieve(&analysis).ok().map(|retrieval| {
                let decision = self.decisions.decide(&retrieval, None);
                (decision.label, decision.confidence)
            });
            return Judged {
                copies,
                decided,
                outcome: None,
                arrival_score: None,
            };
        }
        // A failed encoding leaves the decision lexical, as it would have been published.
        let _ = self.analyzer.embed_query(&mut analysis, text);
        let held_out = HeldOut {
            docs: copies.clone(),
            vector: None,
        };
        let Some(retrieval) = self.retriever.retrieve_held_out(&analysis, &held_out) else {
            return Judged {
                copies,
                decided: None,
                outcome: None,
                arrival_score: None,
            };
        };
        let decision = self.decisions.decide(&retrieval, None);
        let signals = self
            .decisions
            .signals(&retrieval, &decision.label, None, &[]);
        // Not a short text's: the recalibration reads outcomes by the long-text weights.
        let outcome =
            (!self.decisions.config.calibrator.reads_as_short(&signals)).then(|| Outcome {
                features: signals.features(),
                right: right == Some(decision.label.as_str()),
            });
        let arrival_score = match retrieval.basis {
            super::Basis::NoEvidence => Some(0.0),
            _ => retrieval.discovery_score,
        };
        Judged {
            copies,
            decided: Some((decision.label, decision.confidence)),
            outcome,
            arrival_score,
        }
    }
}

/// What [`HeldOutScoring::judge`] found of a corrected text.
struct Judged {
    /// Its learned copies, under any label.
    copies: Vec<DocId>,
    decided: Option<(String, f64)>,
    outcome: Option<Outcome>,
    arrival_score: Option<f64>,
}
