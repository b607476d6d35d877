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

/// The log lines `emitting` writes, as the text format writes them without the time: for the
/// events' tests (that a line keeps its message, level, fields and target).
#[cfg(test)]
pub(crate) fn logged(emitting: impl FnOnce()) -> String {
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_max_level(tracing::Level::TRACE)
        .finish();
    tracing::subscriber::with_default(subscriber, emitting);
    let bytes = lines.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    String::from_utf8_lossy(&bytes).into_owned()
}
