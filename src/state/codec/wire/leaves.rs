//! Leaves both formats hold: a text's retrieval terms, why a text is poorly explained, and a
//! pooled text (in the snapshot's pool, and in the changelog's `Update::Pooled`).

use serde::{Deserialize, Serialize};

use crate::discovery::{PooledText, Unexplained};
use crate::engine::terms::TermCounts;

/// [`TermCounts`]: (term, count), sorted by term.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TermCountsWire {
    pub counts: Vec<(String, u32)>,
}

impl From<TermCounts> for TermCountsWire {
    fn from(terms: TermCounts) -> Self {
        let TermCounts { counts } = terms;
        Self { counts }
    }
}

impl From<TermCountsWire> for TermCounts {
    fn from(wire: TermCountsWire) -> Self {
        let TermCountsWire { counts } = wire;
        Self { counts }
    }
}

/// [`Unexplained`], by place: a reason is appended, never inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum UnexplainedWire {
    UnknownLabel,
    NoEvidence,
    WeakScore,
    NeedsReview,
    NoMatch,
    /// Changelog version 10, snapshot version 5.
    Doubt,
}

impl From<Unexplained> for UnexplainedWire {
    fn from(why: Unexplained) -> Self {
        match why {
            Unexplained::UnknownLabel => Self::UnknownLabel,
            Unexplained::NoEvidence => Self::NoEvidence,
            Unexplained::WeakScore => Self::WeakScore,
            Unexplained::NeedsReview => Self::NeedsReview,
            Unexplained::NoMatch => Self::NoMatch,
            Unexplained::Doubt => Self::Doubt,
        }
    }
}

impl From<UnexplainedWire> for Unexplained {
    fn from(wire: UnexplainedWire) -> Self {
        match wire {
            UnexplainedWire::UnknownLabel => Self::UnknownLabel,
            UnexplainedWire::NoEvidence => Self::NoEvidence,
            UnexplainedWire::WeakScore => Self::WeakScore,
            UnexplainedWire::NeedsReview => Self::NeedsReview,
            UnexplainedWire::NoMatch => Self::NoMatch,
            UnexplainedWire::Doubt => Self::Doubt,
        }
    }
}

/// [`PooledText`] without its arrival score, which every layout stores beside the text (the
/// text's layout predates it): the caller pairs them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PooledTextWire {
    pub id: String,
    pub terms: TermCountsWire,
    pub keywords: Vec<String>,
    pub excerpt: String,
    pub why: UnexplainedWire,
    pub label: String,
}

impl PooledTextWire {
    /// The text, and its arrival score to store beside it.
    pub fn split(text: PooledText) -> (Self, Option<f64>) {
        let PooledText {
            id,
            terms,
            keywords,
            excerpt,
            why,
            label,
            arrival_score,
        } = text;
        let wire = Self {
            id,
            terms: terms.into(),
            keywords,
            excerpt,
            why: why.into(),
            label,
        };
        (wire, arrival_score)
    }

    /// The pooled text with the arrival score stored beside it.
    pub fn join(self, arrival_score: Option<f64>) -> PooledText {
        let Self {
            id,
            terms,
            keywords,
            excerpt,
            why,
            label,
        } = self;
        PooledText {
            id,
            terms: terms.into(),
            keywords,
            excerpt,
            why: why.into(),
            label,
            arrival_score,
        }
    }
}
