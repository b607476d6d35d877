//! What the loop does to its texts partitions for the intake: commit the offsets done, pause
//! and resume them as the backlog fills and empties, and take newly assigned ones in (the
//! intake itself is pure: it says what to do, this does it on the consumer).

use super::super::intake::{BacklogLimit, Intake};
use super::super::replica::Replica;
use super::super::ServeError;
use crate::broker::TextsConsumer;

/// The intake and the consumer of its partitions, for one step of the loop.
pub(super) struct Partitions<'a> {
    pub intake: &'a mut Intake,
    pub texts: &'a TextsConsumer,
}

impl Partitions<'_> {
    /// Flush the state, then commit (without waiting) every partition's done prefix that
    /// moved since the last commit.
    pub(super) fn commit(self, replica: &mut Replica) -> Result<(), ServeError> {
        let list = self.intake.tracker.to_commit();
        if list.is_empty() {
            return Ok(());
        }
        replica.flush()?;
        match self.texts.commit_async(&list) {
            Ok(()) => {
                for position in list {
                    self.intake
                        .tracker
                        .committed(position.partition, position.offset);
                }
            }
            Err(error) => tracing::warn!(%error, "offset commit failed; retried at the next tick"),
        }
        Ok(())
    }

    /// Pause the partitions when the backlog is full, resume them at half.
    pub(super) fn pause_or_resume(self, limit: BacklogLimit) {
        let Some(pause) = self.intake.pause_change(limit) else {
            return;
        };
        let partitions = self.intake.tracker.assigned();
        match self.texts.pause(&partitions, pause) {
            Ok(()) => {
                tracing::info!(
                    ?partitions,
                    backlog = self.intake.backlog(),
                    "texts partitions {}",
                    if pause { "paused" } else { "resumed" }
                );
                self.intake.set_paused(pause);
            }
            Err(error) => tracing::warn!(%error, pause, "pausing or resuming the texts partitions"),
        }
    }

    /// Partitions assigned: tracked, and paused or resumed as the others are.
    pub(super) fn assign(self, partitions: &[i32]) {
        self.intake.assign(partitions);
        // Said explicitly either way: librdkafka keeps a partition's pause across a
        // rebalance that gives it back to this consumer, and the intake may have been
        // resumed (its backlog emptied by the revocation) while the partition was not
        // assigned — it would stay paused for good.
        let pause = self.intake.is_paused();
        if let Err(error) = self.texts.pause(partitions, pause) {
            tracing::warn!(%error, pause, "pausing or resuming newly assigned partitions");
        }
    }
}
