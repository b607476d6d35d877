//! A labelled text left out of retrieval while it is scored: what refitting the confidence and
//! fitting the probe's weight hand to retrieval (its own home, so that retrieval and the fits
//! that call it do not import each other).

use super::index::DocId;

/// A labelled text left out of retrieval while it is scored.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeldOut {
    /// Its documents in the retrieval index: an example's own, and any learned copy of its text.
    pub docs: Vec<DocId>,
    /// An example's vector and its label's position, with the embedding signal.
    pub vector: Option<(u32, Vec<f32>)>,
}
