//! Corrections: an operator's label for a text gorag classified. The text becomes a labelled
//! example of that label, and what gorag had learned from its own decision for the text (a
//! classified text under another label) is taken back, as eviction would take it.

use serde::{Deserialize, Serialize};

use super::confidence::Outcome;
use super::index::DocKind;
use super::{Engine, EngineError, IndexReport};

/// A classified text at least this similar to a corrected text is taken to be that text, as
/// learned (its heaviest terms at the time; the weights may have moved a little since).
pub const SAME_TEXT: f64 = 0.9;

/// What a correction found and changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CorrectionReport {
    /// What gorag decides for the text just before the correction is applied (retrieval alone,
    /// on its words: not necessarily what it published when the text came, which the engine
    /// does not keep): the label and its confidence. None when no label was active.
    pub decided: Option<(String, f64)>,
    /// Whether a learned copy of the text under another label was taken back.
    pub took_back: bool,
}

impl Engine {
    /// Learn `text` as a labelled example of `label`, taking back its learned copies under
    /// other labels and its place in the discovery pool (by `text_id`). Errors for an unknown
    /// or retired label, changing nothing. A reviewer's corrections are texts picked because
    /// they needed review: they teach the label, not the confidence (a sample chosen by its
    /// confidence would bias the refit; docs/decisions.md).
    pub fn correct(
        &mut self,
        text_id: &str,
        label: &str,
        text: &str,
    ) -> Result<(IndexReport, CorrectionReport), EngineError> {
        self.correct_as(text_id, label, text, false)
    }

    /// [`Engine::correct`] for a text an audit picked at random: the decision it corrects (or
    /// confirms) is also an outcome the confidence is refitted on ([`super::refit`]).
    pub fn audit(
        &mut self,
        text_id: &str,
        label: &str,
        text: &str,
    ) -> Result<(IndexReport, CorrectionReport), EngineError> {
        self.correct_as(text_id, label, text, true)
    }

    fn correct_as(
        &mut self,
        text_id: &str,
        label: &str,
        text: &str,
        audited: bool,
    ) -> Result<(IndexReport, CorrectionReport), EngineError> {
        let position = self.active_position(label)? as u32;
        let analysis = self.analyze(text);
        let mut outcome = None;
        let decided = self.retrieve(&analysis).ok().map(|retrieval| {
            let decision = self.decide(&retrieval, None);
            if audited && retrieval.margin.is_some() {
                // Only the ranked strategies have a confidence to refit.
                let signals = self.signals(&retrieval, &decision.label, None, &[]);
                outcome = Some(Outcome {
                    features: signals.features(),
                    right: decision.label == label,
                });
            }
            (decision.label, decision.confidence)
        });
        let learned = self.learnable(&analysis);
        // Every copy (a text sent twice was learned twice), taken back at once.
        let copies: Vec<u32> = self
            .index
            .search(&learned.terms)
            .into_iter()
            .filter(|hit| matches!(hit.kind, DocKind::Seen | DocKind::Tentative))
            .filter(|hit| hit.label != position && hit.similarity >= SAME_TEXT)
            .map(|hit| hit.doc)
            .collect();
        let took_back = self.index.remove_classified(&copies) > 0;
        // A pooled copy would keep proposing a class for a text now labelled.
        self.pool.retain(|pooled| pooled.id != text_id);
        // Its outcome is the decision it corrects, not how it fares as an example.
        let (report, _) = self.index_examples(label, &[text.to_string()])?;
        self.record_outcomes(outcome.into_iter().collect());
        Ok((report, CorrectionReport { decided, took_back }))
    }
}
