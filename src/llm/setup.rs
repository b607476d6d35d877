//! One way to build an LLM client from an operator's settings, for `gorag eval` and
//! `gorag serve` alike (same API-key lookup, same defaults, same checks).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::breaker::{BreakerSettings, DEFAULT_BREAKER_COOLDOWN_SECS, DEFAULT_BREAKER_FAILURES};
use super::retry::{DEFAULT_MAX_RETRY_SECS, MAX_RETRIES};
use super::{ApiKey, LlmClient, LlmConfig, LlmError, RetryPolicy, DEFAULT_MAX_RESPONSE_BYTES};

/// Timeout of one LLM attempt unless configured otherwise, in seconds.
pub const DEFAULT_TIMEOUT_SECS: f64 = 60.0;
/// Retries after a failed attempt unless configured otherwise.
pub const DEFAULT_RETRIES: u32 = 4;

/// What an operator sets about the LLM.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// OpenAI-compatible base URL, or `none` for retrieval-only predictions.
    pub url: String,
    pub model: String,
    /// File holding the API key; else `$GORAG_LLM_API_KEY`, else `$OPENAI_API_KEY`, else none.
    pub api_key_file: Option<PathBuf>,
    pub timeout_secs: f64,
    pub retries: u32,
    pub concurrency: usize,
    pub cache_dir: Option<PathBuf>,
    /// Largest response body read.
    pub max_response_bytes: usize,
    /// The time one call may take from its first attempt on, retries included.
    pub max_retry_secs: f64,
    /// Calls failed in a row that open the circuit breaker (0: never).
    pub breaker_failures: u32,
    pub breaker_cooldown_secs: f64,
    /// Send the key over plain http to a host that is not this machine.
    pub allow_insecure_key: bool,
}

impl LlmSettings {
    /// The defaults for everything but where the endpoint is.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            model: model.into(),
            api_key_file: None,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            retries: DEFAULT_RETRIES,
            concurrency: 2,
            cache_dir: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_retry_secs: DEFAULT_MAX_RETRY_SECS,
            breaker_failures: DEFAULT_BREAKER_FAILURES,
            breaker_cooldown_secs: DEFAULT_BREAKER_COOLDOWN_SECS,
            allow_insecure_key: false,
        }
    }

    /// What is wrong with these settings, each problem named by its configuration key, without
    /// reading the key (`gorag serve` checks this with the rest of its configuration).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(self.timeout_secs) {
            problems.push("llm.timeout_secs: must be a positive number of seconds".into());
        }
        if self.retries > MAX_RETRIES {
            problems.push(format!(
                "llm.retries: {} is more than {MAX_RETRIES}; past that a retry only holds a text \
                 longer against an endpoint that keeps failing (llm.max_retry_secs bounds a \
                 call's time)",
                self.retries
            ));
        }
        if !positive(self.max_retry_secs) {
            problems.push("llm.max_retry_secs: must be a positive number of seconds".into());
        }
        if self.max_response_bytes == 0 {
            problems.push("llm.max_response_bytes: must be at least 1".into());
        }
        if !positive(self.breaker_cooldown_secs) {
            problems.push("llm.breaker_cooldown_secs: must be a positive number of seconds".into());
        }
        if self.enabled() && self.api_key_file.is_some() {
            if let Err(error) = super::key::check_key_transport(&self.url, self.allow_insecure_key)
            {
                problems.push(format!("llm.url: {error}"));
            }
        }
        problems
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("reading the API key file {path}: {source}")]
    ApiKeyFile {
        path: String,
        source: std::io::Error,
    },
    #[error("the LLM timeout must be a positive number of seconds, not {0}")]
    Timeout(f64),
    #[error("LLM settings: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error(transparent)]
    Client(#[from] LlmError),
}

impl LlmSettings {
    pub fn enabled(&self) -> bool {
        !self.url.eq_ignore_ascii_case("none")
    }

    /// The client, or None when the LLM is off (`url = none`).
    pub fn client(&self) -> Result<Option<LlmClient>, SetupError> {
        if !self.enabled() {
            return Ok(None);
        }
        if !(self.timeout_secs.is_finite() && self.timeout_secs > 0.0) {
            return Err(SetupError::Timeout(self.timeout_secs));
        }
        let problems = self.problems();
        if !problems.is_empty() {
            return Err(SetupError::Invalid(problems));
        }
        let mut config = LlmConfig::new(self.url.clone(), self.model.clone());
        // The key from wherever it comes (a file, the environment) goes through the same
        // transport check in `LlmClient::new`.
        config.api_key = ApiKey::new(api_key(self.api_key_file.as_deref())?);
        config.allow_insecure_key = self.allow_insecure_key;
        config.timeout = Duration::from_secs_f64(self.timeout_secs);
        config.retry = RetryPolicy {
            max_retries: self.retries,
            budget: Duration::from_secs_f64(self.max_retry_secs),
            ..RetryPolicy::default()
        };
        config.concurrency = self.concurrency.max(1);
        config.cache_dir = self.cache_dir.clone();
        config.max_response_bytes = self.max_response_bytes;
        config.breaker = BreakerSettings {
            failures: self.breaker_failures,
            cooldown: Duration::from_secs_f64(self.breaker_cooldown_secs),
        };
        Ok(Some(LlmClient::new(config)?))
    }
}

fn api_key(file: Option<&Path>) -> Result<String, SetupError> {
    match file {
        Some(path) => std::fs::read_to_string(path)
            .map(|key| key.trim().to_string())
            .map_err(|source| SetupError::ApiKeyFile {
                path: path.display().to_string(),
                source,
            }),
        None => Ok(std::env::var("GORAG_LLM_API_KEY")
            .or_else(|_| std::env::var("OPENAI_API_KEY"))
            .unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str) -> LlmSettings {
        LlmSettings::new(url, "m")
    }

    #[test]
    fn none_means_no_client_and_bad_settings_are_refused() {
        assert!(settings("none").client().unwrap().is_none());
        assert!(settings("http://127.0.0.1:1/v1")
            .client()
            .unwrap()
            .is_some());
        let mut bad = settings("http://127.0.0.1:1/v1");
        bad.timeout_secs = 0.0;
        assert!(matches!(bad.client(), Err(SetupError::Timeout(_))));
        bad.timeout_secs = 1.0;
        bad.api_key_file = Some("/nonexistent/gorag-key".into());
        let error = bad.client().unwrap_err().to_string();
        assert!(error.contains("/nonexistent/gorag-key"), "{error}");
    }

    #[test]
    fn bounds_are_checked_each_by_its_key() {
        let mut bad = settings("http://127.0.0.1:1/v1");
        bad.retries = MAX_RETRIES + 1;
        bad.max_retry_secs = f64::NAN;
        bad.max_response_bytes = 0;
        bad.breaker_cooldown_secs = -1.0;
        let problems = bad.problems();
        for key in [
            "llm.retries: 11 is more than 10",
            "llm.max_retry_secs",
            "llm.max_response_bytes",
            "llm.breaker_cooldown_secs",
        ] {
            assert!(
                problems.iter().any(|p| p.starts_with(key)),
                "{key}: {problems:?}"
            );
        }
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(matches!(bad.client(), Err(SetupError::Invalid(p)) if p.len() == 4));
        let mut fine = settings("http://127.0.0.1:1/v1");
        fine.retries = MAX_RETRIES;
        fine.breaker_failures = 0;
        assert!(fine.problems().is_empty());
    }

    #[test]
    fn a_key_file_for_a_plain_http_host_elsewhere_is_refused_without_the_opt_in() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, "sk-test-secret\n").unwrap();
        let mut remote = settings("http://10.0.0.1:8000/v1");
        remote.api_key_file = Some(key.clone());
        let problems = remote.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("llm.allow_insecure_key = true"));
        assert!(!problems[0].contains("sk-test-secret"));
        let error = remote.client().unwrap_err().to_string();
        assert!(error.contains("http://10.0.0.1:8000"), "{error}");
        remote.allow_insecure_key = true;
        assert!(remote.client().unwrap().is_some());
        // Loopback, or https, needs no opt-in.
        for url in ["http://127.0.0.1:8000/v1", "https://10.0.0.1/v1"] {
            let mut fine = settings(url);
            fine.api_key_file = Some(key.clone());
            assert!(fine.client().unwrap().is_some(), "{url}");
        }
        // Without a key there is nothing to protect.
        assert!(settings("http://10.0.0.1:8000/v1").problems().is_empty());
    }
}
