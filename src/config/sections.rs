//! The sections of [`super::ServeConfig`], each with its defaults (docs/guide/configuration.md,
//! "Every key", lists them).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminSection {
    /// Address of the admin HTTP port (`/healthz`, `/readyz`, `/metrics`); port 0 picks a free
    /// one (logged at start).
    pub listen: String,
    /// Connections open at once; at the cap a new one closes the oldest that is not answering
    /// a request.
    pub max_connections: usize,
    /// Connections open at once from one client address (behind a proxy or an Ingress every
    /// client has the proxy's address: raise it there).
    pub max_connections_per_address: usize,
    /// Requests a second from one client address, twice as many in a burst; past it, 429.
    pub requests_per_second_per_address: f64,
    /// The longest a connection may take to send a request's head (and may idle between
    /// requests) before it is closed.
    pub header_read_timeout_secs: f64,
}

impl Default for AdminSection {
    fn default() -> Self {
        let limits = crate::telemetry::admin::Limits::default();
        Self {
            listen: "127.0.0.1:9464".into(),
            max_connections: limits.max_connections,
            max_connections_per_address: limits.max_connections_per_address,
            requests_per_second_per_address: limits.requests_per_second_per_address,
            header_read_timeout_secs: limits.header_read_timeout.as_secs_f64(),
        }
    }
}

impl AdminSection {
    /// The most `max_connections` may be (each is a descriptor and a task).
    pub const MOST_CONNECTIONS: usize = 10_000;
    /// The longest `header_read_timeout_secs` may be.
    pub const LONGEST_HEADER_READ_SECS: f64 = 3600.0;
    /// The most `requests_per_second_per_address` may be.
    pub const MOST_REQUESTS_PER_SECOND: f64 = 1_000_000.0;

    /// The connection limits (the values checked by [`super::ServeConfig`]'s validation).
    pub fn limits(&self) -> crate::telemetry::admin::Limits {
        let secs = self
            .header_read_timeout_secs
            .clamp(0.001, Self::LONGEST_HEADER_READ_SECS);
        let max_connections = self.max_connections.clamp(1, Self::MOST_CONNECTIONS);
        crate::telemetry::admin::Limits {
            max_connections,
            max_connections_per_address: self.max_connections_per_address.clamp(1, max_connections),
            requests_per_second_per_address: self
                .requests_per_second_per_address
                .clamp(0.001, Self::MOST_REQUESTS_PER_SECOND),
            header_read_timeout: std::time::Duration::from_secs_f64(secs),
            ..crate::telemetry::admin::Limits::default()
        }
    }
}

/// What happens to a text whose LLM call failed after every retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnLlmFailure {
    /// Predict from the graph (`source: graph`, `llm_error` says why).
    Graph,
    /// Send the text to the dead-letter topic (reason `llm_failed`).
    DeadLetter,
}

/// `[llm]`: the endpoint and the client's bounds; `gorag eval` reads the same fields as flags
/// (`--llm` is `llm.url`, `--llm-timeout` is `llm.timeout_secs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
#[command(next_help_heading = "LLM (llm.*)")]
pub struct LlmSection {
    /// OpenAI-compatible base URL, or `none` for graph-only predictions.
    #[arg(long = "llm", env = "GORAG_LLM_URL", default_value_t = LlmSection::default().url, help_heading = None)]
    pub url: String,
    /// Model name sent to the endpoint.
    #[arg(long, env = "GORAG_LLM_MODEL", default_value_t = LlmSection::default().model, help_heading = None)]
    pub model: String,
    /// File holding the API key (else $GORAG_LLM_API_KEY, else $OPENAI_API_KEY, else none).
    #[arg(long, help_heading = None)]
    pub api_key_file: Option<PathBuf>,
    /// Send the API key over plain `http://` to a host other than this machine (loopback
    /// needs no opt-in; https never does).
    #[arg(long = "llm-allow-insecure-key")]
    pub allow_insecure_key: bool,
    /// Timeout of one attempt, in seconds.
    #[arg(long = "llm-timeout", default_value_t = LlmSection::default().timeout_secs)]
    pub timeout_secs: f64,
    /// Retries after a failed attempt (at most `llm::retry::MAX_RETRIES`).
    #[arg(long = "llm-retries", default_value_t = LlmSection::default().retries)]
    pub retries: u32,
    /// The time one call may take from its first attempt on, its retries and their waits
    /// included (`retry-after` is honoured only within it), in seconds.
    #[arg(long = "llm-max-retry-secs", default_value_t = LlmSection::default().max_retry_secs)]
    pub max_retry_secs: f64,
    /// Largest response body read; a larger answer fails the call, not retried.
    #[arg(long = "llm-max-response-bytes", default_value_t = LlmSection::default().max_response_bytes)]
    pub max_response_bytes: usize,
    /// Calls failed in a row (timeouts, 5xx, 429, connection errors, after their retries) that
    /// open the circuit breaker; 0: it never opens.
    #[arg(long = "llm-breaker-failures", default_value_t = LlmSection::default().breaker_failures)]
    pub breaker_failures: u32,
    /// How long the open breaker sends no call before one probe, in seconds.
    #[arg(long = "llm-breaker-cooldown-secs", default_value_t = LlmSection::default().breaker_cooldown_secs)]
    pub breaker_cooldown_secs: f64,
    /// LLM requests in flight at once.
    #[arg(long = "llm-concurrency", default_value_t = LlmSection::default().concurrency)]
    pub concurrency: usize,
    /// Directory of the persistent response cache.
    #[arg(long = "llm-cache", env = "GORAG_LLM_CACHE")]
    pub cache_dir: Option<PathBuf>,
    /// What happens to a text whose LLM call failed after every retry (`gorag eval`: the
    /// graph's prediction).
    #[arg(skip = LlmSection::default().on_failure)]
    pub on_failure: OnLlmFailure,
    /// Ask the LLM to choose only for texts whose retrieval-only confidence is below this
    /// (0: never, the default — the local model was measured to help nowhere; 1: every text,
    /// which in `gorag eval` also prints the curve of accuracy against calls and writes the
    /// chosen settings to llm-calibration.toml; docs/design/decisions.md).
    #[arg(long, default_value_t = LlmSection::default().ask_below)]
    pub ask_below: f64,
    /// Ask the LLM to describe named labels that come without a description.
    #[arg(skip = LlmSection::default().describe_labels)]
    pub describe_labels: bool,
}

impl Default for LlmSection {
    fn default() -> Self {
        let client =
            crate::llm::LlmSettings::new("http://127.0.0.1:8080/v1", "qwen2.5-coder-0.5b-instruct");
        Self {
            url: client.url,
            model: client.model,
            api_key_file: client.api_key_file,
            allow_insecure_key: client.allow_insecure_key,
            timeout_secs: client.timeout_secs,
            retries: client.retries,
            max_retry_secs: client.max_retry_secs,
            max_response_bytes: client.max_response_bytes,
            breaker_failures: client.breaker_failures,
            breaker_cooldown_secs: client.breaker_cooldown_secs,
            concurrency: client.concurrency,
            cache_dir: client.cache_dir,
            on_failure: OnLlmFailure::Graph,
            ask_below: crate::engine::DEFAULT_ASK_BELOW,
            describe_labels: true,
        }
    }
}

impl LlmSection {
    /// What is wrong with the settings, each problem starting with its key (`llm.url: …`);
    /// none: they hold. The service's loader and `gorag eval` both check with this.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.enabled() && !self.url.starts_with("http") {
            problems.push(format!(
                "llm.url: {} is neither an http(s) URL nor `none`",
                crate::llm::key::shown(&self.url)
            ));
        }
        problems.extend(self.settings().problems());
        if self.concurrency == 0 {
            problems.push("llm.concurrency: must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.ask_below) {
            problems.push("llm.ask_below: must be a confidence from 0 to 1".into());
        }
        problems
    }

    pub fn enabled(&self) -> bool {
        self.settings().enabled()
    }

    /// The client settings (shared with `gorag eval`).
    pub fn settings(&self) -> crate::llm::LlmSettings {
        crate::llm::LlmSettings {
            url: self.url.clone(),
            model: self.model.clone(),
            api_key_file: self.api_key_file.clone(),
            timeout_secs: self.timeout_secs,
            retries: self.retries,
            concurrency: self.concurrency,
            cache_dir: self.cache_dir.clone(),
            max_response_bytes: self.max_response_bytes,
            max_retry_secs: self.max_retry_secs,
            breaker_failures: self.breaker_failures,
            breaker_cooldown_secs: self.breaker_cooldown_secs,
            allow_insecure_key: self.allow_insecure_key,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InputSection {
    /// Texts longer than this (UTF-8 bytes) go to the dead-letter topic; labelled examples and
    /// corrected texts longer than this are refused with their label event.
    pub max_text_bytes: usize,
    /// Text ids longer than this (UTF-8 bytes) go to the dead-letter topic (`over_limit`).
    pub max_id_bytes: usize,
    /// Texts being classified at once (LLM latency dominates; offsets still commit in order).
    pub max_in_flight: usize,
    /// Texts read ahead of the intake, in MiB: the partitions are paused when it is full and
    /// resumed at half (a pause drops what librdkafka fetched ahead, so it should be rare).
    pub backlog_mb: usize,
}

impl Default for InputSection {
    fn default() -> Self {
        let defaults = crate::bounds::Bounds::default();
        Self {
            max_text_bytes: defaults.text_bytes,
            max_id_bytes: defaults.text_id_bytes,
            max_in_flight: 8,
            backlog_mb: 16,
        }
    }
}

/// The bounds on label events (docs/guide/bounds.md, "Labels and rounds"): an event past one
/// is refused whole, with a dead letter (`over_limit`) naming the bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LabelsSection {
    /// A label id's length, in UTF-8 bytes (round ids and gold labels too).
    pub max_id_bytes: usize,
    /// A label name's length, in UTF-8 bytes.
    pub max_name_bytes: usize,
    /// A label description's length, in UTF-8 bytes.
    pub max_description_bytes: usize,
    /// Examples one event gives one label (a round's label, an `add_examples` event).
    pub max_examples: usize,
    /// Labels one round announces.
    pub max_per_round: usize,
    /// Active labels in all: a round that would pass it is refused.
    pub max_active: usize,
}

impl Default for LabelsSection {
    fn default() -> Self {
        let defaults = crate::bounds::Bounds::default();
        Self {
            max_id_bytes: defaults.label_id_bytes,
            max_name_bytes: defaults.name_bytes,
            max_description_bytes: defaults.description_bytes,
            max_examples: defaults.examples_per_label,
            max_per_round: defaults.labels_per_round,
            max_active: defaults.active_labels,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateSection {
    /// The sled database (one process per directory). Left out: `$GORAG_HOME/state`, else
    /// `$XDG_DATA_HOME/gorag/state`, else `~/.local/share/gorag/state`, filled in when the
    /// configuration is loaded ([`super::default_state_dir`]); read it through
    /// [`StateSection::dir()`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// Write a full snapshot after this many logged updates (and on shutdown).
    pub snapshot_every: u64,
    /// …but not more often than this: a snapshot costs O(state), and the state grows with
    /// every new keyword, while replaying a minute of updates on restart is cheap.
    pub snapshot_min_interval_secs: f64,
    /// On SIGTERM/SIGINT, how long in-flight texts may take to finish.
    pub drain_timeout_secs: f64,
    /// sled's page cache, in MiB. sled's own default (1 GiB) would let a long-running service
    /// grow towards it; the engine keeps its state in memory anyway, so the cache only speeds
    /// up log appends and offset writes.
    pub cache_mb: u64,
}

impl Default for StateSection {
    fn default() -> Self {
        Self {
            dir: None,
            snapshot_every: 1000,
            snapshot_min_interval_secs: 60.0,
            drain_timeout_secs: 30.0,
            cache_mb: 64,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReviewSection {
    /// Address of the desk's page (and its `/metrics`, `/healthz`, `/readyz`).
    pub listen: String,
    /// The reviewers' logins: one `name:token` a line (a Kubernetes Secret). Required: the page
    /// shows texts, which may be personal data.
    pub tokens_file: Option<PathBuf>,
    /// How long a reviewer holds an item they were shown before others may take it.
    pub claim_seconds: f64,
    /// The share of decided predictions shown as audits (0 to 1): spread evenly over the
    /// stream by a hash of the text id.
    pub audit_share: f64,
    /// The most items waiting at once (past it, items wait in their topic: counted on
    /// `/metrics`, queued at the desk's next start).
    pub max_items: usize,
    /// The most bytes of texts kept while their prediction has not come yet.
    pub max_text_mb: usize,
    /// Mark the login cookie `Secure` (served only over HTTPS): set when an Ingress with TLS
    /// is in front.
    pub secure_cookie: bool,
    /// Behind a proxy or an Ingress, the header it puts the client's address in (such as
    /// `x-forwarded-for`; its last address, the one the proxy added, is read): wrong tokens are
    /// then counted per client rather than for the proxy's one address. Leave it unset when
    /// clients reach the desk directly: they could write the header themselves.
    pub client_address_header: Option<String>,
}

impl Default for ReviewSection {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9470".into(),
            tokens_file: None,
            claim_seconds: 300.0,
            audit_share: 0.02,
            max_items: 10_000,
            max_text_mb: 256,
            secure_cookie: false,
            client_address_header: None,
        }
    }
}

impl ReviewSection {
    /// The most `max_items` may be.
    pub const MOST_ITEMS: usize = 1_000_000;

    pub(super) fn check(&self, errors: &mut Vec<String>) {
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            errors.push(format!(
                "review.listen: {:?} is not an address such as 0.0.0.0:9470",
                self.listen
            ));
        }
        if !(self.claim_seconds.is_finite() && (1.0..=86_400.0).contains(&self.claim_seconds)) {
            errors.push("review.claim_seconds: must be between 1 and 86400".into());
        }
        if !(0.0..=1.0).contains(&self.audit_share) {
            errors.push("review.audit_share: must be between 0 and 1".into());
        }
        if !(1..=Self::MOST_ITEMS).contains(&self.max_items) {
            errors.push(format!(
                "review.max_items: must be between 1 and {}",
                Self::MOST_ITEMS
            ));
        }
        if !(1..=65_536).contains(&self.max_text_mb) {
            errors.push("review.max_text_mb: must be between 1 and 65536".into());
        }
        if let Some(name) = &self.client_address_header {
            if axum::http::HeaderName::from_bytes(name.trim().as_bytes()).is_err() {
                errors.push(format!(
                    "review.client_address_header: {} is not a header name such as \
                     x-forwarded-for",
                    crate::bounds::excerpt(name)
                ));
            }
        }
    }
}

impl super::ServeConfig {
    /// What the broker seam is given: the `[kafka]` and `[topics]` sections.
    pub fn broker(&self) -> crate::broker::BrokerSettings {
        crate::broker::BrokerSettings {
            kafka: self.kafka.clone(),
            topics: self.topics.clone(),
        }
    }
}
