//! The desk's state, pure and synchronous: the four topics' events go in ([`Input`]), what a
//! reviewer sees comes out ([`ItemView`]), and an answer turns into the events to publish
//! ([`Publish`]). The async shell (`feed`, `web`) reads the topics, serves the page and sends
//! what this returns.

use super::answer::{correction, Answer, DeskError, Publish};
use super::catalogue::Catalogue;
pub use super::item::{Body, LabelView, TextItem};
use super::memory::{BoundedMap, TextMemory};
use super::proposals::Proposals;
use super::queue::{self, Item, ItemKey, ItemKind, Millis, Offered, Queue, Reviewer};
use super::tally::Tally;
pub use super::view::{CandidateView, ItemView, SHOWN_CANDIDATES};
use crate::events::proposal::{ProposalEvent, ProposalStatus};
use crate::events::{LabelEvent, Prediction, PredictionStatus, TextEvent};

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

impl DeskSettings {
    /// Why a prediction goes to the queue, if it does: it needs review, or it is among the
    /// share of decided ones audited.
    fn kind_of(&self, prediction: &Prediction) -> Option<ItemKind> {
        match prediction.status {
            PredictionStatus::NeedsReview | PredictionStatus::NoMatch => Some(ItemKind::Review),
            PredictionStatus::Decided => {
                queue::is_audit(&prediction.text_id, self.audit_share).then_some(ItemKind::Audit)
            }
        }
    }
}

/// The desk.
#[derive(Debug)]
pub struct Desk {
    settings: DeskSettings,
    queue: Queue<Body>,
    catalogue: Catalogue,
    /// Texts whose prediction has not come yet, oldest first, bounded in bytes.
    texts: TextMemory,
    /// Predictions whose text has not come yet (read in the other order), bounded in count.
    waiting: BoundedMap<Prediction>,
    proposals: Proposals,
    tally: Tally,
}

impl Desk {
    pub fn new(settings: DeskSettings) -> Self {
        Self {
            queue: Queue::new(settings.max_items, settings.claim_ms),
            texts: TextMemory::new(settings.max_text_bytes),
            waiting: BoundedMap::new(settings.max_items),
            proposals: Proposals::new(settings.max_items),
            settings,
            catalogue: Catalogue::default(),
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
            LabelEvent::Round { round, labels, .. } => self.catalogue.announce(round, labels),
            LabelEvent::RetireLabel { label, .. } => self.catalogue.retire(&label),
            LabelEvent::Correct {
                text_id,
                proposal,
                text,
                ..
            } => {
                if let Some(proposal) = proposal {
                    self.proposals.vote(proposal, text);
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
        let wanted = self.settings.kind_of(&prediction).is_some() && !self.queue.is_answered(&key);
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

    fn offer_text(&mut self, prediction: Prediction, text: String, now: Millis) {
        let Some(kind) = self.settings.kind_of(&prediction) else {
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
        let Some(current) = self.proposals.read(event) else {
            return;
        };
        let key = ItemKey::Proposal(current.proposal.clone());
        match current.status {
            ProposalStatus::Open => self.offer(Item {
                key,
                kind: ItemKind::Proposal,
                arrived: now,
                body: Body::Proposal(Box::new(current)),
            }),
            ProposalStatus::Accepted | ProposalStatus::Rejected => self.queue.answered(&key),
            ProposalStatus::Withdrawn => self.queue.withdraw(&key),
        }
    }

    /// Reviewers `kept` does not keep (their login removed) hold nothing any more.
    pub fn forget_reviewers(&mut self, kept: impl Fn(&Reviewer) -> bool) {
        self.queue.forget_reviewers(kept);
    }

    /// The item `reviewer` should answer now (claimed for them), as the page shows it.
    pub fn next_for(&mut self, reviewer: &Reviewer, now: Millis) -> Option<ItemView> {
        let item = self.queue.next_for(reviewer, now)?;
        Some(ItemView::of(item, &self.catalogue, &self.proposals))
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
            ItemKey::Proposal(id) => Some(self.proposals.decide(
                id,
                answer.clone(),
                &self.catalogue,
                &self.settings.bounds,
            )?),
        };
        let item = self.queue.answer(reviewer, key, now)?;
        let publish = match (&item.body, proposal_events) {
            (_, Some(events)) => events,
            (Body::Text(text), None) => vec![correction(text, item.kind, answer, reviewer)],
            (Body::Proposal(_), None) => Vec::new(),
        };
        Ok((item, publish))
    }

    /// An answer to a text: an active label, or none of them.
    fn check_label(&self, answer: &Answer) -> Result<(), DeskError> {
        match answer {
            Answer::Label(label) if self.catalogue.is_active(label) => Ok(()),
            Answer::Label(label) => Err(DeskError::UnknownLabel(label.clone())),
            Answer::NoneOfThese => Ok(()),
            Answer::Proposal(id) if self.proposals.is_open(id) => Ok(()),
            Answer::Proposal(id) => Err(DeskError::NotOpen(id.clone())),
            Answer::Accept { .. } | Answer::Reject => {
                Err(DeskError::Mismatch("a text takes a label"))
            }
        }
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
        self.catalogue.active()
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
