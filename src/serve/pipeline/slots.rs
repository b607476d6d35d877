//! Per-partition reorder slots: texts finish in the order they arrived on their partition,
//! whatever order their LLM answers come back in.
//!
//! Every text taken in gets a [`SlotId`] of its own. Answers name the slot, never the
//! (partition, offset): the same offset can be in flight twice — read before a rebalance, read
//! again after the partition came back — and an answer addressed by offset could fill the wrong
//! copy and leave the other waiting for ever, stalling its partition (the stall found by
//! `scripts/fault-suite.sh` under CPU load). A revoked partition's slots are dropped at once:
//! its new owner reads those texts again, and answers arriving later for dropped slots are
//! ignored.

use std::collections::{BTreeMap, VecDeque};

/// One text in flight, unique for the life of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotId {
    pub partition: i32,
    pub offset: i64,
    sequence: u64,
}

struct Entry<S> {
    id: SlotId,
    ready: bool,
    slot: S,
}

/// Texts in flight, per partition in arrival order. `S` is what a slot holds.
pub struct Slots<S> {
    queues: BTreeMap<i32, VecDeque<Entry<S>>>,
    next_sequence: u64,
    len: usize,
}

impl<S> Default for Slots<S> {
    fn default() -> Self {
        Self {
            queues: BTreeMap::new(),
            next_sequence: 0,
            len: 0,
        }
    }
}

impl<S> Slots<S> {
    /// Take a text in; `ready` when nothing is awaited for it (rejected, or no LLM).
    pub fn push(&mut self, partition: i32, offset: i64, slot: S, ready: bool) -> SlotId {
        let id = SlotId {
            partition,
            offset,
            sequence: self.next_sequence,
        };
        self.next_sequence += 1;
        self.queues
            .entry(partition)
            .or_default()
            .push_back(Entry { id, ready, slot });
        self.len += 1;
        id
    }

    /// The slot `id`, if it is still in flight (not finished, not revoked).
    pub fn get_mut(&mut self, id: SlotId) -> Option<&mut S> {
        self.entry_mut(id).map(|e| &mut e.slot)
    }

    /// Mark `id` ready to finish; false when it is no longer in flight.
    pub fn set_ready(&mut self, id: SlotId) -> bool {
        match self.entry_mut(id) {
            Some(entry) => {
                entry.ready = true;
                true
            }
            None => false,
        }
    }

    /// The head of `partition`'s queue, if it is ready: the next text to finish.
    pub fn pop_ready(&mut self, partition: i32) -> Option<(SlotId, S)> {
        let queue = self.queues.get_mut(&partition)?;
        if !queue.front()?.ready {
            return None;
        }
        let entry = queue.pop_front()?;
        self.len -= 1;
        Some((entry.id, entry.slot))
    }

    /// Drop every slot of `partition` (revoked); returns them.
    pub fn revoke(&mut self, partition: i32) -> Vec<(SlotId, S)> {
        let dropped: Vec<_> = self
            .queues
            .remove(&partition)
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.id, e.slot))
            .collect();
        self.len -= dropped.len();
        dropped
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// (id, ready) of every slot, per partition in order (for diagnostics).
    pub fn states(&self) -> impl Iterator<Item = (SlotId, bool)> + '_ {
        self.queues
            .values()
            .flat_map(|q| q.iter().map(|e| (e.id, e.ready)))
    }

    fn entry_mut(&mut self, id: SlotId) -> Option<&mut Entry<S>> {
        self.queues
            .get_mut(&id.partition)?
            .iter_mut()
            .find(|e| e.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_finishes_in_arrival_order() {
        let mut slots = Slots::default();
        let a = slots.push(0, 10, "a", false);
        let b = slots.push(0, 11, "b", false);
        let c = slots.push(1, 3, "c", false);
        assert!(slots.set_ready(b));
        assert!(slots.pop_ready(0).is_none(), "10 is not ready");
        assert!(slots.set_ready(c));
        assert_eq!(slots.pop_ready(1).map(|(_, s)| s), Some("c"));
        assert!(slots.set_ready(a));
        assert_eq!(slots.pop_ready(0).map(|(_, s)| s), Some("a"));
        assert_eq!(slots.pop_ready(0).map(|(_, s)| s), Some("b"));
        assert!(slots.is_empty());
    }

    /// The fault suite's stall: an offset read before a revoke and again after the partition
    /// came back. The first copy's answer must not be taken for the second's.
    #[test]
    fn an_answer_for_a_revoked_copy_does_not_fill_the_new_one() {
        let mut slots = Slots::default();
        let before = slots.push(0, 5, "before", false);
        assert_eq!(slots.revoke(0).len(), 1);
        let after = slots.push(0, 5, "after", false);
        assert!(!slots.set_ready(before), "the revoked copy is gone");
        assert!(slots.pop_ready(0).is_none());
        assert!(slots.set_ready(after));
        assert_eq!(slots.pop_ready(0).map(|(_, s)| s), Some("after"));
    }

    #[test]
    fn the_same_offset_twice_is_two_slots() {
        let mut slots = Slots::default();
        let first = slots.push(0, 5, 1, false);
        let second = slots.push(0, 5, 2, false);
        assert_ne!(first, second);
        assert!(slots.set_ready(second));
        assert!(slots.pop_ready(0).is_none(), "the first copy still waits");
        assert!(slots.set_ready(first));
        assert_eq!(slots.pop_ready(0).map(|(_, s)| s), Some(1));
        assert_eq!(slots.pop_ready(0).map(|(_, s)| s), Some(2));
    }

    #[test]
    fn revoking_counts_and_leaves_other_partitions() {
        let mut slots = Slots::default();
        slots.push(0, 1, (), true);
        slots.push(0, 2, (), false);
        slots.push(1, 1, (), false);
        assert_eq!(slots.len(), 3);
        assert_eq!(slots.revoke(0).len(), 2);
        assert_eq!(slots.len(), 1);
        assert!(slots.revoke(7).is_empty());
        assert_eq!(slots.states().count(), 1);
    }
}
