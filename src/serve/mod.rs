//! `gorag serve`: the async shell that runs the replicated state over a broker — Kafka, or an
//! in-process [`crate::broker::MemoryBroker`] for tests — reached only through the broker seam
//! ([`crate::broker`]: plain records, positions, typed errors).
//!
//! ```text
//! texts ─▶ poll thread (broker/texts.rs) ─▶ loop: backlog (intake.rs) ─▶ slot (pipeline/slots.rs)
//!        ─▶ keywords, retrieve (pipeline) ─▶ LLM task (one_text.rs steps) ─▶ in order per
//!        partition: finish (pipeline/finish.rs, pure) ─▶ learn record to the changelog, in
//!        order (broker/ordered.rs) + prediction ─▶ acked (delivery.rs) ─▶ offset done
//!        (offsets.rs) ─▶ commit
//! labels ─▶ forwarded to the changelog (replica/sync.rs) ─▶ every replica applies the
//!           changelog in order (replica/apply.rs, pure over a cursor) ─▶ engine + store
//!           (update and offsets in one batch)
//! ```
//!
//! Delivery is at least once: an input offset is committed only after the outputs of every
//! record before it are acknowledged by the broker **and** the state that includes them is
//! flushed to disk. A crash replays from the committed offset; texts already learned (the
//! changelog cursor knows their offsets) are predicted again but not learned twice.
//!
//! `service/` is the loop (`mod.rs`; a text's way in and out, the tick's watch and the close
//! beside it): one task owns the replica (engine, store, cursor), the intake
//! (offset tracker, backlog) and the slots; LLM calls and deliveries run as tasks and report
//! back to it; the texts consumer runs in its own thread and reports to it. `startup.rs` builds
//! what the loop starts with; `group_commit.rs` gathers learn steps into records; `stats.rs`
//! counts (the run's summary and the happening's event in one call); `internal_events/` holds
//! those events, each writing its log line and moving its metrics; `lag.rs` measures consumer
//! lag off the loop.

mod delivery;
mod discovery_pass;
mod group_commit;
mod intake;
mod internal_events;
mod lag;
pub mod offsets;
pub(crate) mod outputs;
mod pipeline;
mod replica;
mod service;
mod startup;
mod stats;
mod stop;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use thiserror::Error;

use crate::broker;
use crate::config::ServeConfig;
use crate::llm::LlmError;
use crate::store::StoreError;
use crate::telemetry::admin::{self, Health};
use crate::telemetry::metrics::Metrics;

impl From<broker::ClientError> for ServeError {
    fn from(error: broker::ClientError) -> Self {
        match error {
            broker::ClientError::Kafka(context, e) => Self::Kafka(context, e),
            broker::ClientError::Topic(message) => Self::Topic(message),
            broker::ClientError::PollThread(e) => Self::PollThread(e),
            broker::ClientError::BlockingTask(e) => Self::BlockingTask(e),
        }
    }
}

#[derive(Debug, Error)]
pub enum ServeError {
    #[error("kafka, {0}: {1}")]
    Kafka(&'static str, broker::BrokerError),
    #[error("{0}")]
    Topic(String),
    #[error(
        "topic {topic} has {partitions} partitions; it must have exactly 1 (its order is the \
         order changes apply in)"
    )]
    TopicLayout { topic: String, partitions: usize },
    #[error(
        "missing topic(s) {0} (kafka.create_topics is false): create them (the labels and \
         changelog topics with exactly 1 partition) or let gorag create its topics"
    )]
    TopicMissing(String),
    #[error("the Kafka brokers at {brokers} did not answer within {waited_secs} s: {reason}")]
    BrokersUnreachable {
        brokers: String,
        waited_secs: u64,
        reason: String,
    },
    #[error("the Kafka brokers at {brokers} refused this client ({reason}): {fix}")]
    BrokerRefused {
        brokers: String,
        reason: String,
        fix: &'static str,
    },
    #[error("stopped while waiting for the Kafka brokers")]
    StoppedWhileStarting,
    #[error(transparent)]
    StateDir(#[from] crate::config::NoStateDir),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Open(#[from] crate::reopen::OpenError),
    #[error("LLM client: {0}")]
    Llm(#[from] LlmError),
    #[error("LLM client: {0}")]
    LlmSetup(#[from] crate::llm::SetupError),
    #[error(
        "changelog topic {topic} ends at offset {end}, but this instance has applied it up to \
         {applied}: the broker lost data (a restarted memory-storage broker?) or the topic was \
         recreated. Delete state.dir to rebuild from what the log holds."
    )]
    ChangelogBehind {
        topic: String,
        end: i64,
        applied: i64,
    },
    #[error("changelog topic {topic}, record {offset}: {error}")]
    ChangelogVersion {
        topic: String,
        offset: i64,
        error: crate::state::codec::ChangeDecodeError,
    },
    #[error("admin port {0}: {1}")]
    Admin(String, std::io::Error),
    #[error("topic {0}: no record arrived within {1} s while catching up to its end")]
    Stalled(String, u64),
    #[error("stopped while {0}: the next start takes it up")]
    StoppedWhile(&'static str),
    #[error(
        "the reader of {0} could not be pointed back at record {1}, left unprocessed \
         (a restart resumes from the saved state)"
    )]
    ReaderAhead(String, i64),
    #[error("starting the texts poll thread: {0}")]
    PollThread(std::io::Error),
    #[error("a task on the blocking pool (a broker query, an encoding) died: {0}")]
    BlockingTask(#[from] tokio::task::JoinError),
}

/// What one run did (logged at shutdown; the metrics endpoint of [3/4] exposes the same).
#[derive(Debug, Default, Clone, Serialize)]
pub struct ServeSummary {
    pub texts_in: u64,
    pub predictions: u64,
    pub llm_fallbacks: u64,
    pub hallucinations: BTreeMap<String, u64>,
    pub dead_letters: BTreeMap<String, u64>,
    pub label_events: u64,
    pub relearn_skipped: u64,
    /// Texts whose learn record the broker refused (too large): predicted, not learned.
    pub learns_refused: u64,
    pub graph_nodes: usize,
    pub graph_edges: usize,
    pub labels: usize,
    pub digest: String,
    /// False when the drain deadline passed with texts still in flight (they are re-read on
    /// the next start: their offsets were not committed).
    pub drained: bool,
}

/// Run until `shutdown` resolves, then drain, commit and flush. The admin port (`/healthz`,
/// `/readyz`, `/metrics`) is up from the start, before the state is loaded.
pub async fn serve(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<ServeSummary, ServeError> {
    serve_on(broker::Transport::Kafka, config, shutdown).await
}

/// [`serve`] over `transport` (Kafka, or a [`broker::MemoryBroker`] for a test in process).
pub async fn serve_on(
    transport: broker::Transport,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<ServeSummary, ServeError> {
    let health = Arc::new(Health::default());
    let metrics = Arc::new(Metrics::new());
    let listener = admin::bind(&config.admin.listen)
        .await
        .map_err(|e| ServeError::Admin(config.admin.listen.clone(), e))?;
    if let Ok(address) = listener.local_addr() {
        tracing::info!(%address, "admin port: /healthz /readyz /metrics");
    }
    let server = tokio::spawn(admin::serve(
        listener,
        health.clone(),
        metrics.clone(),
        config.admin.limits(),
    ));
    let broker = broker::Broker::new(transport, &config.broker());
    let result = service::run(broker, config, shutdown, health, metrics).await;
    server.abort();
    result
}
