//! The stall warning: texts in flight and none finished for `STALL_WARN` — said once per
//! period, with which texts and in what state (what `scripts/fault-suite.sh`'s watchdog looks
//! for).

use std::time::Instant;

use super::STALL_WARN;
use crate::serve::pipeline::{Slots, Text};

/// When a text last finished (or the loop was last idle).
pub(super) struct StallWatch {
    last_progress: Instant,
}

impl StallWatch {
    pub(super) fn new() -> Self {
        Self {
            last_progress: Instant::now(),
        }
    }

    /// A text finished.
    pub(super) fn progressed(&mut self) {
        self.last_progress = Instant::now();
    }

    /// Warn when texts are in flight and none finished for `STALL_WARN`.
    pub(super) fn warn_if_stalled(
        &mut self,
        slots: &Slots<Text>,
        pending_learns: usize,
        backlog: usize,
    ) {
        if slots.is_empty() || self.last_progress.elapsed() < STALL_WARN {
            if slots.is_empty() {
                self.progressed();
            }
            return;
        }
        let waiting: Vec<String> = slots
            .states()
            .map(|(id, ready)| {
                let state = if ready { "ready" } else { "waiting" };
                format!("{}:{} {state}", id.partition, id.offset)
            })
            .collect();
        tracing::warn!(
            in_flight = slots.len(),
            pending_learns,
            backlog,
            ?waiting,
            "no text finished for {} s",
            STALL_WARN.as_secs()
        );
        self.progressed();
    }
}
