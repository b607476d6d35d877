//! Logs, traces and metrics.
//!
//! - Logs: `tracing` to stderr, JSON in containers and human-readable on a terminal
//!   (`GORAG_LOG_FORMAT=json|text|auto`, default auto: JSON unless stderr is a terminal),
//!   filtered by `GORAG_LOG` (e.g. `gorag=debug,warn`).
//! - Traces: when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set
//!   (and `OTEL_SDK_DISABLED` is not `true`), gorag's spans (one per text with a child per stage,
//!   one per label event) are exported over OTLP/HTTP, `OTEL_EXPORTER_OTLP_PROTOCOL` =
//!   `http/protobuf` (default) or `http/json`; `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`
//!   and the other standard variables apply. Off otherwise. [`Telemetry::shutdown`] flushes.
//! - Metrics: [`metrics::Metrics`], served by [`admin`], moved only by typed events
//!   ([`event::InternalEvent`]), each of which also writes its happening's log line.

pub mod admin;
pub mod budget;
pub mod connections;
pub mod event;
pub mod instruments;
pub mod labels;
pub mod metrics;

use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use thiserror::Error;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

#[derive(Debug, Error)]
pub enum TelemetryError {
    #[error("GORAG_LOG_FORMAT={0:?}: expected json, text or auto")]
    LogFormat(String),
    #[error("OTEL_EXPORTER_OTLP_PROTOCOL={0:?}: this build exports http/protobuf or http/json")]
    Protocol(String),
    #[error("OTLP exporter: {0}")]
    Exporter(String),
    #[error("installing the tracing subscriber: {0}")]
    Init(String),
}

/// Keeps the trace exporter alive; flush it with [`Telemetry::shutdown`].
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Export what is buffered and stop the exporter.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider {
            if let Err(error) = provider.shutdown() {
                eprintln!("gorag: flushing traces at shutdown: {error}");
            }
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn tracer_provider() -> Result<Option<SdkTracerProvider>, TelemetryError> {
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    if env("OTEL_EXPORTER_OTLP_ENDPOINT").is_none()
        && env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none()
    {
        return Ok(None);
    }
    let protocol = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .unwrap_or_else(|| "http/protobuf".into());
    let protocol = match protocol.as_str() {
        "http/protobuf" => Protocol::HttpBinary,
        "http/json" => Protocol::HttpJson,
        other => return Err(TelemetryError::Protocol(other.to_string())),
    };
    // The endpoint, headers and timeout come from the standard OTEL_* variables.
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let resource = Resource::builder().build();
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build(),
    ))
}

/// Install logging (and trace export when configured). `default_filter` applies when
/// `GORAG_LOG` is unset.
pub fn init(default_filter: &str) -> Result<Telemetry, TelemetryError> {
    let json = match env("GORAG_LOG_FORMAT").as_deref() {
        None | Some("auto") => !std::io::stderr().is_terminal(),
        Some("json") => true,
        Some("text") => false,
        Some(other) => return Err(TelemetryError::LogFormat(other.to_string())),
    };
    let filter =
        EnvFilter::try_from_env("GORAG_LOG").unwrap_or_else(|_| EnvFilter::new(default_filter));
    let logs = if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed()
    };
    let provider = tracer_provider()?;
    // Spans are exported whatever the log filter says.
    let traces = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("gorag"))
            .with_filter(Targets::new().with_target("gorag", Level::INFO))
    });
    tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init()
        .map_err(|e| TelemetryError::Init(e.to_string()))?;
    Ok(Telemetry { provider })
}
