//! Proposal events (the proposals topic, keyed by proposal id): a class the stream suggests,
//! republished with a higher revision as its community grows, and once more when the operator
//! accepts or rejects it. The highest revision of a key is its current state, so replays and
//! duplicates are harmless.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{version_one, LabelEvent, LabelSpec};
use crate::discovery::Proposal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    Open,
    Accepted,
    Rejected,
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
    /// Texts gained since the previous revision.
    pub growth: usize,
    /// Mean cosine of the members with their centroid.
    pub cohesion: f64,
    /// The label it became (`accepted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl ProposalEvent {
    /// An open proposal's event; `previous` is the last one published for it, if any.
    pub fn open(proposal: &Proposal, previous: Option<&ProposalEvent>) -> Self {
        let representatives = proposal
            .representatives
            .iter()
            .zip(&proposal.excerpts)
            .map(|(id, excerpt)| Representative {
                text_id: id.clone(),
                excerpt: excerpt.clone(),
            })
            .collect();
        Self {
            version: version_one(),
            proposal: proposal.id.clone(),
            revision: previous.map_or(1, |p| p.revision + 1),
            status: ProposalStatus::Open,
            name: proposal.name.clone(),
            description: None,
            keywords: proposal.keywords.clone(),
            representatives,
            size: proposal.size,
            growth: proposal.size.saturating_sub(previous.map_or(0, |p| p.size)),
            cohesion: proposal.cohesion,
            label: None,
        }
    }

    /// The same proposal, decided: the next revision with `status` (and the label it became).
    pub fn decided(&self, status: ProposalStatus, label: Option<String>) -> Self {
        Self {
            revision: self.revision + 1,
            status,
            growth: 0,
            label,
            ..self.clone()
        }
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

    /// The round event accepting it publishes: one new label (`name`, else [`Self::label_id`])
    /// with the representative texts' excerpts as examples.
    pub fn accepting_round(&self, name: Option<&str>) -> LabelEvent {
        let id = name.map_or_else(|| self.label_id(), str::to_string);
        LabelEvent::Round {
            version: version_one(),
            round: format!("accept-{}", self.proposal),
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
        }
    }
}

/// The current state of each proposal among `events` (in any order): its highest revision.
pub fn current(events: impl IntoIterator<Item = ProposalEvent>) -> BTreeMap<String, ProposalEvent> {
    let mut latest: BTreeMap<String, ProposalEvent> = BTreeMap::new();
    for event in events {
        match latest.get(&event.proposal) {
            Some(seen) if seen.revision >= event.revision => {}
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

    fn proposal(size: usize) -> Proposal {
        Proposal {
            id: "p-1".into(),
            name: "crater, lava flow".into(),
            keywords: vec!["crater".into(), "lava flow".into()],
            members: (0..size).map(|i| i.to_string()).collect(),
            representatives: vec!["0".into(), "1".into()],
            excerpts: vec!["Lava reached the crater rim…".into(), "A new crater".into()],
            size,
            cohesion: 0.4,
        }
    }

    #[test]
    fn revisions_grow_and_decisions_are_later_revisions() {
        let first = ProposalEvent::open(&proposal(10), None);
        assert_eq!((first.revision, first.growth), (1, 10));
        let grown = ProposalEvent::open(&proposal(14), Some(&first));
        assert_eq!((grown.revision, grown.growth), (2, 4));
        let rejected = grown.decided(ProposalStatus::Rejected, None);
        assert_eq!(rejected.revision, 3);
        assert_eq!(rejected.status, ProposalStatus::Rejected);
        let json = serde_json::to_string(&rejected).unwrap();
        assert_eq!(
            serde_json::from_str::<ProposalEvent>(&json).unwrap(),
            rejected
        );
    }

    #[test]
    fn the_highest_revision_is_current() {
        let first = ProposalEvent::open(&proposal(10), None);
        let accepted = first.decided(ProposalStatus::Accepted, Some("volcanology".into()));
        let mut other = ProposalEvent::open(&proposal(8), None);
        other.proposal = "p-2".into();
        // A replayed older revision after the newer one changes nothing.
        let state = current([first.clone(), accepted.clone(), first, other]);
        assert_eq!(state.len(), 2);
        assert_eq!(state["p-1"], accepted);
        assert_eq!(state["p-2"].status, ProposalStatus::Open);
    }

    #[test]
    fn accepting_publishes_a_round_the_labels_topic_takes() {
        let event = ProposalEvent::open(&proposal(10), None);
        assert_eq!(event.label_id(), "crater_lava_flow");
        let round = event.accepting_round(None);
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
        let named = event.accepting_round(Some("volcanology"));
        let LabelEvent::Round { labels, .. } = named else {
            panic!("not a round");
        };
        assert_eq!(labels[0].id, "volcanology");
    }
}
