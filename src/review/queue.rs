//! The review desk's queue, pure and synchronous: what the topics offer (predictions that need
//! review, a share of decided ones as audits, open proposals), what is already answered, and
//! which reviewer holds which item for how long. It knows nothing of Kafka or HTTP; the desk
//! feeds it what it reads and asks it what to show.
//!
//! Every item is keyed by what it is about ([`ItemKey`]): a text's id, or a proposal's id. An
//! answer is known from the topics (a `correct` event for the text, a decision for the
//! proposal), so a desk that restarts and reads them again re-offers nothing answered.

use std::collections::{BTreeMap, HashMap, HashSet};

use sha2::{Digest, Sha256};

/// What an item is about: one text, or one proposal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemKey {
    Text(String),
    Proposal(String),
}

/// Why an item is in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// Its prediction's status is `needs_review` (or `no_match`: no label fits, as far as
    /// gorag can tell — a reviewer may know one).
    Review,
    /// A decided prediction picked at random to check gorag: its answer is published with
    /// `audit: true`, and the confidence refits on it.
    Audit,
    /// An emerging class the stream proposes: accept it (a round) or reject it.
    Proposal,
}

/// A reviewer, as the desk's login names them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reviewer(pub String);

/// Milliseconds since the Unix epoch.
pub type Millis = u64;

/// One queued item.
#[derive(Debug, Clone, PartialEq)]
pub struct Item<T> {
    pub key: ItemKey,
    pub kind: ItemKind,
    /// When the desk read it.
    pub arrived: Millis,
    /// What it shows (a prediction, a proposal): the desk's own type.
    pub body: T,
}

/// Who holds an item, until when.
#[derive(Debug, Clone, PartialEq)]
struct Claim {
    reviewer: Reviewer,
    until: Millis,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("this item is answered already")]
    Answered,
    #[error("this item is not in the queue")]
    Unknown,
    #[error("another reviewer holds this item")]
    HeldByAnother,
    #[error("this item was not offered to you: ask for your next item")]
    NotOffered,
}

/// Why an offered item was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    Queued,
    /// Queued already: its body replaced (a proposal's later revision).
    Updated,
    AlreadyAnswered,
    /// The queue holds its maximum: the item waits in its topic (counted, never silent).
    Full,
}

/// Where an item sits in the queue: its record's time, then the order it was read in.
type Place = (Millis, u64);

/// The queue.
#[derive(Debug)]
pub struct Queue<T> {
    /// Items oldest first: by the time their record was written (whichever topic it came
    /// from, in whatever order the desk read them), then by the order read.
    items: BTreeMap<Place, Item<T>>,
    /// Where each queued key sits in `items`.
    position: HashMap<ItemKey, Place>,
    next_sequence: u64,
    /// Answered: read back from a topic, or taken by [`Self::answer`] and being published.
    answered: HashSet<ItemKey>,
    /// Of those, the ones read back from a topic: no failed publish gives them back.
    confirmed: HashSet<ItemKey>,
    claims: HashMap<ItemKey, Claim>,
    skipped: HashMap<Reviewer, HashSet<ItemKey>>,
    capacity: usize,
    claim_ms: Millis,
}

impl<T> Queue<T> {
    /// A queue of at most `capacity` items, each claim lasting `claim_ms`.
    pub fn new(capacity: usize, claim_ms: Millis) -> Self {
        Self {
            items: BTreeMap::new(),
            position: HashMap::new(),
            next_sequence: 0,
            answered: HashSet::new(),
            confirmed: HashSet::new(),
            claims: HashMap::new(),
            skipped: HashMap::new(),
            capacity: capacity.max(1),
            claim_ms,
        }
    }

    /// An item read from a topic.
    pub fn offer(&mut self, item: Item<T>) -> Offered {
        if self.answered.contains(&item.key) {
            return Offered::AlreadyAnswered;
        }
        if let Some(place) = self.position.get(&item.key) {
            if let Some(queued) = self.items.get_mut(place) {
                queued.body = item.body;
                return Offered::Updated;
            }
        }
        if self.items.len() >= self.capacity {
            return Offered::Full;
        }
        let place = (item.arrived, self.next_sequence);
        self.next_sequence += 1;
        self.position.insert(item.key.clone(), place);
        self.items.insert(place, item);
        Offered::Queued
    }

    /// An answer read from a topic (by this desk or any other way): the item leaves the
    /// queue, and is never queued again.
    pub fn answered(&mut self, key: &ItemKey) {
        self.answered.insert(key.clone());
        self.confirmed.insert(key.clone());
        self.remove(key);
    }

    /// The item a proposal or text no longer needs (a proposal withdrawn): it leaves the
    /// queue but may come back.
    pub fn withdraw(&mut self, key: &ItemKey) {
        self.remove(key);
    }

    fn remove(&mut self, key: &ItemKey) {
        if let Some(place) = self.position.remove(key) {
            self.items.remove(&place);
        }
        self.claims.remove(key);
        for skipped in self.skipped.values_mut() {
            skipped.remove(key);
        }
    }

    /// The oldest item `reviewer` may take now, claimed for them: one they hold already, else
    /// one nobody holds (or whose claim ran out) and they did not skip.
    pub fn next_for(&mut self, reviewer: &Reviewer, now: Millis) -> Option<&Item<T>> {
        let skipped = self.skipped.get(reviewer);
        let free = |key: &ItemKey| match self.claims.get(key) {
            Some(claim) => claim.reviewer == *reviewer || claim.until <= now,
            None => true,
        };
        let held = self
            .items
            .values()
            .find(|item| {
                self.claims
                    .get(&item.key)
                    .is_some_and(|c| c.reviewer == *reviewer && c.until > now)
            })
            .or_else(|| {
                self.items
                    .values()
                    .find(|item| free(&item.key) && !skipped.is_some_and(|s| s.contains(&item.key)))
            })?;
        let key = held.key.clone();
        self.claims.insert(
            key.clone(),
            Claim {
                reviewer: reviewer.clone(),
                until: now.saturating_add(self.claim_ms),
            },
        );
        self.position
            .get(&key)
            .and_then(|place| self.items.get(place))
    }

    /// `reviewer` answers `key`: the item leaves the queue and is returned, for the desk to
    /// publish the answer. Refused when another reviewer holds it (their claim still runs).
    pub fn answer(
        &mut self,
        reviewer: &Reviewer,
        key: &ItemKey,
        now: Millis,
    ) -> Result<Item<T>, AnswerError> {
        if self.answered.contains(key) {
            return Err(AnswerError::Answered);
        }
        let place = *self.position.get(key).ok_or(AnswerError::Unknown)?;
        match self.claims.get(key) {
            // Offered to this reviewer (a claim that ran out still counts while nobody else
            // has taken the item).
            Some(claim) if claim.reviewer == *reviewer => {}
            Some(claim) if claim.until > now => return Err(AnswerError::HeldByAnother),
            _ => return Err(AnswerError::NotOffered),
        }
        let item = self.items.remove(&place).ok_or(AnswerError::Unknown)?;
        self.position.remove(key);
        self.claims.remove(key);
        self.answered.insert(key.clone());
        for skipped in self.skipped.values_mut() {
            skipped.remove(key);
        }
        Ok(item)
    }

    /// An item taken by [`Self::answer`] whose answer could not be published: it is no longer
    /// answered and is queued again (last: a failed publish is rare, and the broker's trouble
    /// may last) — unless its answer was read back from the topic meanwhile (a send that timed
    /// out yet reached the broker).
    pub fn restore(&mut self, item: Item<T>) {
        if self.confirmed.contains(&item.key) {
            return;
        }
        self.answered.remove(&item.key);
        if self.position.contains_key(&item.key) {
            return;
        }
        // Last, whatever its age.
        let place = (Millis::MAX, self.next_sequence);
        self.next_sequence += 1;
        self.position.insert(item.key.clone(), place);
        self.items.insert(place, item);
    }

    /// `reviewer` takes back their answer to `item` before it was published (undo): the item
    /// is queued again where its age puts it, held by them, so it is their next item. Nothing
    /// happens when its answer was read from a topic meanwhile.
    pub fn take_back(&mut self, item: Item<T>, reviewer: &Reviewer, now: Millis) {
        if self.confirmed.contains(&item.key) || self.position.contains_key(&item.key) {
            return;
        }
        self.answered.remove(&item.key);
        // The item they were shown after it goes back to the others: this one is next.
        self.claims.retain(|_, claim| claim.reviewer != *reviewer);
        let place = (item.arrived, self.next_sequence);
        self.next_sequence += 1;
        self.claims.insert(
            item.key.clone(),
            Claim {
                reviewer: reviewer.clone(),
                until: now.saturating_add(self.claim_ms),
            },
        );
        self.position.insert(item.key.clone(), place);
        self.items.insert(place, item);
    }

    /// `reviewer` passes on `key`: it goes back to the others, and is not offered to them again.
    pub fn skip(&mut self, reviewer: &Reviewer, key: &ItemKey) {
        if self
            .claims
            .get(key)
            .is_some_and(|claim| claim.reviewer == *reviewer)
        {
            self.claims.remove(key);
        }
        if self.position.contains_key(key) {
            self.skipped
                .entry(reviewer.clone())
                .or_default()
                .insert(key.clone());
        }
    }

    /// The claims and skips of reviewers `kept` does not keep (logins removed) end: their
    /// items wait for the others at once.
    pub fn forget_reviewers(&mut self, kept: impl Fn(&Reviewer) -> bool) {
        self.claims.retain(|_, claim| kept(&claim.reviewer));
        self.skipped.retain(|reviewer, _| kept(reviewer));
    }

    /// Items waiting (held ones included).
    pub fn depth(&self) -> usize {
        self.items.len()
    }

    /// How long the oldest item has waited, in milliseconds (0 when none waits).
    pub fn oldest_age(&self, now: Millis) -> Millis {
        self.items
            .values()
            .next()
            .map_or(0, |item| now.saturating_sub(item.arrived))
    }

    /// Whether `key`'s answer was read from a topic.
    pub fn is_confirmed(&self, key: &ItemKey) -> bool {
        self.confirmed.contains(key)
    }

    /// The item queued under `key`, if one is.
    pub fn get(&self, key: &ItemKey) -> Option<&Item<T>> {
        self.items.get(self.position.get(key)?)
    }

    /// Whether `key` was answered.
    pub fn is_answered(&self, key: &ItemKey) -> bool {
        self.answered.contains(key)
    }
}

/// Whether the decided prediction of `text_id` is one of the audited: a share `share` (0 to 1)
/// of texts, picked by a hash of the id — spread evenly over the stream, the same on every
/// desk and after every restart.
pub fn is_audit(text_id: &str, share: f64) -> bool {
    if share <= 0.0 {
        return false;
    }
    let digest = Sha256::digest(text_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let point = u64::from_be_bytes(first) as f64 / u64::MAX as f64;
    point < share
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(id: &str, at: Millis) -> Item<&'static str> {
        Item {
            key: ItemKey::Text(id.into()),
            kind: ItemKind::Review,
            arrived: at,
            body: "prediction",
        }
    }

    fn who(name: &str) -> Reviewer {
        Reviewer(name.into())
    }

    #[test]
    fn two_reviewers_never_get_the_same_item_until_a_claim_runs_out() {
        let mut queue = Queue::new(10, 1_000);
        for (id, at) in [("t1", 1), ("t2", 2), ("t3", 3)] {
            assert_eq!(queue.offer(text(id, at)), Offered::Queued);
        }
        let ann = queue.next_for(&who("ann"), 10).map(|i| i.key.clone());
        let bob = queue.next_for(&who("bob"), 10).map(|i| i.key.clone());
        assert_eq!(ann, Some(ItemKey::Text("t1".into())));
        assert_eq!(bob, Some(ItemKey::Text("t2".into())));
        // Asking again gives each their own item back.
        let again = queue.next_for(&who("ann"), 20).map(|i| i.key.clone());
        assert_eq!(again, ann);
        // Bob cannot answer Ann's item while her claim runs; after it, anyone may.
        let t1 = ItemKey::Text("t1".into());
        assert_eq!(
            queue.answer(&who("bob"), &t1, 500).err(),
            Some(AnswerError::HeldByAnother)
        );
        let carl = queue.next_for(&who("carl"), 2_000).map(|i| i.key.clone());
        assert_eq!(carl, Some(t1.clone()), "ann's claim ran out");
        assert!(queue.answer(&who("carl"), &t1, 2_001).is_ok());
        assert_eq!(
            queue.answer(&who("ann"), &t1, 2_002).err(),
            Some(AnswerError::Answered)
        );
        assert_eq!(queue.depth(), 2);
    }

    #[test]
    fn an_answered_item_is_never_queued_again_and_a_skipped_one_goes_to_others() {
        let mut queue = Queue::new(10, 1_000);
        let t1 = ItemKey::Text("t1".into());
        // Read back at a restart: the answer first, then the prediction it answered.
        queue.answered(&t1);
        assert_eq!(queue.offer(text("t1", 1)), Offered::AlreadyAnswered);
        assert_eq!(queue.offer(text("t2", 2)), Offered::Queued);
        let t2 = ItemKey::Text("t2".into());
        assert_eq!(
            queue.next_for(&who("ann"), 5).map(|i| i.key.clone()),
            Some(t2.clone())
        );
        queue.skip(&who("ann"), &t2);
        assert!(
            queue.next_for(&who("ann"), 6).is_none(),
            "not offered to ann again"
        );
        assert_eq!(
            queue.next_for(&who("bob"), 6).map(|i| i.key.clone()),
            Some(t2)
        );
    }

    #[test]
    fn only_an_offered_item_is_answered_and_a_removed_reviewer_s_claims_end_at_once() {
        let mut queue = Queue::new(10, 1_000);
        for (id, at) in [("t1", 1), ("t2", 2)] {
            queue.offer(text(id, at));
        }
        let (t1, t2) = (ItemKey::Text("t1".into()), ItemKey::Text("t2".into()));
        assert_eq!(
            queue.answer(&who("ann"), &t2, 5).err(),
            Some(AnswerError::NotOffered),
            "never shown to ann"
        );
        assert_eq!(
            queue.next_for(&who("ann"), 5).map(|i| i.key.clone()),
            Some(t1.clone())
        );
        assert_eq!(
            queue.next_for(&who("bob"), 5).map(|i| i.key.clone()),
            Some(t2.clone())
        );
        // Ann's claim ran out and nobody took it since: her answer still counts.
        assert!(queue.answer(&who("ann"), &t1, 5_000).is_ok());
        // Bob's login is removed: his item goes to carl at once, claim or not.
        queue.forget_reviewers(|r| r.0 != "bob");
        assert_eq!(
            queue.next_for(&who("carl"), 6).map(|i| i.key.clone()),
            Some(t2)
        );
    }

    #[test]
    fn the_oldest_record_comes_first_whatever_order_the_topics_were_read_in() {
        let mut queue = Queue::new(10, 1_000);
        // Read at a start: the proposals topic first (a proposal of 500), then predictions of
        // 100 and 900.
        let proposal = Item {
            key: ItemKey::Proposal("p-1".into()),
            kind: ItemKind::Proposal,
            arrived: 500,
            body: "proposal",
        };
        queue.offer(proposal);
        queue.offer(text("t-late", 900));
        queue.offer(text("t-early", 100));
        let order: Vec<ItemKey> = ["a", "b", "c"]
            .iter()
            .filter_map(|r| queue.next_for(&who(r), 1_000).map(|i| i.key.clone()))
            .collect();
        assert_eq!(
            order,
            [
                ItemKey::Text("t-early".into()),
                ItemKey::Proposal("p-1".into()),
                ItemKey::Text("t-late".into())
            ]
        );
    }

    #[test]
    fn an_answer_taken_back_makes_the_item_its_reviewer_s_next_again() {
        let mut queue = Queue::new(10, 1_000);
        for (id, at) in [("t1", 1), ("t2", 2)] {
            queue.offer(text(id, at));
        }
        let t1 = ItemKey::Text("t1".into());
        queue.next_for(&who("ann"), 5);
        let taken = queue.answer(&who("ann"), &t1, 6).unwrap();
        assert!(queue.is_answered(&t1));
        // Shown t2 next, she takes t1 back: t1 is hers, t2 anyone's.
        assert_eq!(
            queue.next_for(&who("ann"), 6).map(|i| i.key.clone()),
            Some(ItemKey::Text("t2".into()))
        );
        queue.take_back(taken, &who("ann"), 7);
        assert!(!queue.is_answered(&t1));
        assert_eq!(
            queue.next_for(&who("bob"), 8).map(|i| i.key.clone()),
            Some(ItemKey::Text("t2".into()))
        );
        assert_eq!(
            queue.next_for(&who("ann"), 8).map(|i| i.key.clone()),
            Some(t1.clone())
        );
        // Read back from the topic first (another desk answered it): not queued again.
        let taken = queue.answer(&who("ann"), &t1, 9).unwrap();
        queue.answered(&t1);
        queue.take_back(taken, &who("ann"), 10);
        assert_eq!(queue.depth(), 1);
    }

    #[test]
    fn a_full_queue_says_so_and_the_oldest_age_is_the_first_item_s() {
        let mut queue = Queue::new(2, 1_000);
        assert_eq!(queue.offer(text("t1", 100)), Offered::Queued);
        assert_eq!(queue.offer(text("t2", 200)), Offered::Queued);
        assert_eq!(queue.offer(text("t3", 300)), Offered::Full);
        assert_eq!(queue.offer(text("t1", 400)), Offered::Updated);
        assert_eq!(queue.oldest_age(1_100), 1_000);
        queue.answered(&ItemKey::Text("t1".into()));
        assert_eq!(queue.oldest_age(1_100), 900);
        assert_eq!(queue.depth(), 1);
    }

    #[test]
    fn a_failed_publish_gives_the_item_back_unless_its_answer_was_read_meanwhile() {
        let mut queue = Queue::new(10, 1_000);
        for id in ["t1", "t2"] {
            queue.offer(text(id, 1));
        }
        let (t1, t2) = (ItemKey::Text("t1".into()), ItemKey::Text("t2".into()));
        queue.next_for(&who("ann"), 4);
        let taken = queue.answer(&who("ann"), &t1, 5).unwrap();
        queue.restore(taken);
        assert!(!queue.is_answered(&t1));
        assert_eq!(queue.depth(), 2);
        queue.next_for(&who("ann"), 5);
        let taken = queue.answer(&who("ann"), &t2, 6).unwrap();
        // The send timed out, yet the broker had it: the feed reads it back first.
        queue.answered(&t2);
        queue.restore(taken);
        assert!(queue.is_answered(&t2));
        assert_eq!(queue.depth(), 1);
    }

    #[test]
    fn audits_are_a_share_of_the_texts_the_same_every_time() {
        let picked = (0..10_000)
            .filter(|i| is_audit(&format!("t-{i}"), 0.02))
            .count();
        assert!((150..=250).contains(&picked), "{picked}");
        assert!(!is_audit("t-1", 0.0));
        assert!(is_audit("t-1", 1.0));
        assert_eq!(is_audit("t-42", 0.5), is_audit("t-42", 0.5));
    }
}
