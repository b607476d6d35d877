//! What the loop measures on its tick, and the stall warning.

use std::time::Instant;

use super::{Service, STALL_WARN};
use crate::broker::TextsConsumer;
use crate::llm::usage::UsageSampled;
use crate::position::Position;
use crate::serve::internal_events::InFlight;

impl Service {
    /// Periodic measurements: gauges, LLM usage, consumer lag, stalls.
    pub(super) fn measure(&mut self, texts: &TextsConsumer) {
        self.replica.gauges(&self.stats);
        self.stats.emit(InFlight {
            texts: self.slots.len(),
        });
        if let Some(llm) = self.classifier.llm() {
            self.stats.emit(UsageSampled(llm.usage().snapshot()));
        }
        // Texts read but held back are still to do: they count as lag.
        let positions = texts
            .positions()
            .into_iter()
            .map(|p| Position::new(p.partition, p.offset - self.intake.held(p.partition)))
            .collect();
        self.lag.measure(positions);
        self.warn_if_stalled();
    }

    /// Texts in flight and none finished for `STALL_WARN`: say which, and in what state, once
    /// per period (what `scripts/fault-suite.sh`'s watchdog looks for).
    pub(super) fn warn_if_stalled(&mut self) {
        if self.slots.is_empty() || self.last_progress.elapsed() < STALL_WARN {
            if self.slots.is_empty() {
                self.last_progress = Instant::now();
            }
            return;
        }
        let waiting: Vec<String> = self
            .slots
            .states()
            .map(|(id, ready)| {
                let state = if ready { "ready" } else { "waiting" };
                format!("{}:{} {state}", id.partition, id.offset)
            })
            .collect();
        tracing::warn!(
            in_flight = self.slots.len(),
            pending_learns = self.replica.pending_learns(),
            backlog = self.intake.backlog(),
            ?waiting,
            "no text finished for {} s",
            STALL_WARN.as_secs()
        );
        self.last_progress = Instant::now();
    }
}
