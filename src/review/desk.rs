//! The desk's state, pure and synchronous: the four topics' events go in ([`Input`]), what a
//! reviewer sees comes out ([`ItemView`]), and an answer turns into the events to publish
//! ([`Publish`]). The async shell (`feed`, `web`) reads the topics, serves the page and sends
//! what this returns.

use std::collections::{BTreeMap, HashMap};

pub use super::item::{Body, LabelView, TextItem};
use super::memory::{BoundedMap, TextMemory};
use super::queue::{self, AnswerError, Item, ItemKey, ItemKind, Millis, Offered, Queue, Reviewer};
use super::tally::Tally;
pub use super::view::{CandidateView, ItemView, SHOWN_CANDIDATES};
use crate::events::proposal::{self, ProposalEvent, ProposalStatus};
use crate::events::{
    LabelEvent, Prediction, PredictionStatus, TextEvent, PROPOSAL_VOTE_VERSION, REVIEWER_VERSION,
};

/// An event read from one of the desk's topics, decoded at once.
#[derive(Debug, Clone)]
pub enum Input {
    Label(LabelEvent),
    Text(TextEvent),
    Prediction(Box<Prediction>),
    Proposal(Box<ProposalEvent>),
}

/// The desk's settings (`[review]`).
#[derive(Debug, Clone, PartialEq)]
pub struct DeskSettings {
    /// The share of decided predictions offered as audits (0 to 1).
    pub audit_share: f64,
    /// The most items waiting at once.
    pub max_items: usize,
    /// How long a reviewer holds an item they were shown.
    pub claim_ms: Millis,
    /// The most bytes of texts kept while their prediction has not come yet.
    pub max_text_bytes: usize,
    /// The bounds the service keeps on label events: an accepted proposal's round must pass
    /// them, or the service would dead-letter it.
    pub bounds: crate::bounds::Bounds,
}

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

/// The desk.
#[derive(Debug)]
pub struct Desk {
    settings: DeskSettings,
    queue: Queue<Body>,
    labels: BTreeMap<String, LabelView>,
    /// The rounds announced so far, with their labels' ids.
    rounds: BTreeMap<String, Vec<String>>,
    /// Texts whose prediction has not come yet, oldest first, bounded in bytes.
    texts: TextMemory,
    /// Predictions whose text has not come yet (read in the other order), bounded in count.
    waiting: BoundedMap<Prediction>,
    /// The current record of each proposal (decision over open, highest revision).
    proposals: HashMap<String, ProposalEvent>,
    /// The texts reviewers placed in each proposal not yet decided, oldest first, at most
    /// [`MAX_VOTED_EXAMPLES`] each, for at most `max_items` proposals (a placement read
    /// before its proposal counts too: the topics are read side by side).
    votes: HashMap<String, Vec<String>>,
    tally: Tally,
}

/// Texts placed in one proposal that accepting it adds to the new label's examples, at most
/// (the service's bounds on a round's examples still apply).
pub const MAX_VOTED_EXAMPLES: usize = 20;

impl Desk {
    pub fn new(settings: DeskSettings) -> Self {
        Self {
            queue: Queue::new(settings.max_items, settings.claim_ms),
            texts: TextMemory::new(settings.max_text_bytes),
            waiting: BoundedMap::new(settings.max_items),
            settings,
            labels: BTreeMap::new(),
            rounds: BTreeMap::new(),
            proposals: HashMap::new(),
            votes: HashMap::new(),
            tally: Tally::default(),
        }
    }

    /// An event read from a topic, written at `now` (an item's arrival).
    pub fn read(&mut self, input: Input, now: Millis) {
        match input {
            Input::Label(event) => self.read_label(event),
            Input::Text(event) => self.read_text(event, now),
            Input::Prediction(prediction) => self.read_prediction(*prediction, now),
            Input::Proposal(event) => self.read_proposal(*event, now),
        }
    }

    fn read_label(&mut self, event: LabelEvent) {
        match event {
            LabelEvent::Round { round, labels, .. } => {
                let ids = labels.iter().map(|l| l.id.clone()).collect();
                self.rounds.insert(round, ids);
                for spec in labels {
                    let view = LabelView {
                        id: spec.id.clone(),
                        name: spec.name,
                        description: spec.description,
                        example: spec.examples.first().map(|e| super::item::example_start(e)),
                        active: true,
                    };
                    self.labels.insert(spec.id, view);
                }
            }
            LabelEvent::RetireLabel { label, .. } => {
                if let Some(view) = self.labels.get_mut(&label) {
                    view.active = false;
                }
            }
            LabelEvent::Correct {
                text_id,
                proposal,
                text,
                ..
            } => {
                if let Some(proposal) = proposal {
                    self.vote(proposal, text);
                }
                let key = ItemKey::Text(text_id);
                self.waiting.remove(&key);
                self.queue.answered(&key);
            }
            LabelEvent::AddExamples { .. } => {}
        }
    }

    fn read_text(&mut self, event: TextEvent, now: Millis) {
        let key = ItemKey::Text(event.id.clone());
        match self.waiting.remove(&key) {
            Some(prediction) => self.offer_text(prediction, event.text, now),
            None if !self.queue.is_answered(&key) => self.texts.keep(event.id, event.text),
            None => {}
        }
    }

    fn read_prediction(&mut self, prediction: Prediction, now: Millis) {
        let key = ItemKey::Text(prediction.text_id.clone());
        let wanted = self.kind_of(&prediction).is_some() && !self.queue.is_answered(&key);
        // A later prediction of a text already queued (a replay, or one held for a proposal
        // since): the item shows the last, with the text it has; or leaves, needing no review.
        let queued = self.queue.get(&key).and_then(|item| match &item.body {
            Body::Text(text) => Some(text.text.clone()),
            Body::Proposal(_) => None,
        });
        if let Some(text) = queued {
            if wanted {
                self.offer_text(prediction, text, now);
            } else {
                self.queue.withdraw(&key);
            }
            return;
        }
        match self.texts.take(&prediction.text_id) {
            Some(text) if wanted => self.offer_text(prediction, text, now),
            Some(_) => {}
            // The oldest waiting prediction made room: its text never came (a text past the
            // texts topic's retention, or dropped from the desk's memory).
            None if wanted && self.waiting.insert(key, prediction) => {
                self.tally.not_queued += 1;
            }
            None => {}
        }
    }

    /// Why a prediction goes to the queue, if it does.
    fn kind_of(&self, prediction: &Prediction) -> Option<ItemKind> {
        match prediction.status {
            PredictionStatus::NeedsReview | PredictionStatus::NoMatch => Some(ItemKind::Review),
            PredictionStatus::Decided => {
                queue::is_audit(&prediction.text_id, self.settings.audit_share)
                    .then_some(ItemKind::Audit)
            }
        }
    }

    fn offer_text(&mut self, prediction: Prediction, text: String, now: Millis) {
        let Some(kind) = self.kind_of(&prediction) else {
            return;
        };
        let item = Item {
            key: ItemKey::Text(prediction.text_id.clone()),
            kind,
            arrived: now,
            body: Body::Text(Box::new(TextItem { prediction, text })),
        };
        self.offer(item);
    }

    fn offer(&mut self, item: Item<Body>) {
        if self.queue.offer(item) == Offered::Full {
            self.tally.not_queued += 1;
        }
    }

    fn read_proposal(&mut self, event: ProposalEvent, now: Millis) {
        let id = event.proposal.clone();
        let previous = self.proposals.remove(&id);
        let current = proposal::current(previous.into_iter().chain([event]))
            .remove(&id)
            .into_iter()
            .next();
        let Some(current) = current else { return };
        let key = ItemKey::Proposal(id.clone());
        match current.status {
            ProposalStatus::Open => self.offer(Item {
                key,
                kind: ItemKind::Proposal,
                arrived: now,
                body: Body::Proposal(Box::new(current.clone())),
            }),
            ProposalStatus::Accepted | ProposalStatus::Rejected => {
                self.votes.remove(&id);
                self.queue.answered(&key);
            }
            ProposalStatus::Withdrawn => {
                self.votes.remove(&id);
                self.queue.withdraw(&key);
            }
        }
        self.proposals.insert(id, current);
    }

    /// A text placed in `proposal`, read from the labels topic: one of its first examples
    /// should it be accepted. Nothing is kept for a closed proposal, past
    /// [`MAX_VOTED_EXAMPLES`] texts, or for more than `max_items` proposals.
    fn vote(&mut self, proposal: String, text: String) {
        let closed = self
            .proposals
            .get(&proposal)
            .is_some_and(|p| p.status != ProposalStatus::Open);
        let full =
            !self.votes.contains_key(&proposal) && self.votes.len() >= self.settings.max_items;
        if closed || full {
            return;
        }
        let votes = self.votes.entry(proposal).or_default();
        if votes.len() < MAX_VOTED_EXAMPLES && !votes.contains(&text) {
            votes.push(text);
        }
    }

    /// Reviewers `kept` does not keep (their login removed) hold nothing any more.
    pub fn forget_reviewers(&mut self, kept: impl Fn(&Reviewer) -> bool) {
        self.queue.forget_reviewers(kept);
    }

    /// The item `reviewer` should answer now (claimed for them), as the page shows it.
    pub fn next_for(&mut self, reviewer: &Reviewer, now: Millis) -> Option<ItemView> {
        let item = self.queue.next_for(reviewer, now)?.clone();
        Some(ItemView::of(&item, &self.labels, &self.proposals))
    }

    /// `reviewer`'s answer to `key`: the events to publish. The item leaves the queue; once
    /// they are published, [`Self::published`] counts the answer; if publishing fails,
    /// [`Self::restore`] puts the item back.
    pub fn answer(
        &mut self,
        reviewer: &Reviewer,
        key: &ItemKey,
        answer: Answer,
        now: Millis,
    ) -> Result<(Item<Body>, Vec<Publish>), DeskError> {
        // Everything that can refuse the answer runs before the item is taken, so a refused
        // answer leaves it where it was.
        let proposal_events = match key {
            ItemKey::Text(_) => {
                self.check_label(&answer)?;
                None
            }
            ItemKey::Proposal(id) => Some(self.accepting(id, answer.clone())?),
        };
        let item = self.queue.answer(reviewer, key, now)?;
        let publish = match (&item.body, proposal_events) {
            (_, Some(events)) => events,
            (Body::Text(text), None) => {
                let (label, proposal) = match answer {
                    Answer::Label(label) => (Some(label), None),
                    Answer::Proposal(proposal) => (None, Some(proposal)),
                    _ => (None, None),
                };
                vec![Publish::Label {
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
                        audit: item.kind == ItemKind::Audit,
                        reviewer: Some(reviewer.0.clone()),
                        proposal,
                    },
                }]
            }
            (Body::Proposal(_), None) => Vec::new(),
        };
        Ok((item, publish))
    }

    /// An answer to a text: an active label, or none of them.
    fn check_label(&self, answer: &Answer) -> Result<(), DeskError> {
        match answer {
            Answer::Label(label) if self.labels.get(label).is_some_and(|l| l.active) => Ok(()),
            Answer::Label(label) => Err(DeskError::UnknownLabel(label.clone())),
            Answer::NoneOfThese => Ok(()),
            Answer::Proposal(id) if self.is_open(id) => Ok(()),
            Answer::Proposal(id) => Err(DeskError::NotOpen(id.clone())),
            Answer::Accept { .. } | Answer::Reject => {
                Err(DeskError::Mismatch("a text takes a label"))
            }
        }
    }

    /// Whether proposal `id` is open, as the proposals topic last said.
    fn is_open(&self, id: &str) -> bool {
        self.proposals
            .get(id)
            .is_some_and(|p| p.status == ProposalStatus::Open)
    }

    /// The events accepting or rejecting proposal `id` publishes, checked as the service will
    /// check them.
    fn accepting(&self, id: &str, answer: Answer) -> Result<Vec<Publish>, DeskError> {
        let open = self
            .proposals
            .get(id)
            .filter(|p| p.status == ProposalStatus::Open)
            .ok_or(DeskError::Queue(AnswerError::Unknown))?;
        let voted = self.votes.get(id).map(Vec::as_slice).unwrap_or_default();
        if let Answer::Accept { label, .. } = &answer {
            let label = label.trim();
            // An accept interrupted after its round went out is given again with its label.
            match self.rounds.get(&open.accepting_round_id()) {
                Some(sent) if !sent.iter().any(|l| l == label) => {
                    return Err(DeskError::RoundSent(sent.join(", ")))
                }
                Some(_) => {}
                None if self.labels.contains_key(label) => {
                    return Err(DeskError::LabelExists(label.to_string()))
                }
                None => {}
            }
        }
        // Placed texts the service's bounds on examples would refuse are left out.
        let events = proposal_events(open, answer.clone(), voted)?;
        match self.within_bounds(&events) {
            Err(_) if !voted.is_empty() => {
                let events = proposal_events(open, answer, &[])?;
                self.within_bounds(&events)?;
                Ok(events)
            }
            checked => checked.map(|()| events),
        }
    }

    /// Whether the service would take `events`' label events.
    fn within_bounds(&self, events: &[Publish]) -> Result<(), DeskError> {
        for event in events {
            if let Publish::Label { event, .. } = event {
                crate::events::bounds::label_event(event, &self.settings.bounds)
                    .map_err(|rejection| DeskError::Refused(rejection.message.to_string()))?;
            }
        }
        Ok(())
    }

    /// Count an answer whose events the broker acknowledged.
    pub fn published(&mut self, item: &Item<Body>, answer: &Answer) {
        match &item.body {
            Body::Text(text) => {
                // A text placed in a proposal is counted as one no active label fits.
                let label = match answer {
                    Answer::Label(label) => Some(label.as_str()),
                    _ => None,
                };
                self.tally.answered(item.kind, &text.prediction, label);
            }
            Body::Proposal(_) => self.tally.proposals_answered += 1,
        }
    }

    /// An answer whose events could not be published: the item goes back in the queue.
    pub fn restore(&mut self, item: Item<Body>) {
        self.queue.restore(item);
    }

    /// Whether `key`'s answer was read from a topic (given elsewhere, or this desk's own
    /// answer read back).
    pub fn answered_elsewhere(&self, key: &ItemKey) -> bool {
        self.queue.is_confirmed(key)
    }

    /// `reviewer` takes their answer to `item` back before it was published (undo).
    pub fn take_back(&mut self, item: Item<Body>, reviewer: &Reviewer, now: Millis) {
        self.queue.take_back(item, reviewer, now);
    }

    /// `reviewer` passes on `key`.
    pub fn skip(&mut self, reviewer: &Reviewer, key: &ItemKey) {
        self.queue.skip(reviewer, key);
    }

    /// The active labels, for the search box.
    pub fn active_labels(&self) -> Vec<LabelView> {
        self.labels.values().filter(|l| l.active).cloned().collect()
    }

    /// What `/metrics` shows.
    pub fn gauges(&self, now: Millis) -> Gauges {
        Gauges {
            depth: self.queue.depth(),
            oldest_age_ms: self.queue.oldest_age(now),
            waiting_for_text: self.waiting.len(),
            kept_text_bytes: self.texts.bytes(),
        }
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }
}

/// The queue's present state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauges {
    pub depth: usize,
    pub oldest_age_ms: Millis,
    pub waiting_for_text: usize,
    pub kept_text_bytes: usize,
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
