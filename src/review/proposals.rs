//! The proposals the desk knows from the proposals topic, the texts reviewers placed in each,
//! and the events accepting or rejecting one publishes, checked as the service will check them.

use std::collections::HashMap;

use super::answer::{Answer, DeskError, Publish};
use super::catalogue::Catalogue;
use super::queue::AnswerError;
use crate::bounds::Bounds;
use crate::events::proposal::{self, ProposalEvent, ProposalStatus};
use crate::events::LabelEvent;

/// Texts placed in one proposal that accepting it adds to the new label's examples, at most
/// (the service's bounds on a round's examples still apply).
const MAX_VOTED_EXAMPLES: usize = 20;

/// Each proposal's current record (decision over open, highest revision) and its placed texts.
#[derive(Debug)]
pub struct Proposals {
    records: HashMap<String, ProposalEvent>,
    /// The texts reviewers placed in each proposal not yet decided, oldest first, at most
    /// [`MAX_VOTED_EXAMPLES`] each, for at most `max_voted_proposals` proposals (a placement read
    /// before its proposal counts too: the topics are read side by side).
    votes: HashMap<String, Vec<String>>,
    max_voted_proposals: usize,
}

impl Proposals {
    /// Placed texts are kept for at most `max_voted_proposals` proposals.
    pub fn new(max_voted_proposals: usize) -> Self {
        Self {
            records: HashMap::new(),
            votes: HashMap::new(),
            max_voted_proposals,
        }
    }

    /// A record read from the proposals topic: the proposal's current record after it (the
    /// record already kept, when `event` is stale: an older revision, or open after a
    /// decision). A closed proposal's placed texts are dropped.
    pub fn read(&mut self, event: ProposalEvent) -> Option<ProposalEvent> {
        let id = event.proposal.clone();
        let previous = self.records.remove(&id);
        let current = proposal::current(previous.into_iter().chain([event]))
            .remove(&id)
            .into_iter()
            .next()?;
        if current.status != ProposalStatus::Open {
            self.votes.remove(&id);
        }
        self.records.insert(id, current.clone());
        Some(current)
    }

    /// A text placed in `proposal`, read from the labels topic: one of its first examples
    /// should it be accepted. Nothing is kept for a closed proposal, past
    /// [`MAX_VOTED_EXAMPLES`] texts, or for more than `max_voted_proposals` proposals.
    pub fn vote(&mut self, proposal: String, text: String) {
        let closed = self
            .records
            .get(&proposal)
            .is_some_and(|p| p.status != ProposalStatus::Open);
        let full =
            !self.votes.contains_key(&proposal) && self.votes.len() >= self.max_voted_proposals;
        if closed || full {
            return;
        }
        let votes = self.votes.entry(proposal).or_default();
        if votes.len() < MAX_VOTED_EXAMPLES && !votes.contains(&text) {
            votes.push(text);
        }
    }

    /// Whether proposal `id` is open, as the proposals topic last said.
    pub fn is_open(&self, id: &str) -> bool {
        self.open(id).is_some()
    }

    /// Proposal `id`'s record, while it is open.
    pub fn open(&self, id: &str) -> Option<&ProposalEvent> {
        self.records
            .get(id)
            .filter(|p| p.status == ProposalStatus::Open)
    }

    /// The events accepting or rejecting proposal `id` publishes, checked against the labels
    /// known (`catalogue`) and the service's `bounds`.
    pub fn decide(
        &self,
        id: &str,
        answer: Answer,
        catalogue: &Catalogue,
        bounds: &Bounds,
    ) -> Result<Vec<Publish>, DeskError> {
        let open = self
            .open(id)
            .ok_or(DeskError::Queue(AnswerError::Unknown))?;
        let voted = self.votes.get(id).map(Vec::as_slice).unwrap_or_default();
        if let Answer::Accept { label, .. } = &answer {
            let label = label.trim();
            // An accept interrupted after its round went out is given again with its label.
            match catalogue.round_labels(&open.accepting_round_id()) {
                Some(sent) if !sent.iter().any(|l| l == label) => {
                    return Err(DeskError::RoundSent(sent.join(", ")))
                }
                Some(_) => {}
                None if catalogue.exists(label) => {
                    return Err(DeskError::LabelExists(label.to_string()))
                }
                None => {}
            }
        }
        // Placed texts the service's bounds on examples would refuse are left out.
        let events = proposal_events(open, answer.clone(), voted)?;
        match within_bounds(&events, bounds) {
            Err(_) if !voted.is_empty() => {
                let events = proposal_events(open, answer, &[])?;
                within_bounds(&events, bounds)?;
                Ok(events)
            }
            checked => checked.map(|()| events),
        }
    }
}

/// Whether the service would take `events`' label events.
fn within_bounds(events: &[Publish], bounds: &Bounds) -> Result<(), DeskError> {
    for event in events {
        if let Publish::Label { event, .. } = event {
            crate::events::bounds::label_event(event, bounds)
                .map_err(|rejection| DeskError::Refused(rejection.message.to_string()))?;
        }
    }
    Ok(())
}

/// The events accepting or rejecting `open` publishes: the accepting round (on the labels
/// topic) before the decision (as `gorag proposals accept` does). The texts reviewers placed in
/// it (`voted`) are the new label's first examples, before its representatives.
fn proposal_events(
    open: &ProposalEvent,
    answer: Answer,
    voted: &[String],
) -> Result<Vec<Publish>, DeskError> {
    match answer {
        Answer::Accept {
            label,
            name,
            description,
        } => {
            let mut round = open.accepting_round(Some(&label))?;
            if let LabelEvent::Round { labels, .. } = &mut round {
                for spec in labels.iter_mut() {
                    let representatives = std::mem::take(&mut spec.examples);
                    spec.examples = voted.to_vec();
                    for example in representatives {
                        if !spec.examples.contains(&example) {
                            spec.examples.push(example);
                        }
                    }
                    if let Some(name) = name.clone().filter(|n| !n.trim().is_empty()) {
                        spec.name = Some(name);
                    }
                    if let Some(text) = description.clone().filter(|d| !d.trim().is_empty()) {
                        spec.description = Some(text);
                    }
                }
            }
            let label = label.trim().to_string();
            let decided = open.decided(ProposalStatus::Accepted, Some(label))?;
            Ok(vec![
                Publish::Label {
                    key: open.accepting_round_id(),
                    event: round,
                },
                Publish::Proposal(Box::new(decided)),
            ])
        }
        Answer::Reject => Ok(vec![Publish::Proposal(Box::new(
            open.decided(ProposalStatus::Rejected, None)?,
        ))]),
        Answer::Label(_) | Answer::NoneOfThese | Answer::Proposal(_) => {
            Err(DeskError::Mismatch("a proposal is accepted or rejected"))
        }
    }
}
