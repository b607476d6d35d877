//! The record layouts older builds wrote to the changelog, read and upgraded, never written
//! (the versions this build reads: [`super::CHANGE_VERSION`] and the module documentation).

use serde::{Deserialize, Serialize};

use super::LearnedText;
use crate::discovery::{OldNote, PoolNoteV3, PoolNoteV4};
use crate::engine::Analysis;

/// A learned text as versions 3 and 4 wrote it: the same fields, an older note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OldLearnedText<N> {
    pub partition: i32,
    pub offset: i64,
    pub analysis: Analysis,
    pub label: String,
    pub confident: bool,
    pub note: Option<N>,
}

/// Version 3: its note without the text's terms.
pub type LearnedTextV3 = OldLearnedText<PoolNoteV3>;
/// Version 4: its note without the arrival score.
pub type LearnedTextV4 = OldLearnedText<PoolNoteV4>;

impl<N: OldNote> From<OldLearnedText<N>> for LearnedText {
    fn from(old: OldLearnedText<N>) -> Self {
        let note = old.note.map(|note| note.upgrade(&old.analysis));
        Self {
            partition: old.partition,
            offset: old.offset,
            analysis: old.analysis,
            label: old.label,
            confident: old.confident,
            note,
        }
    }
}

/// A learned text as version 2 wrote it (no discovery note).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedTextV2 {
    pub partition: i32,
    pub offset: i64,
    pub analysis: Analysis,
    pub label: String,
    pub confident: bool,
}

impl From<LearnedTextV2> for LearnedText {
    fn from(old: LearnedTextV2) -> Self {
        Self {
            partition: old.partition,
            offset: old.offset,
            analysis: old.analysis,
            label: old.label,
            confident: old.confident,
            note: None,
        }
    }
}

/// Learn records from before `confident` existed learned everything.
pub(super) fn learned_with_confidence() -> bool {
    true
}
