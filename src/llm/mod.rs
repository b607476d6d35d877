//! The LLM client: any OpenAI-compatible chat endpoint through `async-openai`.
//!
//! Temperature 0, bounded answer length, a timeout per attempt, bounded concurrency, retries
//! with exponential back-off and jitter on 429 / 5xx / timeouts / transport errors / malformed
//! or empty answers (honouring `retry-after` within the call's retry time), a cap on the
//! response body, a circuit breaker in front of the endpoint, token accounting, and an optional
//! persistent response cache. async-openai's own retry layer is replaced by a single-attempt
//! transport so that every retry is ours: counted, bounded and visible. The API key never
//! prints, and goes over plain http only to this machine unless the operator says otherwise.

pub mod breaker;
pub mod cache;
mod detail;
pub mod error;
pub mod key;
pub mod retry;
pub mod setup;
mod transport;
pub mod usage;

pub use error::{AttemptError, LlmError};
pub use key::ApiKey;
pub use setup::{LlmSettings, SetupError};
pub use usage::{Usage, UsageSnapshot};

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_openai::config::OpenAIConfig;
use async_openai::middleware::HttpRequestFactory;
use async_openai::types::chat::{
    ChatChoice, ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
    CreateChatCompletionResponse,
};
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::engine::prompt::Prompt;
use breaker::{Admission, BreakerSettings, BreakerState};
use cache::{CachedAnswer, ResponseCache};
use error::classify_error;
use retry::{NextStep, RetryPolicy};

/// Largest response body read unless configured otherwise: 1 MiB. An answer is a label's name,
/// a one-sentence description or a few keywords (at most 64 tokens); with the `scored` choice's
/// 20 log-probability alternatives per token a completion's JSON stays under about 150 KiB, so
/// 1 MiB leaves room several times over while a runaway or hostile endpoint costs at most that
/// per call in flight.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: ApiKey,
    pub temperature: f32,
    /// Timeout of one attempt.
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Directory of the persistent response cache (None: no cache).
    pub cache_dir: Option<PathBuf>,
    /// Largest response body read; a larger one fails the call (not retried).
    pub max_response_bytes: usize,
    pub breaker: BreakerSettings,
    /// Send the key over plain http to a host that is not this machine.
    pub allow_insecure_key: bool,
}

impl LlmConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: ApiKey::default(),
            temperature: 0.0,
            timeout: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            concurrency: 2,
            cache_dir: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            breaker: BreakerSettings::default(),
            allow_insecure_key: false,
        }
    }
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Completion {
    pub text: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub cached: bool,
    /// Attempts made (0 when served from the cache).
    pub attempts: u32,
    /// The first answer token's alternatives with their log-probabilities, when the prompt
    /// asked for them and the endpoint gave them.
    pub first_token: Vec<(String, f64)>,
}

/// What [`LlmClient::check_endpoint`] asks (a scripted test endpoint answers it apart).
pub const ENDPOINT_CHECK: &str = "gorag endpoint check: say ok.";

#[derive(Clone)]
pub struct LlmClient {
    client: async_openai::Client<OpenAIConfig>,
    config: Arc<LlmConfig>,
    slots: Arc<Semaphore>,
    cache: Option<ResponseCache>,
    usage: Arc<Usage>,
}

impl fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Tells the circuit breaker how a call it let through ended, once; a probe dropped before
/// that (its task cancelled) frees the probe for the next call.
struct Verdict<'a> {
    usage: &'a Usage,
    probe: bool,
    given: bool,
}

impl Verdict<'_> {
    fn give<T>(mut self, result: &Result<T, LlmError>) {
        self.given = true;
        let breaker = &self.usage.breaker;
        match result {
            Ok(_) => breaker.succeeded(),
            Err(e) if e.endpoint_unavailable() => {
                if breaker.failed(Instant::now(), self.probe) {
                    Usage::count(&self.usage.breaker_openings);
                    tracing::warn!(
                        failures = breaker.settings().failures,
                        cooldown_secs = breaker.settings().cooldown.as_secs_f64(),
                        "LLM circuit breaker opened: texts are decided by retrieval until a \
                         probe call after the cool-down is answered"
                    );
                }
            }
            Err(e) if e.endpoint_answered() => breaker.succeeded(),
            Err(_) if self.probe => breaker.probe_abandoned(),
            Err(_) => {}
        }
    }
}

impl Drop for Verdict<'_> {
    fn drop(&mut self) {
        if self.probe && !self.given {
            self.usage.breaker.probe_abandoned();
        }
    }
}

impl LlmClient {
    /// A client for `config`. Refuses to send a key over plain http to another machine unless
    /// `allow_insecure_key` says so ([`key::check_key_transport`]).
    pub fn new(config: LlmConfig) -> Result<Self, LlmError> {
        if !config.api_key.is_empty() {
            key::check_key_transport(&config.base_url, config.allow_insecure_key)?;
        }
        let cache = match &config.cache_dir {
            Some(dir) => Some(ResponseCache::open(dir)?),
            None => None,
        };
        let openai = OpenAIConfig::new()
            .with_api_base(config.base_url.trim_end_matches('/'))
            .with_api_key(config.api_key.expose());
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| LlmError::InvalidRequest(error::bounded(&e.to_string())))?;
        let max_body = config.max_response_bytes;
        let client = async_openai::Client::with_config(openai).with_http_service(
            tower::service_fn(move |factory: HttpRequestFactory| {
                let http = http.clone();
                async move { transport::single_attempt(http, max_body, factory).await }
            }),
        );
        Ok(Self {
            client,
            slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
            usage: Arc::new(Usage::new(config.breaker)),
            config: Arc::new(config),
            cache,
        })
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    pub fn breaker_state(&self) -> BreakerState {
        self.usage.breaker_state()
    }

    pub async fn flush_cache(&self) -> Result<(), LlmError> {
        if let Some(cache) = &self.cache {
            cache.flush().await?;
        }
        Ok(())
    }

    /// Ask the endpoint once whether it answers: a one-token completion, never cached, no
    /// retry, at most 15 s, past the circuit breaker. Run at start, so that a wrong URL, a
    /// stopped server or a refused key is named before any work rather than after five retries
    /// per text.
    pub async fn check_endpoint(&self) -> Result<(), LlmError> {
        let prompt = Prompt {
            system: "Answer with one word.".into(),
            user: ENDPOINT_CHECK.into(),
            max_tokens: 1,
            top_logprobs: None,
        };
        let request = self.request(&prompt)?;
        let limit = self.config.timeout.min(Duration::from_secs(15));
        let last = match tokio::time::timeout(limit, self.client.chat().create(request)).await {
            // Any answer, even an empty one, shows the endpoint is there and takes the key.
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(error)) => {
                classify_error(error).map_err(|e| e.scrubbed(&self.config.api_key))?
            }
            Err(_) => AttemptError::Timeout(limit),
        };
        Err(LlmError::Exhausted { attempts: 1, last }.scrubbed(&self.config.api_key))
    }

    /// One chat completion, from the cache or the endpoint.
    pub async fn complete(&self, prompt: &Prompt) -> Result<Completion, LlmError> {
        self.usage.calls.fetch_add(1, Ordering::Relaxed);
        let key = ResponseCache::key(&self.config.model, self.config.temperature, prompt);
        if let Some(cache) = &self.cache {
            if let Some(hit) = cache.get(&key)? {
                self.usage.cache_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(Completion {
                    text: hit.text,
                    prompt_tokens: hit.prompt_tokens,
                    completion_tokens: hit.completion_tokens,
                    cached: true,
                    attempts: 0,
                    first_token: hit.first_token,
                });
            }
        }
        let result = self.complete_uncached(prompt).await;
        match &result {
            Ok(completion) => {
                if let Some(cache) = &self.cache {
                    cache.put(
                        &key,
                        &CachedAnswer {
                            text: completion.text.clone(),
                            prompt_tokens: completion.prompt_tokens,
                            completion_tokens: completion.completion_tokens,
                            first_token: completion.first_token.clone(),
                        },
                    )?;
                }
            }
            // Not sent: counted as skipped, not as a failed request.
            Err(LlmError::BreakerOpen(_)) => {}
            Err(error) => {
                Usage::count(&self.usage.failures);
                if matches!(error, LlmError::Oversized { .. }) {
                    Usage::count(&self.usage.oversized);
                }
            }
        }
        result.map_err(|e| e.scrubbed(&self.config.api_key))
    }

    /// Past the circuit breaker (or refused by it), then the attempts.
    async fn complete_uncached(&self, prompt: &Prompt) -> Result<Completion, LlmError> {
        let request = self.request(prompt)?;
        let probe = match self.usage.breaker.admit(Instant::now()) {
            Admission::Call => false,
            Admission::Probe => true,
            Admission::Refused(refusal) => {
                Usage::count(&self.usage.breaker_skipped);
                return Err(LlmError::BreakerOpen(refusal));
            }
        };
        let verdict = Verdict {
            usage: &self.usage,
            probe,
            given: false,
        };
        let result = self.attempts(request, probe).await;
        verdict.give(&result);
        result
    }

    /// The attempts of one call: retried on the failures worth it, until the retries or the
    /// call's retry time are used, or the breaker opens. A probe gets one attempt: it is there
    /// to learn whether the endpoint answers, while every other call is refused.
    async fn attempts(
        &self,
        request: CreateChatCompletionRequest,
        probe: bool,
    ) -> Result<Completion, LlmError> {
        let policy = RetryPolicy {
            max_retries: if probe {
                0
            } else {
                self.config.retry.max_retries
            },
            ..self.config.retry.clone()
        };
        let mut first_sent: Option<Instant> = None;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.usage.attempts.fetch_add(1, Ordering::Relaxed);
            let (outcome, timeout) = {
                let _slot = self
                    .slots
                    .acquire()
                    .await
                    .map_err(|e| LlmError::InvalidRequest(e.to_string()))?;
                let first = *first_sent.get_or_insert_with(Instant::now);
                // A retry has what is left of the call's retry time, at most a full timeout.
                let timeout = if attempt == 1 {
                    self.config.timeout
                } else {
                    self.config
                        .timeout
                        .min(policy.budget.saturating_sub(first.elapsed()))
                        .max(Duration::from_millis(1))
                };
                let outcome =
                    tokio::time::timeout(timeout, self.client.chat().create(request.clone())).await;
                (outcome, timeout)
            };
            let failure = match outcome {
                Err(_) => AttemptError::Timeout(timeout),
                Ok(Ok(response)) => match self.completion(response, attempt) {
                    Ok(completion) => return Ok(completion),
                    Err(failure) => failure,
                },
                Ok(Err(error)) => classify_error(error)?,
            };
            let retry_after = match &failure {
                AttemptError::Status { retry_after, .. } => *retry_after,
                _ => None,
            };
            let spent = first_sent.map(|t| t.elapsed()).unwrap_or_default();
            let delay = match policy.next_step(attempt - 1, retry_after, spent) {
                NextStep::Retry(delay) => delay,
                NextStep::RetriesUsed => {
                    return Err(LlmError::Exhausted {
                        attempts: attempt,
                        last: failure,
                    })
                }
                NextStep::OutOfTime => {
                    return Err(LlmError::OutOfTime {
                        attempts: attempt,
                        budget: policy.budget,
                        last: failure,
                    })
                }
            };
            if self.usage.breaker_state() != BreakerState::Closed {
                // Other calls found the endpoint gone: this one stops asking it too.
                return Err(LlmError::Exhausted {
                    attempts: attempt,
                    last: failure,
                });
            }
            tracing::warn!(
                attempt,
                reason = failure.reason(),
                delay_ms = delay.as_millis() as u64,
                "LLM attempt failed; retrying"
            );
            self.usage.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(delay).await;
        }
    }

    /// The chat request for `prompt`: system and user messages, this client's model and
    /// temperature, the prompt's token cap, and log-probabilities when it asks for them.
    fn request(&self, prompt: &Prompt) -> Result<CreateChatCompletionRequest, LlmError> {
        let messages: Vec<ChatCompletionRequestMessage> = vec![
            ChatCompletionRequestSystemMessage::from(prompt.system.as_str()).into(),
            ChatCompletionRequestUserMessage::from(prompt.user.as_str()).into(),
        ];
        let mut args = CreateChatCompletionRequestArgs::default();
        args.model(self.config.model.as_str())
            .messages(messages)
            .temperature(self.config.temperature)
            .max_completion_tokens(prompt.max_tokens);
        if let Some(top) = prompt.top_logprobs {
            args.logprobs(true).top_logprobs(top);
        }
        args.build()
            .map_err(|e| LlmError::InvalidRequest(error::bounded(&e.to_string())))
    }

    /// The answer of a response (its tokens counted), or `Empty` when it has no text.
    fn completion(
        &self,
        response: CreateChatCompletionResponse,
        attempt: u32,
    ) -> Result<Completion, AttemptError> {
        let first = response.choices.first();
        let text = first
            .and_then(|c| c.message.content.clone())
            .unwrap_or_default();
        if text.trim().is_empty() {
            return Err(AttemptError::Empty);
        }
        let first_token = first.map(first_token_alternatives).unwrap_or_default();
        let (prompt_tokens, completion_tokens) = response
            .usage
            .map(|u| (u.prompt_tokens, u.completion_tokens))
            .unwrap_or((0, 0));
        self.usage
            .prompt_tokens
            .fetch_add(u64::from(prompt_tokens), Ordering::Relaxed);
        self.usage
            .completion_tokens
            .fetch_add(u64::from(completion_tokens), Ordering::Relaxed);
        Ok(Completion {
            text: text.trim().to_string(),
            prompt_tokens,
            completion_tokens,
            cached: false,
            attempts: attempt,
            first_token,
        })
    }
}

/// The alternatives of the first content token that is not blank (an answer may open with a
/// space or newline token).
fn first_token_alternatives(choice: &ChatChoice) -> Vec<(String, f64)> {
    let tokens = choice
        .logprobs
        .as_ref()
        .and_then(|l| l.content.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    tokens
        .iter()
        .find(|t| !t.token.trim().is_empty())
        .map(|t| {
            t.top_logprobs
                .iter()
                .map(|alt| (alt.token.clone(), f64::from(alt.logprob)))
                .collect()
        })
        .unwrap_or_default()
}
