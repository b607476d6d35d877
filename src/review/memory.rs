//! The desk's bounded memories: texts awaiting their prediction (by bytes) and predictions
//! awaiting their text (by count), the oldest dropped first.

use std::collections::{HashMap, VecDeque};

use super::queue::ItemKey;

/// What a kept text costs beyond its bytes and its id's (two `String`s and a map slot).
const ENTRY_OVERHEAD: usize = 96;

/// Texts kept until their prediction comes, oldest dropped first past a byte bound.
#[derive(Debug)]
pub(super) struct TextMemory {
    texts: HashMap<String, String>,
    order: VecDeque<String>,
    bytes: usize,
    limit: usize,
}

impl TextMemory {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            texts: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            limit,
        }
    }

    /// The bytes an entry costs: its text, its id twice (map and order) and the containers'.
    fn cost(id: &str, text: &str) -> usize {
        text.len() + 2 * id.len() + ENTRY_OVERHEAD
    }

    pub(super) fn keep(&mut self, id: String, text: String) {
        if let Some(old) = self.texts.remove(&id) {
            self.bytes -= Self::cost(&id, &old);
        } else {
            self.order.push_back(id.clone());
        }
        self.bytes += Self::cost(&id, &text);
        self.texts.insert(id, text);
        while self.bytes > self.limit {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(text) = self.texts.remove(&oldest) {
                self.bytes -= Self::cost(&oldest, &text);
            }
        }
    }

    /// What the kept texts cost, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn take(&mut self, id: &str) -> Option<String> {
        let text = self.texts.remove(id)?;
        self.bytes -= Self::cost(id, &text);
        // Its place in `order` is left: dropped when reached (keep() skips missing ids).
        if self.order.len() > 2 * self.texts.len() + 1024 {
            let texts = &self.texts;
            self.order.retain(|id| texts.contains_key(id));
        }
        Some(text)
    }
}

/// A map of at most `limit` entries; past it, the oldest makes room.
#[derive(Debug)]
pub(super) struct BoundedMap<T> {
    entries: HashMap<ItemKey, T>,
    order: VecDeque<ItemKey>,
    limit: usize,
}

impl<T> BoundedMap<T> {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
            limit: limit.max(1),
        }
    }

    /// True when the oldest entry was dropped to make room.
    pub(super) fn insert(&mut self, key: ItemKey, value: T) -> bool {
        if self.entries.insert(key.clone(), value).is_some() {
            return false;
        }
        self.order.push_back(key);
        let mut dropped = false;
        while self.entries.len() > self.limit {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            dropped |= self.entries.remove(&oldest).is_some();
        }
        dropped
    }

    pub(super) fn remove(&mut self, key: &ItemKey) -> Option<T> {
        let value = self.entries.remove(key)?;
        // Its place in `order` is left: skipped when reached; compacted when mostly stale.
        if self.order.len() > 2 * self.entries.len() + 1024 {
            let entries = &self.entries;
            self.order.retain(|key| entries.contains_key(key));
        }
        Some(value)
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}
