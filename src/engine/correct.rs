//! Corrections: an operator's label for a text gorag classified. The text becomes a labelled
//! example of that label, and what gorag had learned from its own decision for the text (a
//! classified text under another label) is taken back, as eviction would take it.

use serde::{Deserialize, Serialize};

use super::index::DocKind;
use super::{Engine, EngineError, IndexReport};

/// A classified text at least this similar to a corrected text is taken to be that text, as
/// learned (its heaviest terms at the time; the weights may have moved a little since).
pub const SAME_TEXT: f64 = 0.9;

/// What a correction found and changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CorrectionReport {
    /// What gorag would have decided for the text just before the correction (retrieval
    /// alone): the label and its confidence. None when no label was active to decide.
    pub decided: Option<(String, f64)>,
    /// Whether a learned copy of the text under another label was taken back.
    pub took_back: bool,
}

impl Engine {
    /// Learn `text` as a labelled example of `label`, taking back its learned copy under
    /// another label if there is one. Errors for an unknown or retired label, changing nothing.
    pub fn correct(
        &mut self,
        label: &str,
        text: &str,
    ) -> Result<(IndexReport, CorrectionReport), EngineError> {
        let position = self.active_position(label)? as u32;
        let analysis = self.analyze(text);
        let decided = self.retrieve(&analysis).ok().map(|retrieval| {
            let decision = self.decide(&retrieval, None);
            (decision.label, decision.confidence)
        });
        let learned = self.learnable(&analysis);
        let copy = self
            .index
            .search(&learned.terms)
            .into_iter()
            .filter(|hit| matches!(hit.kind, DocKind::Seen | DocKind::Tentative))
            .filter(|hit| hit.label != position && hit.similarity >= SAME_TEXT)
            .max_by(|a, b| {
                a.similarity
                    .total_cmp(&b.similarity)
                    .then(b.doc.cmp(&a.doc))
            });
        let took_back = copy.is_some_and(|hit| self.index.remove_classified(hit.doc));
        let report = self.add_examples(label, &[text.to_string()])?;
        Ok((report, CorrectionReport { decided, took_back }))
    }
}
