//! One way to build an LLM client from an operator's settings, for `gorag eval` and
//! `gorag serve` alike (same API-key lookup, same defaults, same checks).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{ApiKey, LlmClient, LlmConfig, LlmError, RetryPolicy};

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
        let mut config = LlmConfig::new(self.url.clone(), self.model.clone());
        config.api_key = ApiKey::new(api_key(self.api_key_file.as_deref())?);
        config.timeout = Duration::from_secs_f64(self.timeout_secs);
        config.retry = RetryPolicy {
            max_retries: self.retries,
            ..RetryPolicy::default()
        };
        config.concurrency = self.concurrency.max(1);
        config.cache_dir = self.cache_dir.clone();
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
        LlmSettings {
            url: url.into(),
            model: "m".into(),
            api_key_file: None,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            retries: DEFAULT_RETRIES,
            concurrency: 2,
            cache_dir: None,
        }
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
}
