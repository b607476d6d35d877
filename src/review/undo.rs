//! The undo window (docs/guide/review.md, "Undo"): an answer is held for [`UNDO_WINDOW`]
//! before it is published, and its reviewer may take it back meanwhile — nothing reaches a
//! topic then. Once published it stands: a text's correction teaches the service at once, and
//! a later answer can only add to it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::desk::{Answer, Body, Publish};
use super::queue::{Item, ItemKey, Reviewer};

/// How long an answer waits before it is published.
pub const UNDO_WINDOW: Duration = Duration::from_secs(5);

/// An answer waiting out its window.
pub struct Held {
    pub reviewer: Reviewer,
    pub item: Item<Body>,
    pub answer: Answer,
    pub publish: Vec<Publish>,
}

/// The answers held, by item. Whoever takes one out first — its reviewer undoing it, or the
/// timer publishing it — has it; the other finds nothing.
#[derive(Default)]
pub struct Pending(Mutex<HashMap<ItemKey, Held>>);

impl Pending {
    pub fn hold(&self, key: ItemKey, held: Held) {
        self.map().insert(key, held);
    }

    /// The answer to `key`, if it is still held — and, when `by` is given, only if that
    /// reviewer gave it.
    pub fn take(&self, key: &ItemKey, by: Option<&Reviewer>) -> Option<Held> {
        let mut map = self.map();
        let theirs = map
            .get(key)
            .is_some_and(|held| by.is_none_or(|reviewer| held.reviewer == *reviewer));
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
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
