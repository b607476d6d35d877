//! Typed internal events, after Vector's `internal_events`: one type per happening the service
//! reports (a text dead-lettered, a label event applied, a community pass finished, consumer
//! lag measured …), whose [`InternalEvent::emit`] is the one place that writes the happening's
//! log line and moves its metrics, so the two cannot drift apart.
//!
//! The trait is the floor's; the events are not. Each lives in the layer whose happening it
//! reports (the service's in `serve::internal_events`, the LLM client's usage in `llm::usage`)
//! and holds what it says as borrowed or plain data, so telemetry names no domain type. Code
//! records an event with [`Metrics::emit`](super::metrics::Metrics::emit), which lends its
//! [`Instruments`] to the event's `emit` and to nothing else.

use super::instruments::Instruments;

/// A happening the service reports: its log line (if it has one) and its metrics.
pub trait InternalEvent {
    /// Write the log line, with the happening's fields, and move the metrics.
    fn emit(self, instruments: &Instruments);
}

/// The value of one series in `metrics`' exposition (`series` as it is written before the
/// value, labels included): for the events' tests.
#[cfg(test)]
pub(crate) fn sample(metrics: &super::metrics::Metrics, series: &str) -> Option<f64> {
    metrics
        .encode()
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}
