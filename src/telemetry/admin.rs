//! The admin HTTP port: `/healthz` (the process is alive), `/readyz` (state loaded, broker
//! reachable, LLM reachable or the graph fallback enabled), `/metrics` (Prometheus text); each
//! connection bounded by [`Limits`].

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use tokio::net::TcpListener;

pub use super::connections::Limits;
use super::metrics::Metrics;

/// What `/readyz` checks; the service flips these.
#[derive(Debug)]
pub struct Health {
    pub state_loaded: AtomicBool,
    pub broker_reachable: AtomicBool,
    pub llm_reachable: AtomicBool,
    /// False when the changelog ends before what this instance already applied (the broker lost
    /// data): learning from it could silently skip changes.
    pub changelog_consistent: AtomicBool,
    /// With `llm.on_failure = "graph"` an unreachable LLM does not make the service unready.
    pub llm_optional: AtomicBool,
    /// Why the brokers are unreachable (librdkafka's reason), while they are.
    broker_problem: std::sync::Mutex<Option<String>>,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            state_loaded: AtomicBool::new(false),
            broker_reachable: AtomicBool::new(false),
            llm_reachable: AtomicBool::new(true),
            changelog_consistent: AtomicBool::new(true),
            llm_optional: AtomicBool::new(true),
            broker_problem: std::sync::Mutex::new(None),
        }
    }
}

#[derive(Debug, Serialize)]
struct Readiness {
    ready: bool,
    state_loaded: bool,
    broker_reachable: bool,
    llm_reachable: bool,
    llm_optional: bool,
    changelog_consistent: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    broker_problem: Option<String>,
}

impl Health {
    fn readiness(&self) -> Readiness {
        let get = |flag: &AtomicBool| flag.load(Ordering::Relaxed);
        let (state, broker, llm, optional) = (
            get(&self.state_loaded),
            get(&self.broker_reachable),
            get(&self.llm_reachable),
            get(&self.llm_optional),
        );
        let consistent = get(&self.changelog_consistent);
        Readiness {
            ready: state && broker && consistent && (llm || optional),
            changelog_consistent: consistent,
            state_loaded: state,
            broker_reachable: broker,
            llm_reachable: llm,
            llm_optional: optional,
            broker_problem: (!broker).then(|| self.broker_problem()).flatten(),
        }
    }

    /// Whether the brokers answered, and if not, why (shown by `/readyz`).
    pub fn set_broker(&self, problem: Option<String>) {
        Self::set(&self.broker_reachable, problem.is_none());
        *self
            .broker_problem
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = problem;
    }

    fn broker_problem(&self) -> Option<String> {
        self.broker_problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn set(flag: &AtomicBool, value: bool) {
        flag.store(value, Ordering::Relaxed);
    }
}

#[derive(Clone)]
struct Shared {
    health: Arc<Health>,
    metrics: Arc<Metrics>,
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(shared): State<Shared>) -> impl IntoResponse {
    let readiness = shared.health.readiness();
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(&readiness).unwrap_or_default(),
    )
}

async fn metrics_text(State(shared): State<Shared>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.metrics.encode(),
    )
}

/// Bind the admin port (an error here stops the service before it does anything).
pub async fn bind(listen: &str) -> std::io::Result<TcpListener> {
    let address: SocketAddr = listen.parse().map_err(|e| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{listen}: {e}"))
    })?;
    TcpListener::bind(address).await
}

/// Serve until the task is dropped, each connection under `limits`.
pub async fn serve(
    listener: TcpListener,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    limits: Limits,
) {
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(Shared { health, metrics });
    super::connections::serve(listener, app, limits).await;
}
