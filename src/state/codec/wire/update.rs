//! [`Update`] as changelog versions 5 to 10 write it (inside a label event's outcome) and the
//! store logs it: one layout for both, so a change here is a new changelog version and a new
//! store format — except a variant appended to a leaf, which versions 6 to 10 did within store
//! format 3 (an older build then fails on the logged update rather than on the format number:
//! docs/limits.md).

use serde::{Deserialize, Serialize};

use super::leaves::PooledTextWire;
use super::WireError;
use crate::engine::keywords::Keyword;
use crate::engine::text::PhraseCounts;
use crate::engine::{Analysis, NewLabel};
use crate::state::Update;

/// [`Update`], by place: place 4 is retired (a pooled text as logs before arrival scores wrote
/// it); places 6 to 9 were appended by versions 6, 7 and 9.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum UpdateV9 {
    Round {
        round: String,
        labels: Vec<NewLabelV9>,
    },
    AddExamples {
        label: String,
        examples: Vec<String>,
    },
    RetireLabel {
        label: String,
    },
    Learn {
        analysis: AnalysisV9,
        label: String,
        confident: bool,
    },
    Retired4,
    Pooled {
        text: PooledTextWire,
        arrival_score: Option<f64>,
    },
    Correct {
        text_id: String,
        label: String,
        text: String,
    },
    Audit {
        text_id: String,
        label: String,
        text: String,
    },
    CorrectNone {
        text_id: String,
        text: String,
    },
    AuditNone {
        text_id: String,
        text: String,
    },
}

/// [`NewLabel`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NewLabelV9 {
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub examples: Vec<String>,
}

/// [`Analysis`] without its sentence vector, which is never stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AnalysisV9 {
    pub phrases: PhraseCountsV9,
    pub keywords: Vec<KeywordV9>,
    pub terms: super::leaves::TermCountsWire,
}

/// [`PhraseCounts`]: its map as (phrase, count) pairs, in the map's order (a map in postcard).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PhraseCountsV9 {
    pub counts: Vec<(String, u32)>,
    pub total: u32,
}

/// [`Keyword`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeywordV9 {
    pub phrase: String,
    pub score: f64,
}

impl From<Analysis> for AnalysisV9 {
    fn from(analysis: Analysis) -> Self {
        // The vector is the shell's, for this process only: learn records carry terms.
        let Analysis {
            phrases,
            keywords,
            terms,
            embedding: _,
            words: _,
        } = analysis;
        let PhraseCounts { counts, total } = phrases;
        Self {
            phrases: PhraseCountsV9 {
                counts: counts.into_iter().collect(),
                total,
            },
            keywords: keywords
                .into_iter()
                .map(|Keyword { phrase, score }| KeywordV9 { phrase, score })
                .collect(),
            terms: terms.into(),
        }
    }
}

impl From<AnalysisV9> for Analysis {
    fn from(wire: AnalysisV9) -> Self {
        let AnalysisV9 {
            phrases: PhraseCountsV9 { counts, total },
            keywords,
            terms,
        } = wire;
        Self {
            phrases: PhraseCounts {
                counts: counts.into_iter().collect(),
                total,
            },
            keywords: keywords
                .into_iter()
                .map(|KeywordV9 { phrase, score }| Keyword { phrase, score })
                .collect(),
            terms: terms.into(),
            embedding: None,
            words: None,
        }
    }
}

impl From<NewLabel> for NewLabelV9 {
    fn from(label: NewLabel) -> Self {
        let NewLabel {
            id,
            name,
            description,
            examples,
        } = label;
        Self {
            id,
            name,
            description,
            examples,
        }
    }
}

impl From<NewLabelV9> for NewLabel {
    fn from(wire: NewLabelV9) -> Self {
        let NewLabelV9 {
            id,
            name,
            description,
            examples,
        } = wire;
        Self {
            id,
            name,
            description,
            examples,
        }
    }
}

impl From<Update> for UpdateV9 {
    fn from(update: Update) -> Self {
        match update {
            Update::Round { round, labels } => Self::Round {
                round,
                labels: labels.into_iter().map(Into::into).collect(),
            },
            Update::AddExamples { label, examples } => Self::AddExamples { label, examples },
            Update::RetireLabel { label } => Self::RetireLabel { label },
            Update::Learn {
                analysis,
                label,
                confident,
            } => Self::Learn {
                analysis: analysis.into(),
                label,
                confident,
            },
            Update::Pooled {
                text,
                arrival_score,
            } => {
                // The text's own score is not in its layout: the update's is the one kept.
                let (text, _) = PooledTextWire::split(text);
                Self::Pooled {
                    text,
                    arrival_score,
                }
            }
            Update::Correct {
                text_id,
                label,
                text,
            } => Self::Correct {
                text_id,
                label,
                text,
            },
            Update::Audit {
                text_id,
                label,
                text,
            } => Self::Audit {
                text_id,
                label,
                text,
            },
            Update::CorrectNone { text_id, text } => Self::CorrectNone { text_id, text },
            Update::AuditNone { text_id, text } => Self::AuditNone { text_id, text },
        }
    }
}

impl TryFrom<UpdateV9> for Update {
    type Error = WireError;

    fn try_from(wire: UpdateV9) -> Result<Self, WireError> {
        Ok(match wire {
            UpdateV9::Round { round, labels } => Self::Round {
                round,
                labels: labels.into_iter().map(Into::into).collect(),
            },
            UpdateV9::AddExamples { label, examples } => Self::AddExamples { label, examples },
            UpdateV9::RetireLabel { label } => Self::RetireLabel { label },
            UpdateV9::Learn {
                analysis,
                label,
                confident,
            } => Self::Learn {
                analysis: analysis.into(),
                label,
                confident,
            },
            UpdateV9::Retired4 => return Err(WireError::Retired("Update place 4")),
            UpdateV9::Pooled {
                text,
                arrival_score,
            } => Self::Pooled {
                // As the old layout read it: the text's score unset, the update's beside it.
                text: text.join(None),
                arrival_score,
            },
            UpdateV9::Correct {
                text_id,
                label,
                text,
            } => Self::Correct {
                text_id,
                label,
                text,
            },
            UpdateV9::Audit {
                text_id,
                label,
                text,
            } => Self::Audit {
                text_id,
                label,
                text,
            },
            UpdateV9::CorrectNone { text_id, text } => Self::CorrectNone { text_id, text },
            UpdateV9::AuditNone { text_id, text } => Self::AuditNone { text_id, text },
        })
    }
}
