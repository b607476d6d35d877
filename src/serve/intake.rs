//! What the loop knows of its texts partitions: which are assigned, the offsets done and
//! committed ([`OffsetTracker`]), and the texts read but not yet taken in (the backlog). The
//! consumer is polled whatever the LLM does; when the backlog fills its budget
//! (`input.backlog_mb`) the partitions are paused instead (the consumer stays in its group), and
//! resumed once it is down to half. Pure: the loop does the pausing and committing this asks for.
//!
//! Why a budget in bytes and not an intake's worth: pausing makes librdkafka throw away what it
//! had fetched ahead, and a resumed partition's first records arrive 0.1–1 s later. Paused at a
//! full intake (64 texts) and resumed when empty, the loop sat idle for those texts about once a
//! second (measured: 2.0 s of 5.7 s idle in `scripts/bench-serve.sh instant`); with room for
//! thousands of small texts, a pause is rare and its refetch overlaps the work left.

use std::collections::{HashMap, VecDeque};

use super::offsets::OffsetTracker;
use crate::broker::Record;
use crate::config::InputSection;
use crate::position::Position;

/// Fewest texts held back before the partitions are paused.
const BACKLOG_MIN: usize = 16;
/// Most texts held back whatever their size (each costs a little bookkeeping too).
const BACKLOG_MAX_TEXTS: usize = 100_000;

/// How much the backlog may hold before the partitions are paused.
#[derive(Debug, Clone, Copy)]
pub struct BacklogLimit {
    /// An intake's worth: never paused with fewer texts held (however large they are).
    pub max_in_flight: usize,
    pub bytes: usize,
}

impl BacklogLimit {
    pub fn of(input: &InputSection) -> Self {
        Self {
            max_in_flight: input.max_in_flight,
            bytes: input.backlog_mb.saturating_mul(1 << 20),
        }
    }
}

#[derive(Default)]
pub struct Intake {
    pub tracker: OffsetTracker,
    /// Texts received and not yet taken in, in arrival order.
    backlog: VecDeque<Record>,
    /// Payload and key bytes of the backlog.
    backlog_bytes: usize,
    /// Texts of the backlog per partition (the lag probe asks every tick; the backlog may hold
    /// thousands).
    held: HashMap<i32, usize>,
    /// Whether the assigned partitions are paused.
    paused: bool,
}

impl Intake {
    pub fn receive(&mut self, message: Record) {
        self.backlog_bytes += size(&message);
        *self.held.entry(message.partition()).or_default() += 1;
        self.backlog.push_back(message);
    }

    /// The next text to take in (the caller decides whether there is room).
    pub fn next(&mut self) -> Option<Record> {
        let message = self.backlog.pop_front()?;
        self.backlog_bytes -= size(&message);
        if let Some(held) = self.held.get_mut(&message.partition()) {
            *held = held.saturating_sub(1);
        }
        self.tracker.begin(message.partition(), message.offset());
        Some(message)
    }

    /// The latest broker timestamp among the next `count` texts (None when one has none; the
    /// smallest value when there are none): whether a sync must come before they are taken in.
    pub fn newest_of_next(&self, count: usize) -> Option<i64> {
        self.backlog
            .iter()
            .take(count)
            .try_fold(i64::MIN, |newest, message| {
                Some(newest.max(message.timestamp_ms?))
            })
    }

    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }

    /// Texts of `partition` read and held back: still to do, so they count as lag.
    pub fn held(&self, partition: i32) -> i64 {
        self.held.get(&partition).copied().unwrap_or(0) as i64
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Whether to pause (true) or resume (false) the assigned partitions now; None to leave them
    /// as they are. Paused when full, resumed at half (hysteresis: not a pause per text).
    pub fn pause_change(&self, limit: BacklogLimit) -> Option<bool> {
        let texts = self.backlog.len();
        let full = texts >= limit.max_in_flight.max(BACKLOG_MIN)
            && (self.backlog_bytes >= limit.bytes || texts >= BACKLOG_MAX_TEXTS);
        let half = self.backlog_bytes <= limit.bytes / 2 && texts <= BACKLOG_MAX_TEXTS / 2;
        if !self.paused && full {
            Some(true)
        } else if self.paused && half {
            Some(false)
        } else {
            None
        }
    }

    /// The partitions were paused (true) or resumed (false).
    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    pub fn assign(&mut self, partitions: &[i32]) {
        for &partition in partitions {
            self.tracker.assign(partition);
        }
    }

    /// Partitions are going: drop their held-back texts (the new owner reads them again) and
    /// return how many were dropped and the partitions' done offsets, to commit once the state
    /// that includes them is on disk.
    pub fn revoke(&mut self, partitions: &[i32]) -> (usize, Vec<Position>) {
        let before = self.backlog.len();
        self.backlog
            .retain(|m| !partitions.contains(&m.partition()));
        self.backlog_bytes = self.backlog.iter().map(size).sum();
        for partition in partitions {
            self.held.remove(partition);
        }
        let dropped = before - self.backlog.len();
        let done = self
            .tracker
            .watermarks()
            .into_iter()
            .filter(|position| partitions.contains(&position.partition))
            .collect();
        for &partition in partitions {
            self.tracker.forget(partition);
        }
        (dropped, done)
    }
}

fn size(message: &Record) -> usize {
    message.payload.len() + message.key.as_ref().map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(partition: i32, offset: i64) -> Record {
        Record {
            topic: "texts".into(),
            position: Position::new(partition, offset),
            key: None,
            payload: b"{}".to_vec(),
            timestamp_ms: None,
            headers: Vec::new(),
        }
    }

    #[test]
    fn texts_are_taken_in_arrival_order_and_tracked() {
        let mut intake = Intake::default();
        intake.assign(&[0, 1]);
        for (partition, offset) in [(0, 5), (1, 9), (0, 6)] {
            intake.receive(text(partition, offset));
        }
        let taken: Vec<(i32, i64)> = std::iter::from_fn(|| intake.next())
            .map(|m| (m.partition(), m.offset()))
            .collect();
        assert_eq!(taken, [(0, 5), (1, 9), (0, 6)]);
        assert_eq!(intake.tracker.in_flight(), 3);
    }

    #[test]
    fn a_backlog_over_its_budget_pauses_and_one_down_to_half_resumes() {
        let mut intake = Intake::default();
        intake.assign(&[0]);
        // Each test text is 2 bytes ("{}"): 20 of them fill a 40-byte budget.
        let limit = BacklogLimit {
            max_in_flight: 4,
            bytes: 40,
        };
        assert_eq!(intake.pause_change(limit), None);
        for offset in 0..19 {
            intake.receive(text(0, offset));
        }
        assert_eq!(intake.pause_change(limit), None, "38 of 40 bytes");
        intake.receive(text(0, 19));
        assert_eq!(intake.pause_change(limit), Some(true));
        intake.set_paused(true);
        assert_eq!(intake.pause_change(limit), None, "paused already");
        for _ in 0..9 {
            intake.next();
        }
        assert_eq!(intake.pause_change(limit), None, "22 bytes: above half");
        intake.next();
        assert_eq!(intake.pause_change(limit), Some(false), "20 bytes: half");
    }

    #[test]
    fn never_paused_with_less_than_an_intake_held() {
        let mut intake = Intake::default();
        intake.assign(&[0]);
        let tiny_budget = |max_in_flight| BacklogLimit {
            max_in_flight,
            bytes: 1,
        };
        for offset in 0..BACKLOG_MIN as i64 - 1 {
            intake.receive(text(0, offset));
        }
        assert_eq!(
            intake.pause_change(tiny_budget(4)),
            None,
            "below the floor of {BACKLOG_MIN}"
        );
        intake.receive(text(0, 99));
        assert_eq!(intake.pause_change(tiny_budget(4)), Some(true));
        assert_eq!(
            intake.pause_change(tiny_budget(64)),
            None,
            "an intake of 64 pauses at 64 texts at the earliest"
        );
    }

    #[test]
    fn a_revoke_drops_only_its_partitions_and_returns_their_done_offsets() {
        let mut intake = Intake::default();
        intake.assign(&[0, 1]);
        for (partition, offset) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            intake.receive(text(partition, offset));
        }
        // One text of each partition taken in and done.
        let first = intake.next().unwrap();
        let second = intake.next().unwrap();
        intake.tracker.done(first.partition(), first.offset());
        intake.tracker.done(second.partition(), second.offset());
        assert_eq!(intake.held(1), 1);

        let (dropped, done) = intake.revoke(&[1]);
        assert_eq!(dropped, 1);
        assert_eq!(done, [Position::new(1, 1)]);
        assert_eq!(intake.held(1), 0);
        assert_eq!(intake.backlog(), 1);
        assert!(!intake.tracker.is_assigned(1));
        assert!(intake.tracker.is_assigned(0));
    }
}
