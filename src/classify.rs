//! The async shell around one GORAG step sequence: keywords → retrieval → LLM → decision.
//!
//! The engine stays pure; this module owns the LLM calls and their failure policy: an LLM that
//! fails after its bounded retries never blocks a text — the decision falls back to the
//! graph-only prediction and says why. Online indexing is left to the caller (the evaluation
//! protocol turns it off for earlier rounds' texts; the service applies it in log order).

use std::time::{Duration, Instant};

use crate::engine::keywords::KeywordMode;
use crate::engine::prompt;
use crate::engine::{Analysis, Decision, Engine, EngineError, NewLabel, Retrieval};
use crate::llm::LlmClient;

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
    /// The LLM's raw answer, when it gave one.
    pub raw_answer: Option<String>,
    /// Its first token's alternatives with log-probabilities (`scored` choice).
    pub alternatives: Vec<(String, f64)>,
    /// Why the LLM could not answer (the decision then comes from the graph).
    pub llm_failure: Option<String>,
    pub llm_calls: u32,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub times: StageTimes,
}

#[derive(Debug, Clone)]
pub struct Classifier {
    llm: Option<LlmClient>,
    keyword_mode: KeywordMode,
}

impl Classifier {
    /// `llm: None` gives retrieval-only (graph) predictions.
    pub fn new(llm: Option<LlmClient>, keyword_mode: KeywordMode) -> Self {
        Self { llm, keyword_mode }
    }

    pub fn llm(&self) -> Option<&LlmClient> {
        self.llm.as_ref()
    }

    /// Ask the LLM for a short description of every named label that has none. A failed call
    /// leaves that label without a description (its examples still index it). Returns the
    /// number of LLM calls made.
    pub async fn describe_labels(&self, labels: &mut [NewLabel]) -> u32 {
        let Some(llm) = &self.llm else {
            return 0;
        };
        let mut calls = 0;
        for label in labels.iter_mut() {
            let Some(name) = &label.name else { continue };
            if label.description.is_some() {
                continue;
            }
            calls += 1;
            match llm.complete(&prompt::label_description(name)).await {
                Ok(answer) => {
                    let text = prompt::clip(answer.text.trim(), MAX_DESCRIPTION_CHARS);
                    label.description = Some(text.to_string());
                }
                Err(error) => {
                    tracing::warn!(label = %label.id, %error, "no description for label");
                }
            }
        }
        calls
    }

    pub async fn classify(&self, engine: &Engine, text: &str) -> Result<Classified, EngineError> {
        let mut times = StageTimes::default();
        let mut llm_calls = 0;
        let mut prompt_tokens = 0;
        let mut completion_tokens = 0;

        let started = Instant::now();
        let analysis = match (self.keyword_mode, &self.llm) {
            (KeywordMode::Llm, Some(llm)) => {
                llm_calls += 1;
                let clipped = prompt::clip(text, engine.config().max_prompt_chars);
                match llm.complete(&prompt::keyword_extraction(clipped)).await {
                    Ok(answer) => {
                        prompt_tokens += answer.prompt_tokens;
                        completion_tokens += answer.completion_tokens;
                        engine.analyze_with_llm_keywords(text, &answer.text)
                    }
                    Err(error) => {
                        tracing::warn!(%error, "LLM keyword extraction failed; using TF-IDF keywords");
                        engine.analyze(text)
                    }
                }
            }
            _ => engine.analyze(text),
        };
        times.keywords = started.elapsed();

        let started = Instant::now();
        let retrieval = engine.retrieve(&analysis)?;
        times.retrieve = started.elapsed();

        let mut raw_answer = None;
        let mut alternatives = Vec::new();
        let mut llm_failure = None;
        if let Some(llm) = &self.llm {
            let started = Instant::now();
            let request = engine.classification_prompt(&retrieval, text, &analysis);
            llm_calls += 1;
            match llm.complete(&request).await {
                Ok(answer) => {
                    prompt_tokens += answer.prompt_tokens;
                    completion_tokens += answer.completion_tokens;
                    raw_answer = Some(answer.text);
                    alternatives = answer.first_token;
                }
                Err(error) => {
                    tracing::warn!(%error, "LLM classification failed; graph-only prediction");
                    llm_failure = Some(error.reason().to_string());
                }
            }
            times.llm = started.elapsed();
        }
        let decision =
            engine.decide_with_alternatives(&retrieval, raw_answer.as_deref(), &alternatives);

        Ok(Classified {
            analysis,
            retrieval,
            decision,
            raw_answer,
            alternatives,
            llm_failure,
            llm_calls,
            prompt_tokens,
            completion_tokens,
            times,
        })
    }
}
