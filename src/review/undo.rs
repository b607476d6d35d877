//! The undo window (docs/guide/review.md, "Undo"): an answer is held for [`UNDO_WINDOW`]
//! before it is published, and its reviewer may take it back meanwhile — nothing reaches a
//! topic then. Once published it stands: a text's correction teaches the service at once, and
//! a later answer can only add to it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::answer::{Answer, Publish};
use super::desk::Body;
use super::queue::{Item, ItemKey, Reviewer};

/// How long an answer waits before it is published.
pub const UNDO_WINDOW: Duration = Duration::from_secs(5);

/// An answer waiting out its window.
pub struct Held {
    /// Which hold this is: an item answered, taken back and answered again is held twice, and
    /// the first hold's timer must not publish the second answer.
    pub hold: u64,
    pub reviewer: Reviewer,
    pub item: Item<Body>,
    pub answer: Answer,
    pub publish: Vec<Publish>,
}

/// The answers held, by item. Whoever takes one out first — its reviewer undoing it, or the
/// timer publishing it — has it; the other finds nothing.
#[derive(Default)]
pub struct Pending {
    held: Mutex<HashMap<ItemKey, Held>>,
    holds: AtomicU64,
}

/// Who may take a held answer out.
pub enum Taker<'a> {
    /// Its reviewer, undoing it.
    Reviewer(&'a Reviewer),
    /// The timer of that hold, publishing it.
    Timer(u64),
}

impl Pending {
    /// A number for a new hold.
    pub fn next_hold(&self) -> u64 {
        self.holds.fetch_add(1, Ordering::Relaxed)
    }

    pub fn hold(&self, key: ItemKey, held: Held) {
        self.map().insert(key, held);
    }

    /// The answer to `key`, if it is still held and `taker` may take it.
    pub fn take(&self, key: &ItemKey, taker: Taker<'_>) -> Option<Held> {
        let mut map = self.map();
        let theirs = map.get(key).is_some_and(|held| match taker {
            Taker::Reviewer(reviewer) => held.reviewer == *reviewer,
            Taker::Timer(hold) => held.hold == hold,
        });
        if theirs {
            map.remove(key)
        } else {
            None
        }
    }

    /// Every answer still held (the desk is stopping: they are published now).
    pub fn take_all(&self) -> Vec<Held> {
        self.map().drain().map(|(_, held)| held).collect()
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<ItemKey, Held>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
