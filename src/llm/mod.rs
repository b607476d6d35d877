//! The LLM client: any OpenAI-compatible chat endpoint through `async-openai`.
//!
//! Temperature 0, bounded answer length, a timeout per attempt, bounded concurrency, retries
//! with exponential back-off and jitter on 429 / 5xx / timeouts / transport errors / malformed
//! or empty answers (honouring `retry-after`), token accounting, and an optional persistent
//! response cache. async-openai's own retry layer is replaced by a single-attempt transport so
//! that every retry is ours: counted, bounded and visible.

pub mod cache;
pub mod retry;
pub mod setup;

pub use setup::{LlmSettings, SetupError};

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use async_openai::types::chat::{
    ChatChoice, ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
    CreateChatCompletionResponse,
};
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::engine::prompt::Prompt;
use cache::{CacheError, CachedAnswer, ResponseCache};
use retry::{parse_retry_after, RetryPolicy};

/// An API key that never shows up in logs or debug output.
#[derive(Clone, Default)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() {
            "<none>"
        } else {
            "<redacted>"
        })
    }
}

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
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM gave up after {attempts} attempts; last error: {last}")]
    Exhausted { attempts: u32, last: AttemptError },
    #[error("LLM request rejected ({status}): {message}")]
    Rejected { status: u16, message: String },
    #[error("LLM request could not be built: {0}")]
    InvalidRequest(String),
    #[error(transparent)]
    Cache(#[from] CacheError),
}

impl LlmError {
    /// A short machine-readable reason (metrics labels, dead-letter headers).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Exhausted { last, .. } => last.reason(),
            Self::Rejected { .. } => "rejected",
            Self::InvalidRequest(_) => "invalid_request",
            Self::Cache(_) => "cache",
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

/// A 429 or 5xx seen by the transport, with the headers async-openai would drop.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}")]
struct RetryableStatus {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
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

/// Running totals, shared by every clone of a client.
#[derive(Debug, Default)]
pub struct Usage {
    pub calls: AtomicU64,
    pub attempts: AtomicU64,
    pub retries: AtomicU64,
    pub failures: AtomicU64,
    pub cache_hits: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UsageSnapshot {
    pub calls: u64,
    pub attempts: u64,
    pub retries: u64,
    pub failures: u64,
    pub cache_hits: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    pub fn snapshot(&self) -> UsageSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        UsageSnapshot {
            calls: get(&self.calls),
            attempts: get(&self.attempts),
            retries: get(&self.retries),
            failures: get(&self.failures),
            cache_hits: get(&self.cache_hits),
            prompt_tokens: get(&self.prompt_tokens),
            completion_tokens: get(&self.completion_tokens),
        }
    }
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

impl LlmClient {
    pub fn new(config: LlmConfig) -> Result<Self, LlmError> {
        let cache = match &config.cache_dir {
            Some(dir) => Some(ResponseCache::open(dir)?),
            None => None,
        };
        let openai = OpenAIConfig::new()
            .with_api_base(config.base_url.trim_end_matches('/'))
            .with_api_key(config.api_key.expose());
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| LlmError::InvalidRequest(e.to_string()))?;
        let client = async_openai::Client::with_config(openai).with_http_service(
            tower::service_fn(move |factory: HttpRequestFactory| {
                let http = http.clone();
                async move { single_attempt(http, factory).await }
            }),
        );
        Ok(Self {
            client,
            slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
            config: Arc::new(config),
            cache,
            usage: Arc::new(Usage::default()),
        })
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    pub async fn flush_cache(&self) -> Result<(), LlmError> {
        if let Some(cache) = &self.cache {
            cache.flush().await?;
        }
        Ok(())
    }

    /// Ask the endpoint once whether it answers: a one-token completion, never cached, no
    /// retry, at most 15 s. Run at start, so that a wrong URL, a stopped server or a refused
    /// key is named before any work rather than after five retries per text.
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
            Ok(Err(error)) => classify_error(error)?,
            Err(_) => AttemptError::Timeout(limit),
        };
        Err(LlmError::Exhausted { attempts: 1, last })
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
            Err(_) => {
                self.usage.failures.fetch_add(1, Ordering::Relaxed);
            }
        }
        result
    }

    async fn complete_uncached(&self, prompt: &Prompt) -> Result<Completion, LlmError> {
        let request = self.request(prompt)?;
        let policy = &self.config.retry;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.usage.attempts.fetch_add(1, Ordering::Relaxed);
            let outcome = {
                let _slot = self
                    .slots
                    .acquire()
                    .await
                    .map_err(|e| LlmError::InvalidRequest(e.to_string()))?;
                tokio::time::timeout(
                    self.config.timeout,
                    self.client.chat().create(request.clone()),
                )
                .await
            };
            let failure = match outcome {
                Err(_) => AttemptError::Timeout(self.config.timeout),
                Ok(Ok(response)) => match self.completion(response, attempt) {
                    Ok(completion) => return Ok(completion),
                    Err(failure) => failure,
                },
                Ok(Err(error)) => classify_error(error)?,
            };
            if attempt > policy.max_retries {
                return Err(LlmError::Exhausted {
                    attempts: attempt,
                    last: failure,
                });
            }
            let retry_after = match &failure {
                AttemptError::Status { retry_after, .. } => *retry_after,
                _ => None,
            };
            let delay = policy.delay(attempt - 1, retry_after);
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
            .map_err(|e| LlmError::InvalidRequest(e.to_string()))
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

/// Sort an async-openai error into "retry" (Ok) or "give up now" (Err).
fn classify_error(error: OpenAIError) -> Result<AttemptError, LlmError> {
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<RetryableStatus>() {
            Ok(status) => Ok(AttemptError::Status {
                status: status.status,
                retry_after: status.retry_after,
                body: status.body,
            }),
            Err(other) => Ok(AttemptError::Transport(other.to_string())),
        },
        OpenAIError::Reqwest(e) => Ok(AttemptError::Transport(e.to_string())),
        OpenAIError::JSONDeserialize(e, _) => Ok(AttemptError::Malformed(e.to_string())),
        OpenAIError::StreamError(e) => Ok(AttemptError::Transport(e.to_string())),
        OpenAIError::ApiError(api) => {
            let status = api.status_code.as_u16();
            if status == 429 || status >= 500 {
                Ok(AttemptError::Status {
                    status,
                    retry_after: None,
                    body: api.api_error.message,
                })
            } else {
                Err(LlmError::Rejected {
                    status,
                    message: api.api_error.message,
                })
            }
        }
        other => Err(LlmError::InvalidRequest(other.to_string())),
    }
}

/// One HTTP attempt. 429 and 5xx become a [`RetryableStatus`] carrying `retry-after`, which
/// async-openai's own error type would not keep.
async fn single_attempt(
    http: reqwest::Client,
    factory: HttpRequestFactory,
) -> Result<reqwest::Response, OpenAIError> {
    let request = factory.build().await?;
    let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
    let status = response.status().as_u16();
    if status == 429 || response.status().is_server_error() {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = response.text().await.unwrap_or_default();
        let body: String = body.chars().take(512).collect();
        return Err(OpenAIError::Boxed(Box::new(RetryableStatus {
            status,
            retry_after,
            body,
        })));
    }
    Ok(response)
}
