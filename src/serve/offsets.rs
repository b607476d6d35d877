//! In-order acknowledgement per partition (a reorder buffer of offsets).
//!
//! Texts finish out of order when several are in flight; the offset committed for a partition
//! is always one past the longest prefix of *done* offsets, so a commit never skips a text
//! whose outputs the broker has not acknowledged.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::position::Position;

#[derive(Debug, Default)]
struct PartitionAcks {
    /// offset → done?
    pending: BTreeMap<i64, bool>,
    /// One past the last offset of the done prefix.
    watermark: Option<i64>,
    committed: Option<i64>,
}

#[derive(Debug, Default)]
pub struct OffsetTracker {
    partitions: HashMap<i32, PartitionAcks>,
    /// Partitions this consumer owns now.
    assigned: HashSet<i32>,
}

impl OffsetTracker {
    /// A record was taken in.
    pub fn begin(&mut self, partition: i32, offset: i64) {
        self.partitions
            .entry(partition)
            .or_default()
            .pending
            .insert(offset, false);
    }

    /// The record's outputs are acknowledged. Unknown partitions (revoked meanwhile) are
    /// ignored: their new owner reads those records again.
    pub fn done(&mut self, partition: i32, offset: i64) {
        let Some(acks) = self.partitions.get_mut(&partition) else {
            return;
        };
        if let Some(done) = acks.pending.get_mut(&offset) {
            *done = true;
        }
        while let Some(entry) = acks.pending.first_entry() {
            if !*entry.get() {
                break;
            }
            let (offset, _) = entry.remove_entry();
            acks.watermark = Some(offset + 1);
        }
    }

    /// Records taken in and not yet acknowledged, over all partitions.
    pub fn in_flight(&self) -> usize {
        self.partitions
            .values()
            .map(|a| a.pending.values().filter(|done| !**done).count())
            .sum()
    }

    /// (partition, next offset) whose watermark moved since the last commit.
    pub fn to_commit(&self) -> Vec<Position> {
        let mut list: Vec<Position> = self
            .partitions
            .iter()
            .filter_map(|(&p, a)| match (a.watermark, a.committed) {
                (Some(w), Some(c)) if w <= c => None,
                (Some(w), _) => Some(Position::new(p, w)),
                (None, _) => None,
            })
            .collect();
        list.sort_unstable();
        list
    }

    /// (partition, next offset) of every partition with a done prefix.
    pub fn watermarks(&self) -> Vec<Position> {
        let mut list: Vec<Position> = self
            .partitions
            .iter()
            .filter_map(|(&p, a)| a.watermark.map(|w| Position::new(p, w)))
            .collect();
        list.sort_unstable();
        list
    }

    pub fn committed(&mut self, partition: i32, offset: i64) {
        if let Some(acks) = self.partitions.get_mut(&partition) {
            acks.committed = Some(offset);
        }
    }

    /// Forget a revoked partition.
    pub fn forget(&mut self, partition: i32) {
        self.partitions.remove(&partition);
        self.assigned.remove(&partition);
    }

    pub fn assign(&mut self, partition: i32) {
        self.assigned.insert(partition);
    }

    /// Partitions this consumer owns now, sorted.
    pub fn assigned(&self) -> Vec<i32> {
        let mut list: Vec<i32> = self.assigned.iter().copied().collect();
        list.sort_unstable();
        list
    }

    /// Whether the partition is still ours (texts of a revoked one are finished, but their
    /// new owner does the learning).
    pub fn is_assigned(&self, partition: i32) -> bool {
        self.assigned.contains(&partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_only_the_done_prefix() {
        let mut t = OffsetTracker::default();
        for offset in 10..15 {
            t.begin(0, offset);
        }
        t.done(0, 12);
        t.done(0, 11);
        assert!(t.to_commit().is_empty(), "10 is not done");
        t.done(0, 10);
        assert_eq!(t.to_commit(), vec![Position::new(0, 13)]);
        t.committed(0, 13);
        assert!(t.to_commit().is_empty());
        t.done(0, 14);
        assert!(t.to_commit().is_empty(), "13 is not done");
        t.done(0, 13);
        assert_eq!(t.to_commit(), vec![Position::new(0, 15)]);
        assert_eq!(t.in_flight(), 0);
    }

    #[test]
    fn partitions_are_independent_and_revocation_forgets() {
        let mut t = OffsetTracker::default();
        t.begin(0, 1);
        t.begin(1, 7);
        t.begin(1, 8);
        t.done(1, 7);
        assert_eq!(t.to_commit(), vec![Position::new(1, 8)]);
        assert_eq!(t.in_flight(), 2);
        t.forget(1);
        t.done(1, 8);
        assert!(t.to_commit().is_empty());
        assert_eq!(t.in_flight(), 1);
    }
}
