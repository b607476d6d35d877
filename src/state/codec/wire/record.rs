//! The changelog record's layouts, by version: [`VersionedRecord`]. The marker byte before a
//! record is the codec's (`changelog.rs`); the version is the record's first field, read before
//! the rest to pick the layout.

use serde::{Deserialize, Serialize};

use super::leaves::{TermCountsWire, UnexplainedWire};
use super::update::{AnalysisV9, UpdateV9};
use super::WireError;
use crate::discovery::PoolNote;
use crate::events::decode::Reason;
use crate::position::Position;
use crate::state::codec::{Change, ChangeRecord, LabelOutcome, LearnedText, RejectStage};

/// The layouts this build reads, each with the versions written in it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum VersionedRecord {
    /// Versions 5 to 10: one layout, as each later version only appended enum variants or gave
    /// a field a value it never had (`mod.rs`, `CHANGELOG_OLDEST_SUPPORTED`).
    V9(RecordV9),
}

// A new version is a new layout here (or a range of this one): raise these with it.
const _: () = assert!(super::super::CHANGELOG_VERSION == 10);
const _: () = assert!(super::super::CHANGELOG_OLDEST_SUPPORTED == 5);

impl VersionedRecord {
    /// The record of `version` in `body` (marker removed); None for a version this build does
    /// not read.
    pub fn decode(version: u32, body: &[u8]) -> Option<Result<Self, postcard::Error>> {
        match version {
            5..=10 => Some(postcard::from_bytes(body).map(Self::V9)),
            _ => None,
        }
    }
}

impl TryFrom<VersionedRecord> for ChangeRecord {
    type Error = WireError;

    fn try_from(versioned: VersionedRecord) -> Result<Self, WireError> {
        match versioned {
            VersionedRecord::V9(record) => record.try_into(),
        }
    }
}

/// A record of versions 5 to 10.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordV9 {
    pub version: u32,
    pub origin: String,
    pub change: ChangeV9,
}

/// [`Change`], by place: the retired places held record kinds of versions 1 to 4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum ChangeV9 {
    Retired0,
    Label {
        offset: i64,
        key: Option<Vec<u8>>,
        payload: Vec<u8>,
        outcome: LabelOutcomeV9,
    },
    Retired2,
    Retired3,
    Retired4,
    /// Place 5 (`learn_view` writes it from borrowed texts).
    Learned {
        texts: Vec<LearnedTextV9>,
    },
}

/// [`LearnedText`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LearnedTextV9 {
    pub partition: i32,
    pub offset: i64,
    pub analysis: AnalysisV9,
    pub label: String,
    pub confident: bool,
    pub note: Option<PoolNoteV9>,
}

/// [`PoolNote`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PoolNoteV9 {
    pub id: String,
    pub why: UnexplainedWire,
    pub excerpt: String,
    pub terms: TermCountsWire,
    pub arrival_score: Option<f64>,
}

/// [`LabelOutcome`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum LabelOutcomeV9 {
    Apply(UpdateV9),
    Reject {
        stage: RejectStageV9,
        reason: ReasonV9,
        message: String,
    },
}

/// [`RejectStage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RejectStageV9 {
    Decode,
    Apply,
}

/// [`Reason`], by place: version 8 appended `OverLimit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ReasonV9 {
    InvalidUtf8,
    MalformedJson,
    InvalidEvent,
    UnknownEventType,
    UnsupportedVersion,
    EmptyText,
    OversizedText,
    DuplicateLabel,
    UnknownLabel,
    RetiredLabel,
    InvalidRound,
    NoActiveLabels,
    LlmFailed,
    OutputTooLarge,
    OverLimit,
}

impl From<ChangeRecord> for RecordV9 {
    fn from(record: ChangeRecord) -> Self {
        let ChangeRecord {
            version,
            origin,
            change,
        } = record;
        let change = match change {
            Change::Label {
                offset,
                key,
                payload,
                outcome,
            } => ChangeV9::Label {
                offset,
                key,
                payload,
                outcome: outcome.into(),
            },
            Change::Learned { texts } => ChangeV9::Learned {
                texts: texts.into_iter().map(Into::into).collect(),
            },
        };
        Self {
            version,
            origin,
            change,
        }
    }
}

impl TryFrom<RecordV9> for ChangeRecord {
    type Error = WireError;

    fn try_from(wire: RecordV9) -> Result<Self, WireError> {
        let RecordV9 {
            version,
            origin,
            change,
        } = wire;
        let change = match change {
            ChangeV9::Label {
                offset,
                key,
                payload,
                outcome,
            } => Change::Label {
                offset,
                key,
                payload,
                outcome: outcome.try_into()?,
            },
            ChangeV9::Learned { texts } => Change::Learned {
                texts: texts.into_iter().map(Into::into).collect(),
            },
            ChangeV9::Retired0 => return Err(WireError::Retired("Change place 0")),
            ChangeV9::Retired2 => return Err(WireError::Retired("Change place 2")),
            ChangeV9::Retired3 => return Err(WireError::Retired("Change place 3")),
            ChangeV9::Retired4 => return Err(WireError::Retired("Change place 4")),
        };
        Ok(Self {
            version,
            origin,
            change,
        })
    }
}

impl From<LearnedText> for LearnedTextV9 {
    fn from(text: LearnedText) -> Self {
        let LearnedText {
            position: Position { partition, offset },
            analysis,
            label,
            confident,
            note,
        } = text;
        Self {
            partition,
            offset,
            analysis: analysis.into(),
            label,
            confident,
            note: note.map(Into::into),
        }
    }
}

impl From<LearnedTextV9> for LearnedText {
    fn from(wire: LearnedTextV9) -> Self {
        let LearnedTextV9 {
            partition,
            offset,
            analysis,
            label,
            confident,
            note,
        } = wire;
        Self {
            position: Position { partition, offset },
            analysis: analysis.into(),
            label,
            confident,
            note: note.map(Into::into),
        }
    }
}

impl From<PoolNote> for PoolNoteV9 {
    fn from(note: PoolNote) -> Self {
        let PoolNote {
            id,
            why,
            excerpt,
            terms,
            arrival_score,
        } = note;
        Self {
            id,
            why: why.into(),
            excerpt,
            terms: terms.into(),
            arrival_score,
        }
    }
}

impl From<PoolNoteV9> for PoolNote {
    fn from(wire: PoolNoteV9) -> Self {
        let PoolNoteV9 {
            id,
            why,
            excerpt,
            terms,
            arrival_score,
        } = wire;
        Self {
            id,
            why: why.into(),
            excerpt,
            terms: terms.into(),
            arrival_score,
        }
    }
}

impl From<LabelOutcome> for LabelOutcomeV9 {
    fn from(outcome: LabelOutcome) -> Self {
        match outcome {
            LabelOutcome::Apply(update) => Self::Apply(update.into()),
            LabelOutcome::Reject {
                stage,
                reason,
                message,
            } => Self::Reject {
                stage: match stage {
                    RejectStage::Decode => RejectStageV9::Decode,
                    RejectStage::Apply => RejectStageV9::Apply,
                },
                reason: reason.into(),
                message,
            },
        }
    }
}

impl TryFrom<LabelOutcomeV9> for LabelOutcome {
    type Error = WireError;

    fn try_from(wire: LabelOutcomeV9) -> Result<Self, WireError> {
        Ok(match wire {
            LabelOutcomeV9::Apply(update) => Self::Apply(update.try_into()?),
            LabelOutcomeV9::Reject {
                stage,
                reason,
                message,
            } => Self::Reject {
                stage: match stage {
                    RejectStageV9::Decode => RejectStage::Decode,
                    RejectStageV9::Apply => RejectStage::Apply,
                },
                reason: reason.into(),
                message,
            },
        })
    }
}

/// The two directions of [`ReasonV9`]'s conversion, from one list (a reason missing from it
/// fails to compile, both ways).
macro_rules! reasons {
    ($($name:ident),* $(,)?) => {
        impl From<Reason> for ReasonV9 {
            fn from(reason: Reason) -> Self {
                match reason {
                    $(Reason::$name => Self::$name,)*
                }
            }
        }

        impl From<ReasonV9> for Reason {
            fn from(wire: ReasonV9) -> Self {
                match wire {
                    $(ReasonV9::$name => Self::$name,)*
                }
            }
        }
    };
}

reasons!(
    InvalidUtf8,
    MalformedJson,
    InvalidEvent,
    UnknownEventType,
    UnsupportedVersion,
    EmptyText,
    OversizedText,
    DuplicateLabel,
    UnknownLabel,
    RetiredLabel,
    InvalidRound,
    NoActiveLabels,
    LlmFailed,
    OutputTooLarge,
    OverLimit,
);
