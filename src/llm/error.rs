//! How an LLM call fails: the errors a caller sees, the failures of one attempt, and the sorting
//! of async-openai's errors into "retry" and "give up now".

use std::time::Duration;

use async_openai::error::OpenAIError;

use super::breaker::Refusal;
use super::cache::CacheError;
use super::key::{ApiKey, KeyTransportError};
use super::transport::{OversizedResponse, RetryableStatus};

pub use super::detail::{bounded, MAX_DETAIL_CHARS};

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM gave up after {attempts} attempts; last error: {last}")]
    Exhausted { attempts: u32, last: AttemptError },
    #[error(
        "LLM gave up after {attempts} attempts: its retry time of {:.0} s was spent \
         (llm.max_retry_secs); last error: {last}",
        budget.as_secs_f64()
    )]
    OutOfTime {
        attempts: u32,
        budget: Duration,
        last: AttemptError,
    },
    #[error("LLM request rejected ({status}): {message}")]
    Rejected { status: u16, message: String },
    #[error(
        "the LLM's response is larger than llm.max_response_bytes ({limit} bytes{}); not \
         retried, the same request would get the same answer",
        declared.map(|d| format!("; it declared {d}")).unwrap_or_default()
    )]
    Oversized { limit: usize, declared: Option<u64> },
    #[error("LLM not asked: {0}")]
    BreakerOpen(Refusal),
    #[error(transparent)]
    KeyTransport(#[from] KeyTransportError),
    #[error("LLM request could not be built: {0}")]
    InvalidRequest(String),
    #[error(transparent)]
    Cache(#[from] CacheError),
}

impl LlmError {
    /// A short machine-readable reason (metrics labels, dead-letter headers).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Exhausted { last, .. } | Self::OutOfTime { last, .. } => last.reason(),
            Self::Rejected { .. } => "rejected",
            Self::Oversized { .. } => "oversized_response",
            Self::BreakerOpen(_) => "breaker_open",
            Self::KeyTransport(_) => "insecure_key",
            Self::InvalidRequest(_) => "invalid_request",
            Self::Cache(_) => "cache",
        }
    }

    /// The same error with every copy of `key` in what the endpoint sent replaced by `***`.
    pub(super) fn scrubbed(self, key: &ApiKey) -> Self {
        match self {
            Self::Exhausted { attempts, last } => Self::Exhausted {
                attempts,
                last: last.scrubbed(key),
            },
            Self::OutOfTime {
                attempts,
                budget,
                last,
            } => Self::OutOfTime {
                attempts,
                budget,
                last: last.scrubbed(key),
            },
            Self::Rejected { status, message } => Self::Rejected {
                status,
                message: key.scrub(&message),
            },
            Self::InvalidRequest(text) => Self::InvalidRequest(key.scrub(&text)),
            other => other,
        }
    }

    /// Whether the endpoint was not there for this call (it timed out, was unreachable,
    /// overloaded or rate-limited past the retries): what the circuit breaker counts. An answer
    /// of any kind, even a refusal or a malformed one, shows the endpoint is there.
    pub fn endpoint_unavailable(&self) -> bool {
        match self {
            Self::Exhausted { last, .. } | Self::OutOfTime { last, .. } => matches!(
                last,
                AttemptError::Timeout(_) | AttemptError::Status { .. } | AttemptError::Transport(_)
            ),
            _ => false,
        }
    }

    /// Whether the endpoint answered this call at all (a refusal, a malformed or oversized
    /// answer): the circuit breaker counts such a call as a sign of life.
    pub fn endpoint_answered(&self) -> bool {
        match self {
            Self::Rejected { .. } | Self::Oversized { .. } => true,
            Self::Exhausted { last, .. } | Self::OutOfTime { last, .. } => {
                matches!(last, AttemptError::Malformed(_) | AttemptError::Empty)
            }
            _ => false,
        }
    }
}

/// Why one attempt failed in a way worth retrying.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("HTTP {status}: {body}")]
    Status {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    #[error("transport: {0}")]
    Transport(String),
    #[error("malformed response: {0}")]
    Malformed(String),
    #[error("empty answer")]
    Empty,
}

impl AttemptError {
    fn scrubbed(self, key: &ApiKey) -> Self {
        match self {
            Self::Status {
                status,
                retry_after,
                body,
            } => Self::Status {
                status,
                retry_after,
                body: key.scrub(&body),
            },
            Self::Transport(text) => Self::Transport(key.scrub(&text)),
            Self::Malformed(text) => Self::Malformed(key.scrub(&text)),
            other => other,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            Self::Timeout(_) => "timeout",
            Self::Status { status: 429, .. } => "rate_limited",
            Self::Status { .. } => "server_error",
            Self::Transport(_) => "transport",
            Self::Malformed(_) => "malformed",
            Self::Empty => "empty_answer",
        }
    }
}

/// Sort an async-openai error into "retry" (Ok) or "give up now" (Err). Every text taken from
/// the endpoint is bounded ([`bounded`]).
pub(super) fn classify_error(error: OpenAIError) -> Result<AttemptError, LlmError> {
    match error {
        OpenAIError::Boxed(boxed) => {
            let boxed = match boxed.downcast::<OversizedResponse>() {
                Ok(oversized) => {
                    return Err(LlmError::Oversized {
                        limit: oversized.limit,
                        declared: oversized.declared,
                    })
                }
                Err(other) => other,
            };
            match boxed.downcast::<RetryableStatus>() {
                Ok(status) => Ok(AttemptError::Status {
                    status: status.status,
                    retry_after: status.retry_after,
                    body: status.body,
                }),
                Err(other) => Ok(AttemptError::Transport(bounded(&other.to_string()))),
            }
        }
        OpenAIError::Reqwest(e) => Ok(AttemptError::Transport(bounded(&e.to_string()))),
        OpenAIError::JSONDeserialize(e, _) => Ok(AttemptError::Malformed(bounded(&e.to_string()))),
        OpenAIError::StreamError(e) => Ok(AttemptError::Transport(bounded(&e.to_string()))),
        OpenAIError::ApiError(api) => {
            let status = api.status_code.as_u16();
            let message = bounded(&api.api_error.message);
            if status == 429 || status >= 500 {
                Ok(AttemptError::Status {
                    status,
                    retry_after: None,
                    body: message,
                })
            } else {
                Err(LlmError::Rejected { status, message })
            }
        }
        other => Err(LlmError::InvalidRequest(bounded(&other.to_string()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_bounded_on_a_character_boundary() {
        let long = "é".repeat(2000);
        let cut = bounded(&long);
        assert_eq!(cut.chars().count(), MAX_DETAIL_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn the_breaker_counts_only_an_absent_endpoint() {
        let timeout = LlmError::Exhausted {
            attempts: 1,
            last: AttemptError::Timeout(Duration::from_secs(1)),
        };
        assert!(timeout.endpoint_unavailable() && !timeout.endpoint_answered());
        let malformed = LlmError::OutOfTime {
            attempts: 2,
            budget: Duration::from_secs(1),
            last: AttemptError::Malformed("x".into()),
        };
        assert!(!malformed.endpoint_unavailable() && malformed.endpoint_answered());
        let oversized = LlmError::Oversized {
            limit: 1,
            declared: None,
        };
        assert!(!oversized.endpoint_unavailable() && oversized.endpoint_answered());
        assert_eq!(oversized.reason(), "oversized_response");
        let invalid = LlmError::InvalidRequest("x".into());
        assert!(!invalid.endpoint_unavailable() && !invalid.endpoint_answered());
    }
}
