//! Proposal events (the proposals topic): a class the stream suggests, republished with a
//! higher revision as its community grows (keyed by proposal id), and once more when the
//! operator accepts or rejects it (keyed `ID.decision`). A decision is the current state
//! whatever revision an open record has; otherwise the highest revision is — so replays,
//! duplicates and an open revision written by a pass that raced the operator are harmless,
//! also after compaction (which keeps each key's last record: passes never write a decision's
//! key).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{version_one, LabelEvent, LabelSpec};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposalError {
    #[error("proposal {0} is already {1}")]
    AlreadyDecided(String, &'static str),
    #[error("proposal {0} has no name to make a label id of: give one (--name)")]
    NoLabelId(String),
    #[error("proposal {0} has reached the last revision number")]
    RevisionOverflow(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    Open,
    Accepted,
    Rejected,
    // Closed by a community pass: every member has left the pool, and the theme with them.
    Withdrawn,
}

impl ProposalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Accepted => "accepted",
            Self::Rejected => "rejected",
            Self::Withdrawn => "withdrawn",
        }
    }
}

/// The newest proposal event version this build reads and writes: version 2 added
/// `closest_label`. A pass writes version 2 only with that field (else version 1, which an older
/// build reads); an older build refuses version 2 as `unsupported_version`.
pub const PROPOSAL_EVENT_VERSION: u32 = 2;

/// The active label a proposal's members read most like.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClosestLabel {
    pub label: String,
    /// The cosine, in meaning, of the members' mean and the label's examples' mean (both
    /// centred on the active labels' examples): near 0 for a theme unlike every label, high for
    /// one that may be the label's own texts its examples miss.
    pub similarity: f64,
}

/// One of a proposal's most central texts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Representative {
    pub text_id: String,
    pub excerpt: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposalEvent {
    #[serde(default = "version_one")]
    pub version: u32,
    /// Stable id, also the record key.
    pub proposal: String,
    /// Higher for every later publication of the same proposal.
    pub revision: u64,
    pub status: ProposalStatus,
    /// Proposed class name (its top keywords without an LLM).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub keywords: Vec<String>,
    pub representatives: Vec<Representative>,
    /// Texts in its community.
    pub size: usize,
    /// Their text ids, most central first: a later pass recognises the proposal by them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// Texts gained since the previous revision.
    pub growth: usize,
    /// Mean cosine of the members with their centroid.
    pub cohesion: f64,
    /// The label it became (`accepted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The active label its members read most like, by meaning (version 2; absent without a
    /// sentence encoder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closest_label: Option<ClosestLabel>,
}

impl ProposalEvent {
    /// The revision after this one (a decision, or a republication).
    pub fn next_revision(&self) -> Result<u64, ProposalError> {
        self.revision
            .checked_add(1)
            .ok_or_else(|| ProposalError::RevisionOverflow(self.proposal.clone()))
    }

    /// The record's key on the proposals topic: the proposal id for an open revision,
    /// `ID.decision` for a decision, `ID.withdrawn` for a withdrawal — so compaction, keeping
    /// each key's last record, never drops a decision or a withdrawal for a later open revision
    /// (a pass on another instance may have raced it).
    pub fn record_key(&self) -> String {
        match self.status {
            ProposalStatus::Open => self.proposal.clone(),
            ProposalStatus::Withdrawn => format!("{}.withdrawn", self.proposal),
            ProposalStatus::Accepted | ProposalStatus::Rejected => {
                format!("{}.decision", self.proposal)
            }
        }
    }

    /// The same proposal, decided (or withdrawn): the next revision with `status` (and the
    /// label it became).
    pub fn decided(
        &self,
        status: ProposalStatus,
        label: Option<String>,
    ) -> Result<Self, ProposalError> {
        Ok(Self {
            revision: self.next_revision()?,
            status,
            growth: 0,
            label,
            ..self.clone()
        })
    }

    /// The id a label accepted from this proposal gets unless the operator names it: its name
    /// in lower case, words joined by `_`.
    pub fn label_id(&self) -> String {
        self.name
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join("_")
    }

    /// The round id accepting it publishes (also the record's key).
    pub fn accepting_round_id(&self) -> String {
        format!("accept-{}", self.proposal)
    }

    /// The round event accepting it publishes: one new label (`name`, else [`Self::label_id`])
    /// with the representative texts' excerpts as examples.
    pub fn accepting_round(&self, name: Option<&str>) -> Result<LabelEvent, ProposalError> {
        let id = name.map_or_else(|| self.label_id(), |n| n.trim().to_string());
        if id.is_empty() {
            return Err(ProposalError::NoLabelId(self.proposal.clone()));
        }
        Ok(LabelEvent::Round {
            version: version_one(),
            round: self.accepting_round_id(),
            labels: vec![LabelSpec {
                name: Some(id.replace('_', " ")),
                id,
                description: self.description.clone(),
                examples: self
                    .representatives
                    .iter()
                    .map(|r| r.excerpt.trim_end_matches('…').to_string())
                    .collect(),
            }],
        })
    }
}

/// The current state of each proposal among `events`: its decision, else its withdrawal, else
/// its highest open revision. A decision outranks every open record, whatever its revision: a pass that read
/// the proposal before the operator decided may still publish a later open revision, and must
/// not reopen it. Of an accept and a reject that raced, the accept stands (its round went to
/// the labels topic). The outcome does not depend on the order of records of different keys
/// (they may sit on different partitions); of equal open revisions the last read wins, as
/// compaction keeps the last record of a key.
pub fn current(events: impl IntoIterator<Item = ProposalEvent>) -> BTreeMap<String, ProposalEvent> {
    let rank = |e: &ProposalEvent| match e.status {
        ProposalStatus::Open => (0, e.revision),
        ProposalStatus::Withdrawn => (1, 0),
        ProposalStatus::Rejected => (2, 0),
        ProposalStatus::Accepted => (3, 0),
    };
    let mut latest: BTreeMap<String, ProposalEvent> = BTreeMap::new();
    for event in events {
        match latest.get(&event.proposal) {
            Some(seen) if rank(seen) > rank(&event) => {}
            _ => {
                latest.insert(event.proposal.clone(), event);
            }
        }
    }
    latest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::decode;

    /// A first open revision, as a community pass publishes it.
    fn opened(size: usize) -> ProposalEvent {
        ProposalEvent {
            version: version_one(),
            proposal: "p-1".into(),
            revision: 1,
            status: ProposalStatus::Open,
            name: "crater, lava flow".into(),
            description: None,
            keywords: vec!["crater".into(), "lava flow".into()],
            representatives: [("0", "Lava reached the crater rim…"), ("1", "A new crater")]
                .into_iter()
                .map(|(id, excerpt)| Representative {
                    text_id: id.into(),
                    excerpt: excerpt.into(),
                })
                .collect(),
            size,
            members: (0..size).map(|i| i.to_string()).collect(),
            growth: size,
            cohesion: 0.4,
            label: None,
            closest_label: None,
        }
    }

    #[test]
    fn the_highest_revision_is_current() {
        let first = opened(10);
        let accepted = first
            .decided(ProposalStatus::Accepted, Some("volcanology".into()))
            .unwrap();
        let mut other = opened(8);
        other.proposal = "p-2".into();
        // At the same revision as a decision, an open republication loses, in either order.
        let republished = ProposalEvent {
            revision: 2,
            ..first.clone()
        };
        // A replayed older revision after the newer one changes nothing.
        let state = current([
            first.clone(),
            accepted.clone(),
            republished,
            first.clone(),
            other,
        ]);
        assert_eq!(state.len(), 2);
        assert_eq!(state["p-1"], accepted);
        assert_eq!(state["p-2"].status, ProposalStatus::Open);
        // A pass that read p-1 before the operator accepted it publishes a later open revision
        // (or compaction left only the decision and that revision): p-1 stays accepted.
        let late = ProposalEvent {
            revision: 3,
            ..first.clone()
        };
        assert_eq!(current([late.clone(), accepted.clone()])["p-1"], accepted);
        assert_eq!(current([accepted.clone(), late.clone()])["p-1"], accepted);
        // Accept and reject raced: the accept stands, in either order (compaction may keep
        // either record of the decision key).
        let rejected = first.decided(ProposalStatus::Rejected, None).unwrap();
        assert_eq!(
            current([accepted.clone(), rejected.clone()])["p-1"],
            accepted
        );
        assert_eq!(
            current([rejected.clone(), accepted.clone()])["p-1"],
            accepted
        );
        assert_eq!(current([late, rejected.clone()])["p-1"], rejected);
        // Two passes raced to the same open revision: the last read is current, as compaction
        // would keep it.
        let other_members = ProposalEvent {
            revision: 2,
            size: 11,
            ..first.clone()
        };
        let same_revision = ProposalEvent {
            revision: 2,
            ..first.clone()
        };
        assert_eq!(
            current([same_revision.clone(), other_members.clone()])["p-1"],
            other_members
        );
        // Decisions and withdrawals have keys of their own.
        assert_eq!(first.record_key(), "p-1");
        assert_eq!(accepted.record_key(), "p-1.decision");
        // A withdrawal outranks any open revision and yields to any decision, in either order.
        let withdrawn = first.decided(ProposalStatus::Withdrawn, None).unwrap();
        assert_eq!(withdrawn.record_key(), "p-1.withdrawn");
        let later_open = ProposalEvent {
            revision: 9,
            ..first.clone()
        };
        for (a, b, expected) in [
            (&withdrawn, &later_open, &withdrawn),
            (&withdrawn, &rejected, &rejected),
            (&withdrawn, &accepted, &accepted),
        ] {
            assert_eq!(&current([a.clone(), b.clone()])["p-1"], expected);
            assert_eq!(&current([b.clone(), a.clone()])["p-1"], expected);
        }
    }

    #[test]
    fn accepting_publishes_a_round_the_labels_topic_takes() {
        let event = opened(10);
        assert_eq!(event.label_id(), "crater_lava_flow");
        let round = event.accepting_round(None).unwrap();
        let json = serde_json::to_vec(&round).unwrap();
        let decoded = decode::label_event(&json).unwrap();
        let LabelEvent::Round { round, labels, .. } = decoded else {
            panic!("not a round: {decoded:?}");
        };
        assert_eq!(round, "accept-p-1");
        assert_eq!(labels[0].id, "crater_lava_flow");
        assert_eq!(
            labels[0].examples,
            ["Lava reached the crater rim", "A new crater"]
        );
        let named = event.accepting_round(Some("volcanology")).unwrap();
        let LabelEvent::Round { labels, .. } = named else {
            panic!("not a round");
        };
        assert_eq!(labels[0].id, "volcanology");
        // Without keywords there is no name to make an id of: the operator must give one.
        let unnamed = ProposalEvent {
            name: " ".into(),
            ..event
        };
        assert!(unnamed.accepting_round(None).is_err());
        assert!(unnamed.accepting_round(Some("geology")).is_ok());
    }
}
