//! What the loop measures on its tick.

use super::Service;
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
        self.stall.warn_if_stalled(
            &self.slots,
            self.replica.pending_learns(),
            self.intake.backlog(),
        );
    }
}
