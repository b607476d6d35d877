//! The async shell around one GORAG step sequence: keywords → retrieval → LLM → decision.
//!
//! The engine stays pure; this module owns the LLM calls and their failure policy: an LLM that
//! fails after its bounded retries never blocks a text — the decision falls back to the
//! graph-only prediction and says why. Online indexing is left to the caller (the evaluation
//! protocol turns it off for earlier rounds' texts; the service applies it in log order).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::StreamExt;
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::engine::embedding::{EncodeError, TextEncoder};
use crate::engine::keywords::KeywordMode;
use crate::engine::prompt::{self, Prompt};
use crate::engine::{Analysis, Decision, Engine, EngineError, NewLabel, Retrieval, Verdict};
use crate::llm::{Completion, LlmClient};

/// Longest label description kept, in characters.
const MAX_DESCRIPTION_CHARS: usize = 400;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageTimes {
    pub keywords: Duration,
    pub retrieve: Duration,
    pub llm: Duration,
}

#[derive(Debug, Clone)]
pub struct Classified {
    pub analysis: Analysis,
    pub retrieval: Retrieval,
    pub decision: Decision,
    /// What the decision comes to (status, learned as), read once.
    pub verdict: Verdict,
    /// Whether the LLM was asked to choose (retrieval's own confidence was below `ask_below`).
    pub llm_asked: bool,
    /// Whether its answer changed the label from retrieval's own decision.
    pub llm_changed: bool,
    /// The LLM's raw answer, when it gave one.
    pub raw_answer: Option<String>,
    /// Its first token's alternatives with log-probabilities (`scored` choice).
    pub alternatives: Vec<(String, f64)>,
    /// Why the LLM could not answer, as a short reason (`server_error`, `timeout`, …); the
    /// decision then comes from the graph.
    pub llm_failure: Option<String>,
    /// The same with the last error's detail (`reason: detail`), as predictions report it.
    pub llm_error: Option<String>,
    pub llm_calls: u32,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub times: StageTimes,
}

#[derive(Debug, Clone)]
pub struct TextSteps {
    llm: Option<LlmClient>,
    keyword_mode: KeywordMode,
    /// One sentence encoding per core at a time (shared by the clones): texts beyond that wait
    /// for a permit holding no thread, and are dropped with their task.
    encodings: Arc<Semaphore>,
}

impl TextSteps {
    /// `llm: None` gives retrieval-only (graph) predictions.
    pub fn new(llm: Option<LlmClient>, keyword_mode: KeywordMode) -> Self {
        Self {
            llm,
            keyword_mode,
            encodings: Arc::new(Semaphore::new(crate::threads::cores())),
        }
    }

    pub fn llm(&self) -> Option<&LlmClient> {
        self.llm.as_ref()
    }

    /// Ask the LLM for a short description of every named label that has none, `at_once` at a
    /// time (and never more than the client's `concurrency`): a round's descriptions take its
    /// share of the time, not one call after another. Each description is written as it
    /// arrives, so a caller that stops waiting keeps those already written. A failed call
    /// leaves that label without a description (its examples still index it). Returns the
    /// number of LLM calls made.
    pub async fn describe_labels(&self, labels: &mut [NewLabel], at_once: usize) -> u32 {
        let Some(llm) = &self.llm else {
            return 0;
        };
        let calls: Vec<_> = labels
            .iter_mut()
            .filter(|label| label.description.is_none())
            .filter_map(|label| {
                let prompt = prompt::label_description(label.name.as_deref()?);
                Some(async move {
                    match llm.complete(&prompt).await {
                        Ok(answer) => {
                            let text = prompt::clip(answer.text.trim(), MAX_DESCRIPTION_CHARS);
                            label.description = Some(text.to_string());
                        }
                        Err(error) => {
                            tracing::warn!(label = %label.id, %error, "no description for label");
                        }
                    }
                })
            })
            .collect();
        let made = calls.len() as u32;
        let mut calls = futures::stream::iter(calls).buffer_unordered(at_once.max(1));
        while calls.next().await.is_some() {}
        made
    }

    /// How many of a round's descriptions the service asks at once: the client's
    /// `concurrency` less one, so that the texts already begun keep a call of their own (the
    /// client serves its calls first come, first served).
    pub fn describing_beside_texts(&self) -> usize {
        self.llm
            .as_ref()
            .map_or(1, |llm| llm.config().concurrency.saturating_sub(1).max(1))
    }

    /// Whether the keywords come from the LLM (`--keywords llm`): then [`Self::llm_keywords`]
    /// runs before [`Self::prepare`].
    pub fn asks_for_keywords(&self) -> bool {
        self.keyword_mode == KeywordMode::Llm && self.llm.is_some()
    }

    /// Whether a text has a [`Preliminary`] step before [`Self::prepare`]: the LLM's keywords,
    /// the query's sentence vector, or both.
    pub fn has_preliminary(&self, engine: &Engine) -> bool {
        self.asks_for_keywords() || engine.analyzer().query_encoder().is_some()
    }

    /// Step 1: what may take a while before the candidates — the LLM's keywords (LLM keyword
    /// mode) and the query's sentence vector (the embedding signal, on a blocking thread), side
    /// by side. No engine borrowed: the service runs it as a task, off its loop.
    pub async fn preliminary(
        &self,
        text: String,
        max_chars: usize,
        encoder: Option<Arc<dyn TextEncoder>>,
    ) -> Preliminary {
        let started = Instant::now();
        let encoding = async {
            let encoder = encoder?;
            let text = text.clone();
            // Never closed; were it, the text would be classified on its words alone.
            let permit = self.encodings.clone().acquire_owned().await.ok()?;
            let encoded = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                encoder.encode(&text)
            })
            .instrument(tracing::info_span!("embed"))
            .await;
            Some(encoded.unwrap_or_else(|error| {
                Err(EncodeError(format!("the encoding task failed: {error}")))
            }))
        };
        let (keywords, vector) = tokio::join!(self.llm_keywords(&text, max_chars), encoding);
        Preliminary {
            keywords,
            vector,
            elapsed: started.elapsed(),
        }
    }

    /// Step 1, LLM keyword mode only: the LLM's keywords for `text` (clipped to
    /// `max_chars`). No engine needed, so the service runs it as a task.
    pub async fn llm_keywords(&self, text: &str, max_chars: usize) -> KeywordAnswer {
        let Some(llm) = self.llm.as_ref().filter(|_| self.asks_for_keywords()) else {
            return KeywordAnswer::default();
        };
        let started = Instant::now();
        let clipped = prompt::clip(text, max_chars);
        match llm.complete(&prompt::keyword_extraction(clipped)).await {
            Ok(answer) => KeywordAnswer {
                text: Some(answer.text),
                calls: 1,
                prompt_tokens: answer.prompt_tokens,
                completion_tokens: answer.completion_tokens,
                elapsed: started.elapsed(),
            },
            Err(error) => {
                tracing::warn!(%error, "LLM keyword extraction failed; using TF-IDF keywords");
                KeywordAnswer {
                    calls: 1,
                    elapsed: started.elapsed(),
                    ..KeywordAnswer::default()
                }
            }
        }
    }

    /// Step 2: keywords, candidates and the prompt for the LLM's choice (None without an
    /// LLM). Synchronous: it reads the engine.
    pub fn prepare(
        &self,
        engine: &Engine,
        text: &str,
        preliminary: Preliminary,
    ) -> Result<Prepared, EngineError> {
        // Spans of the caller's current span (the service's text span).
        let started = Instant::now();
        let keywords = &preliminary.keywords;
        let mut analysis = tracing::info_span!("keywords").in_scope(|| match &keywords.text {
            Some(answer) => engine.analyzer().analyze_with_llm_keywords(text, answer),
            None => engine.analyzer().analyze(text),
        });
        // The embedding signal (when on) is part of the text's analysis; without a vector the
        // text is still classified, on lexical evidence alone.
        match preliminary.vector {
            Some(Ok(vector)) => analysis.embedding = Some(vector),
            Some(Err(error)) => {
                tracing::warn!(%error, "no sentence vector for this text; lexical retrieval only")
            }
            None => {}
        }
        // The preliminary step's time (LLM keywords, encoding) counts as the keywords stage.
        let keywords_time = preliminary.elapsed + started.elapsed();
        let started = Instant::now();
        let retrieval =
            tracing::info_span!("retrieve").in_scope(|| engine.retriever().retrieve(&analysis))?;
        // The LLM is asked only where retrieval alone is not confident enough.
        let prompt = self
            .llm
            .as_ref()
            .filter(|_| engine.decisions().should_ask(&retrieval))
            .map(|_| {
                engine
                    .decisions()
                    .classification_prompt(&retrieval, text, &analysis)
            });
        Ok(Prepared {
            analysis,
            retrieval,
            prompt,
            times: StageTimes {
                keywords: keywords_time,
                retrieve: started.elapsed(),
                llm: Duration::ZERO,
            },
            llm_calls: keywords.calls,
            prompt_tokens: keywords.prompt_tokens,
            completion_tokens: keywords.completion_tokens,
        })
    }

    /// Step 3: the LLM's answer to a prepared prompt (no LLM: no answer, no failure). No engine
    /// needed.
    pub async fn answer(&self, prompt: Option<&Prompt>) -> Answer {
        let (Some(llm), Some(prompt)) = (&self.llm, prompt) else {
            return Answer::default();
        };
        let started = Instant::now();
        let result = llm.complete(prompt).await;
        let elapsed = started.elapsed();
        match result {
            Ok(completion) => Answer {
                completion: Some(completion),
                failure: None,
                elapsed,
            },
            Err(error) => {
                tracing::warn!(%error, "LLM classification failed; graph-only prediction");
                Answer {
                    completion: None,
                    failure: Some(LlmFailure {
                        reason: error.reason().to_string(),
                        detail: error.to_string(),
                    }),
                    elapsed,
                }
            }
        }
    }

    /// Step 4: the decision, from retrieval and the LLM's answer.
    pub fn conclude(engine: &Engine, prepared: Prepared, answer: Answer) -> Classified {
        let Prepared {
            analysis,
            retrieval,
            prompt,
            mut times,
            mut llm_calls,
            mut prompt_tokens,
            mut completion_tokens,
        } = prepared;
        let llm_asked = prompt.is_some();
        if llm_asked && (answer.completion.is_some() || answer.failure.is_some()) {
            llm_calls += 1;
            times.llm = answer.elapsed;
        }
        let (raw_answer, alternatives) = match answer.completion {
            Some(completion) => {
                prompt_tokens += completion.prompt_tokens;
                completion_tokens += completion.completion_tokens;
                (Some(completion.text), completion.first_token)
            }
            None => (None, Vec::new()),
        };
        let decision = engine.decisions().decide_with_alternatives(
            &retrieval,
            raw_answer.as_deref(),
            &alternatives,
        );
        let verdict = engine.decisions().verdict(&retrieval, &decision);
        let llm_changed = raw_answer.is_some()
            && decision.label != engine.decisions().decide(&retrieval, None).label;
        Classified {
            analysis,
            retrieval,
            decision,
            verdict,
            llm_asked,
            llm_changed,
            raw_answer,
            alternatives,
            llm_failure: answer.failure.as_ref().map(|f| f.reason.clone()),
            llm_error: answer
                .failure
                .map(|f| format!("{}: {}", f.reason, f.detail)),
            llm_calls,
            prompt_tokens,
            completion_tokens,
            times,
        }
    }

    /// The four steps in a row (`gorag eval`; the service runs them apart, the LLM steps as
    /// tasks).
    pub async fn classify(&self, engine: &Engine, text: &str) -> Result<Classified, EngineError> {
        let max_chars = engine.config().max_prompt_chars;
        let preliminary = self
            .preliminary(
                text.to_string(),
                max_chars,
                engine.analyzer().query_encoder(),
            )
            .await;
        let prepared = self.prepare(engine, text, preliminary)?;
        let answer = self.answer(prepared.prompt.as_ref()).await;
        Ok(Self::conclude(engine, prepared, answer))
    }
}

/// The LLM's keywords for a text (`text: None` in TF-IDF mode, or when the call failed).
#[derive(Debug, Clone, Default)]
pub struct KeywordAnswer {
    pub text: Option<String>,
    pub calls: u32,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub elapsed: Duration,
}

/// What a text needs before its candidates that may take a while ([`TextSteps::preliminary`]).
#[derive(Debug, Clone, Default)]
pub struct Preliminary {
    pub keywords: KeywordAnswer,
    /// The query's sentence vector; None without the embedding signal.
    pub vector: Option<Result<Vec<f32>, EncodeError>>,
    /// Wall time of the whole step.
    pub elapsed: Duration,
}

/// A text ready for the LLM's choice.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub analysis: Analysis,
    pub retrieval: Retrieval,
    /// The classification prompt; None without an LLM.
    pub prompt: Option<Prompt>,
    pub times: StageTimes,
    pub llm_calls: u32,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
}

/// The LLM's answer to a classification prompt, or why there is none.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub completion: Option<Completion>,
    /// Set when the LLM failed after its retries.
    pub failure: Option<LlmFailure>,
    pub elapsed: Duration,
}

/// Why the LLM gave no answer.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmFailure {
    /// Short and stable (`server_error`, `timeout`, …: [`crate::llm::LlmError::reason`]).
    pub reason: String,
    pub detail: String,
}

impl LlmFailure {
    /// A failure that is not the LLM's own (its task died, no answer came).
    pub fn other(reason: &str) -> Self {
        Self {
            reason: reason.to_string(),
            detail: reason.to_string(),
        }
    }
}
