//! A text's way through the service, from the record read to the records to deliver:
//!
//! ```text
//! begin (decode → keywords → retrieve) ─▶ [LLM task: keywords, then the choice] ─▶ advance
//!   ─▶ slot ready ─▶ in order per partition (slots.rs) ─▶ finish (finish.rs) ─▶ records
//! ```
//!
//! Everything here is synchronous except the LLM task, which runs on its own and reports back
//! with the slot it was for; the loop owns the slots.

pub mod finish;
mod slots;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use tracing::Instrument;

pub use slots::{SlotId, Slots};

use super::replica::engine_rejection;
use super::stats::Stats;
use crate::classify::{Answer, Classifier, KeywordAnswer, LlmFailure, Prepared};
use crate::engine::prompt::Prompt;
use crate::engine::Engine;
use crate::events::decode::Rejection;
use crate::events::{InputPosition, StageLatency, TextEvent};
use crate::threads;

/// A text whose candidates are known, waiting for (or holding) the LLM's answer.
pub struct Pending {
    pub event: TextEvent,
    pub prepared: Prepared,
    pub latency: StageLatency,
}

/// Where a text is in its classification.
pub enum Work {
    Rejected {
        stage: &'static str,
        rejection: Rejection,
    },
    /// LLM keyword mode: waiting for the LLM's keywords.
    Keywords { event: TextEvent, decode_ms: f64 },
    /// Candidates known; `answer` once the LLM answered (at once without an LLM).
    Classify {
        pending: Box<Pending>,
        answer: Option<Answer>,
    },
}

impl Work {
    /// Whether nothing more is needed before the text can finish.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            Work::Rejected { .. }
                | Work::Classify {
                    answer: Some(_),
                    ..
                }
        )
    }
}

/// A text in flight: what its slot holds.
pub struct Text {
    /// The text's span: open from intake until its outputs are delivered.
    pub span: tracing::Span,
    pub source: Source,
    pub received: Instant,
    pub work: Work,
}

/// A text as read, kept until its outputs are settled (to dead-letter it should the broker
/// refuse them).
pub struct Source {
    pub position: InputPosition,
    pub key: Option<Vec<u8>>,
    pub payload: Vec<u8>,
}

/// An LLM call running as a task, reporting which text it was for even if the task died.
pub type LlmTask = Pin<Box<dyn Future<Output = LlmDone> + Send>>;

pub struct LlmDone {
    pub slot: SlotId,
    pub outcome: LlmOutcome,
}

/// What an LLM task brings back.
pub enum LlmOutcome {
    Keywords(KeywordAnswer),
    Answer(Answer),
}

impl LlmOutcome {
    /// How long the call took, and whether it succeeded.
    pub fn elapsed(&self) -> (Duration, bool) {
        match self {
            LlmOutcome::Keywords(k) => (k.elapsed, k.text.is_some()),
            LlmOutcome::Answer(a) => (a.elapsed, a.failure.is_none()),
        }
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The first step of a decoded (or rejected) text: its candidates, or a wait for the LLM's
/// keywords in LLM keyword mode.
pub fn begin(
    classifier: &Classifier,
    engine: &Engine,
    stats: &Stats,
    span: &tracing::Span,
    decoded: Result<TextEvent, Rejection>,
    decode_ms: f64,
) -> Work {
    match decoded {
        Err(rejection) => Work::Rejected {
            stage: "decode",
            rejection,
        },
        Ok(event) if classifier.asks_for_keywords() => Work::Keywords { event, decode_ms },
        Ok(event) => prepare(
            classifier,
            engine,
            stats,
            span,
            event,
            &KeywordAnswer::default(),
            decode_ms,
        ),
    }
}

/// Fewest texts per thread worth a thread of its own in [`begin_all`].
const TEXTS_PER_THREAD: usize = 2;

/// A text read and decoded, about to begin.
pub struct Arriving {
    pub span: tracing::Span,
    pub received: Instant,
    pub decoded: Result<TextEvent, Rejection>,
    pub decode_ms: f64,
}

/// [`begin`] for several texts taken in together, spread over the machine's cores: the engine
/// is only read here, so each text is classified against the same graph as it would be one
/// after the other (learning happens later, when the changelog is read back).
pub fn begin_all(
    classifier: &Classifier,
    engine: &Engine,
    stats: &Stats,
    texts: Vec<Arriving>,
) -> Vec<Work> {
    let threads = threads::cores().min(texts.len() / TEXTS_PER_THREAD).max(1);
    let begin_one = |text: Arriving| {
        begin(
            classifier,
            engine,
            stats,
            &text.span,
            text.decoded,
            text.decode_ms,
        )
    };
    threads::in_threads(texts, threads, begin_one)
}

/// Keywords and candidates for `event`: ready to finish without an LLM, else waiting for its
/// answer.
fn prepare(
    classifier: &Classifier,
    engine: &Engine,
    stats: &Stats,
    span: &tracing::Span,
    event: TextEvent,
    keywords: &KeywordAnswer,
    decode_ms: f64,
) -> Work {
    let prepared = span.in_scope(|| classifier.prepare(engine, &event.text, keywords));
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            return Work::Rejected {
                stage: "classify",
                rejection: engine_rejection(&error),
            }
        }
    };
    let times = &prepared.times;
    stats.stage("keywords", times.keywords.as_secs_f64());
    stats.stage("retrieve", times.retrieve.as_secs_f64());
    let latency = StageLatency {
        decode_ms,
        keywords_ms: ms(times.keywords),
        retrieve_ms: ms(times.retrieve),
        ..StageLatency::default()
    };
    // Without an LLM the answer is known: none.
    let answer = prepared.prompt.is_none().then(Answer::default);
    Work::Classify {
        pending: Box::new(Pending {
            event,
            prepared,
            latency,
        }),
        answer,
    }
}

/// What an LLM answer did to its text.
#[derive(Debug, PartialEq, Eq)]
pub enum Advanced {
    /// The text can finish.
    Ready,
    /// It waits for another LLM call (the choice, after the keywords).
    Waiting,
    /// The text no longer waited for this answer: nothing changed.
    Stale,
}

/// Take an LLM task's outcome into its text.
pub fn advance(
    classifier: &Classifier,
    engine: &Engine,
    stats: &Stats,
    text: &mut Text,
    outcome: LlmOutcome,
) -> Advanced {
    match (outcome, &mut text.work) {
        (LlmOutcome::Keywords(keywords), Work::Keywords { event, decode_ms }) => {
            let (event, decode_ms) = (event.clone(), *decode_ms);
            text.work = prepare(
                classifier, engine, stats, &text.span, event, &keywords, decode_ms,
            );
            if text.work.is_final() {
                Advanced::Ready
            } else {
                Advanced::Waiting
            }
        }
        (
            LlmOutcome::Answer(answer),
            Work::Classify {
                pending,
                answer: slot,
            },
        ) if slot.is_none() => {
            pending.latency.llm_ms = ms(answer.elapsed);
            *slot = Some(answer);
            Advanced::Ready
        }
        _ => Advanced::Stale,
    }
}

/// The LLM call `text` waits for, as a task to start once its slot is known.
pub fn llm_task(
    classifier: &Classifier,
    max_prompt_chars: usize,
    text: &Text,
) -> Option<impl FnOnce(SlotId) -> LlmTask> {
    enum Request {
        Keywords(String),
        Answer(Option<Prompt>),
    }
    let request = match &text.work {
        Work::Keywords { event, .. } => Request::Keywords(event.text.clone()),
        Work::Classify {
            pending,
            answer: None,
        } => Request::Answer(pending.prepared.prompt.clone()),
        _ => return None,
    };
    let classifier = classifier.clone();
    let llm_span = tracing::info_span!(parent: &text.span, "llm");
    let asked_for_keywords = matches!(request, Request::Keywords(_));
    Some(move |slot: SlotId| -> LlmTask {
        let call = tokio::spawn(
            async move {
                match request {
                    Request::Keywords(text) => {
                        LlmOutcome::Keywords(classifier.llm_keywords(&text, max_prompt_chars).await)
                    }
                    Request::Answer(prompt) => {
                        LlmOutcome::Answer(classifier.answer(prompt.as_ref()).await)
                    }
                }
            }
            .instrument(llm_span),
        );
        Box::pin(async move {
            let outcome = call.await.unwrap_or_else(|error| {
                // A dead task must not leave its text waiting for ever: the outcome its text
                // waits for, failed (keywords: the engine's own, as when the LLM gives none).
                if asked_for_keywords {
                    tracing::error!(%error, "keyword task failed");
                    return LlmOutcome::Keywords(KeywordAnswer::default());
                }
                LlmOutcome::Answer(Answer {
                    failure: Some(LlmFailure {
                        reason: "task_failed".into(),
                        detail: error.to_string(),
                    }),
                    ..Answer::default()
                })
            });
            LlmDone { slot, outcome }
        })
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::keywords::KeywordMode;
    use crate::engine::update::Update;
    use crate::engine::{EngineConfig, NewLabel};
    use crate::events::decode::Reason;
    use crate::telemetry::metrics::Metrics;

    #[test]
    fn texts_begun_together_keep_their_order() {
        let mut engine = Engine::new(EngineConfig::default());
        let label = NewLabel {
            id: "shipping".into(),
            name: None,
            description: None,
            examples: vec!["parcel courier delivery late tracking".into()],
        };
        engine
            .apply(&Update::Round {
                round: "r1".into(),
                labels: vec![label],
            })
            .unwrap();
        let classifier = Classifier::new(None, KeywordMode::Tfidf);
        let stats = Stats::new(Arc::new(Metrics::new()));
        // Every third text is bad: the results must line up with the inputs.
        let texts: Vec<Arriving> = (0..11)
            .map(|i| Arriving {
                span: tracing::Span::none(),
                received: Instant::now(),
                decoded: if i % 3 == 0 {
                    Err(Rejection::new(Reason::EmptyText, format!("text {i}")))
                } else {
                    Ok(TextEvent {
                        version: 1,
                        id: format!("t{i}"),
                        text: "my parcel is late".into(),
                        metadata: None,
                        gold_label: None,
                    })
                },
                decode_ms: 0.0,
            })
            .collect();
        let works = begin_all(&classifier, &engine, &stats, texts);
        assert_eq!(works.len(), 11);
        for (i, work) in works.iter().enumerate() {
            match work {
                Work::Rejected { rejection, .. } => {
                    assert_eq!(i % 3, 0);
                    assert_eq!(rejection.message, format!("text {i}"));
                }
                Work::Classify { pending, answer } => {
                    assert_ne!(i % 3, 0);
                    assert_eq!(pending.event.id, format!("t{i}"));
                    assert!(answer.is_some(), "no LLM: answered at once");
                }
                Work::Keywords { .. } => panic!("TF-IDF keywords"),
            }
        }
    }
}
