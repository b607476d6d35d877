//! What a queued item holds, and the labels as the labels topic announced them: the desk keeps
//! them, the page's view reads them.

use serde::Serialize;

use crate::events::proposal::ProposalEvent;
use crate::events::Prediction;

/// What a queued text item holds.
#[derive(Debug, Clone)]
pub struct TextItem {
    pub prediction: Prediction,
    pub text: String,
}

#[derive(Debug, Clone)]
pub enum Body {
    Text(Box<TextItem>),
    Proposal(Box<ProposalEvent>),
}

/// A label as the labels topic announced it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelView {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The start of its first example: what the page shows where it has no description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
    #[serde(skip)]
    pub active: bool,
}

/// How much of a label's first example the page shows.
pub const EXAMPLE_CHARS: usize = 160;

/// The start of `example`, at most [`EXAMPLE_CHARS`] characters, "…" where it was cut.
pub fn example_start(example: &str) -> String {
    let mut chars = example.chars();
    let start: String = chars.by_ref().take(EXAMPLE_CHARS).collect();
    if chars.next().is_some() {
        format!("{start}…")
    } else {
        start
    }
}
