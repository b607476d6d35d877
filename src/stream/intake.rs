//! What the loop knows of its texts partitions: which are assigned, the offsets done and
//! committed ([`OffsetTracker`]), and the texts read but not yet taken in (the backlog). The
//! consumer is polled whatever the LLM does; when the backlog holds a full intake's worth the
//! partitions are paused instead (the consumer stays in its group), and resumed once it is
//! empty. Pure: the loop does the pausing and committing this asks for.

use std::collections::VecDeque;

use rdkafka::message::{Message, OwnedMessage};

use super::offsets::OffsetTracker;

/// Fewest texts held back before the partitions are paused.
const BACKLOG_MIN: usize = 16;

#[derive(Default)]
pub struct Intake {
    pub tracker: OffsetTracker,
    /// Texts received and not yet taken in, in arrival order.
    backlog: VecDeque<OwnedMessage>,
    /// Whether the assigned partitions are paused.
    paused: bool,
}

impl Intake {
    pub fn receive(&mut self, message: OwnedMessage) {
        self.backlog.push_back(message);
    }

    /// The next text to take in (the caller decides whether there is room).
    pub fn next(&mut self) -> Option<OwnedMessage> {
        let message = self.backlog.pop_front()?;
        self.tracker.begin(message.partition(), message.offset());
        Some(message)
    }

    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }

    /// Texts of `partition` read and held back: still to do, so they count as lag.
    pub fn held(&self, partition: i32) -> i64 {
        self.backlog
            .iter()
            .filter(|m| m.partition() == partition)
            .count() as i64
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Whether to pause (true) or resume (false) the assigned partitions now, for an intake of
    /// `max_in_flight`; None to leave them as they are.
    pub fn pause_change(&self, max_in_flight: usize) -> Option<bool> {
        let full = self.backlog.len() >= max_in_flight.max(BACKLOG_MIN);
        if !self.paused && full {
            Some(true)
        } else if self.paused && self.backlog.is_empty() {
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
    pub fn revoke(&mut self, partitions: &[i32]) -> (usize, Vec<(i32, i64)>) {
        let before = self.backlog.len();
        self.backlog
            .retain(|m| !partitions.contains(&m.partition()));
        let dropped = before - self.backlog.len();
        let done = self
            .tracker
            .watermarks()
            .into_iter()
            .filter(|(partition, _)| partitions.contains(partition))
            .collect();
        for &partition in partitions {
            self.tracker.forget(partition);
        }
        (dropped, done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::message::Timestamp;

    fn text(partition: i32, offset: i64) -> OwnedMessage {
        OwnedMessage::new(
            Some(b"{}".to_vec()),
            None,
            "texts".into(),
            Timestamp::NotAvailable,
            partition,
            offset,
            None,
        )
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
    fn a_full_backlog_pauses_and_an_empty_one_resumes() {
        let mut intake = Intake::default();
        intake.assign(&[0]);
        assert_eq!(intake.pause_change(4), None);
        for offset in 0..BACKLOG_MIN as i64 - 1 {
            intake.receive(text(0, offset));
        }
        assert_eq!(
            intake.pause_change(4),
            None,
            "below the floor of {BACKLOG_MIN}"
        );
        intake.receive(text(0, 99));
        assert_eq!(intake.pause_change(4), Some(true));
        assert_eq!(
            intake.pause_change(64),
            None,
            "an intake of 64 pauses at 64"
        );
        intake.set_paused(true);
        assert_eq!(intake.pause_change(4), None, "paused already");
        while intake.next().is_some() {}
        assert_eq!(intake.pause_change(4), Some(false));
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
        assert_eq!(done, [(1, 1)]);
        assert_eq!(intake.held(1), 0);
        assert_eq!(intake.backlog(), 1);
        assert!(!intake.tracker.is_assigned(1));
        assert!(intake.tracker.is_assigned(0));
    }
}
