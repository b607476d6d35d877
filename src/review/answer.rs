//! A reviewer's answer, why one is refused, and the events an accepted one publishes: the
//! words the desk, its undo window and its page share.

use super::item::TextItem;
use super::queue::{AnswerError, ItemKind, Reviewer};
use crate::events::proposal::{self, ProposalEvent};
use crate::events::{LabelEvent, PROPOSAL_VOTE_VERSION, REVIEWER_VERSION};

/// A reviewer's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The text's label is this active label.
    Label(String),
    /// No active label fits the text.
    NoneOfThese,
    /// The text belongs to this open proposal: it fits no active label, and counts for the
    /// proposed class (accepting the proposal makes it one of the new label's examples).
    Proposal(String),
    /// The proposal becomes a label with this id, name and description.
    Accept {
        label: String,
        name: Option<String>,
        description: Option<String>,
    },
    Reject,
}

impl Answer {
    /// The answer as typed, with an accepted proposal's new id trimmed and normalised (NFC) —
    /// one spelling per label, as the service requires of a new one.
    pub fn normalised(self) -> Result<Self, DeskError> {
        match self {
            Self::Accept {
                label,
                name,
                description,
            } => Ok(Self::Accept {
                label: crate::events::label_id::normalise_id(&label)
                    .map_err(|unfit| DeskError::Refused(unfit.to_string()))?,
                name,
                description,
            }),
            other => Ok(other),
        }
    }
}

/// Why an answer was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeskError {
    #[error(transparent)]
    Queue(#[from] AnswerError),
    #[error("{0:?} is not an active label")]
    UnknownLabel(String),
    #[error("label {0:?} exists already: choose another id")]
    LabelExists(String),
    #[error("this proposal's round was published already, with the label {0}: accept it as that")]
    RoundSent(String),
    #[error("the service would refuse this: {0}")]
    Refused(String),
    #[error("proposal {0:?} is not open (accepted, rejected or withdrawn since)")]
    NotOpen(String),
    #[error("this answer does not fit this item ({0})")]
    Mismatch(&'static str),
    #[error(transparent)]
    Proposal(#[from] proposal::ProposalError),
}

/// What an answer publishes, in this order.
#[derive(Debug, Clone, PartialEq)]
pub enum Publish {
    /// On the labels topic, keyed by `key` (a text id, a round id).
    Label { key: String, event: LabelEvent },
    /// On the proposals topic.
    Proposal(Box<ProposalEvent>),
}

/// The correction a reviewer's `answer` to a text publishes on the labels topic: its label,
/// none of the active ones, or its placement in an open proposal.
pub(super) fn correction(
    text: &TextItem,
    kind: ItemKind,
    answer: Answer,
    reviewer: &Reviewer,
) -> Publish {
    let (label, proposal) = match answer {
        Answer::Label(label) => (Some(label), None),
        Answer::Proposal(proposal) => (None, Some(proposal)),
        _ => (None, None),
    };
    Publish::Label {
        key: text.prediction.text_id.clone(),
        event: LabelEvent::Correct {
            version: if proposal.is_some() {
                PROPOSAL_VOTE_VERSION
            } else {
                REVIEWER_VERSION
            },
            text_id: text.prediction.text_id.clone(),
            none_of_these: label.is_none(),
            label,
            text: text.text.clone(),
            audit: kind == ItemKind::Audit,
            reviewer: Some(reviewer.0.clone()),
            proposal,
        },
    }
}
