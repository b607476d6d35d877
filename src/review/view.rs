//! One queued item as the page shows it: the text, its candidates with their names,
//! descriptions and scores, the rationale; or a proposal.

use serde::Serialize;

use super::catalogue::Catalogue;
use super::item::{Body, LabelView};
use super::proposals::Proposals;
use super::queue::{Item, ItemKind};

/// One item as the page shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ItemView {
    Text {
        text_id: String,
        audit: bool,
        text: String,
        status: &'static str,
        /// gorag's label (none with `no_match`).
        #[serde(skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        confidence: Option<f64>,
        candidates: Vec<CandidateView>,
        #[serde(skip_serializing_if = "Option::is_none")]
        rationale: Option<crate::events::Rationale>,
        /// The open proposal the text reads like, offered as an answer (key 0).
        #[serde(skip_serializing_if = "Option::is_none")]
        proposal: Option<ProposalChoice>,
    },
    Proposal {
        proposal: String,
        name: String,
        /// The label id accepting it makes unless the reviewer gives another.
        label: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        keywords: Vec<String>,
        size: usize,
        representatives: Vec<crate::events::proposal::Representative>,
        /// The active label its members read most like, when the pass could say.
        #[serde(skip_serializing_if = "Option::is_none")]
        closest_label: Option<crate::events::proposal::ClosestLabel>,
    },
}

/// An open proposal offered as a text's answer.
#[derive(Debug, Clone, Serialize)]
pub struct ProposalChoice {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A candidate label with what the page says of it.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateView {
    #[serde(flatten)]
    pub label: LabelView,
    /// Its retrieval score, when the strategy ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// Candidates a page shows at most (keys 1 to 5).
pub const SHOWN_CANDIDATES: usize = 5;

impl ItemView {
    pub(super) fn of(item: &Item<Body>, catalogue: &Catalogue, proposals: &Proposals) -> Self {
        match &item.body {
            Body::Text(text) => {
                let p = &text.prediction;
                let candidates = p
                    .candidates
                    .iter()
                    .enumerate()
                    // Only what can be answered: a label retired since the prediction (or one
                    // the labels topic never announced) is not offered.
                    .filter_map(|(at, id)| {
                        let label = catalogue.active_label(id)?;
                        Some(CandidateView {
                            label: label.clone(),
                            score: p.candidate_scores.get(at).copied(),
                        })
                    })
                    .take(SHOWN_CANDIDATES)
                    .collect();
                ItemView::Text {
                    text_id: p.text_id.clone(),
                    audit: item.kind == ItemKind::Audit,
                    text: text.text.clone(),
                    status: p.status.as_str(),
                    label: p.label.clone(),
                    confidence: p.confidence,
                    candidates,
                    rationale: p.rationale.clone(),
                    // Only while it is still open, under its latest name.
                    proposal: p.proposal.as_ref().and_then(|held| {
                        let open = proposals.open(&held.id)?;
                        Some(ProposalChoice {
                            id: open.proposal.clone(),
                            name: open.name.clone(),
                            description: open.description.clone(),
                        })
                    }),
                }
            }
            Body::Proposal(open) => ItemView::Proposal {
                proposal: open.proposal.clone(),
                name: open.name.clone(),
                label: open.label_id(),
                description: open.description.clone(),
                keywords: open.keywords.clone(),
                size: open.size,
                representatives: open.representatives.clone(),
                closest_label: open.closest_label.clone(),
            },
        }
    }
}
