//! Prometheus metrics of the service (exposed on the admin port's `/metrics`): the
//! [`Instruments`] and their registry. Only an [`InternalEvent`]'s `emit` is handed the
//! instruments ([`Metrics::emit`]), so a metric moves only where the happening it counts also
//! writes its log line (docs/design/architecture.md, "Telemetry's typed events"; `tests/layers.rs` checks
//! it).

use prometheus_client::registry::Registry;

use super::event::InternalEvent;
pub use super::instruments::Instruments;
pub use super::labels::*;

/// The service's metrics: the instruments, moved by events, and the registry `/metrics`
/// encodes.
pub struct Metrics {
    registry: Registry,
    instruments: Instruments,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("gorag");
        let instruments = Instruments::new();
        instruments.register_stream(&mut registry);
        instruments.register_llm(&mut registry);
        instruments.register_state(&mut registry);
        instruments.register_discovery(&mut registry);
        instruments.zero_known_series();
        Self {
            registry,
            instruments,
        }
    }

    /// Record a happening: its log line and its metrics, both written by its `emit`.
    pub fn emit(&self, event: impl InternalEvent) {
        event.emit(&self.instruments);
    }

    /// The instruments themselves, for the registry's own test.
    #[cfg(test)]
    pub(super) fn instruments(&self) -> &Instruments {
        &self.instruments
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}
