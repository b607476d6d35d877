//! A text's way through the service, from the record read to the records to deliver:
//!
//! ```text
//! begin (decode → keywords → retrieve) ─▶ [task: the LLM's choice] ─▶ advance ─▶ slot ready
//!   ─▶ in order per partition (slots.rs) ─▶ finish (finish.rs) ─▶ records
//! ```
//!
//! With LLM keywords or the embedding signal, a text first waits for its preliminary step
//! (`Work::Preliminary`: the LLM's keywords and its sentence vector, computed by a task off the
//! loop), and `advance` then keywords and retrieves it. Everything here is synchronous except
//! those tasks, which run on their own and report back with the slot they were for; the loop
//! owns the slots. A [`StepTask`] is one such off-loop step: the LLM's keywords and the sentence
//! vector, or the LLM's answer.

pub mod finish;
mod slots;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;

pub use slots::{SlotId, Slots};

use super::stats::Stats;
use crate::engine::embedding::TextEncoder;
use crate::engine::prompt::Prompt;
use crate::engine::Engine;
use crate::events::decode::Rejection;
use crate::events::{InputPosition, StageLatency, TextEvent};
use crate::one_text::{Answer, LlmFailure, Preliminary, Prepared, TextSteps};
use crate::state::from_event::engine_rejection;
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
    /// Waiting for its preliminary step, off the loop: the LLM's keywords (LLM keyword mode),
    /// its sentence vector (the embedding signal).
    Preliminary { event: TextEvent, decode_ms: f64 },
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
    pub source: ReadText,
    pub received: Instant,
    pub work: Work,
}

/// A text as read, kept until its outputs are settled (to dead-letter it should the broker
/// refuse them).
pub struct ReadText {
    pub position: InputPosition,
    pub key: Option<Vec<u8>>,
    pub payload: Vec<u8>,
}

/// An LLM call running as a task, reporting which text it was for even if the task died.
pub type StepTask = Pin<Box<dyn Future<Output = StepDone> + Send>>;

pub struct StepDone {
    pub slot: SlotId,
    pub outcome: StepOutcome,
}

/// What a task brings back: a text's preliminary step, or the LLM's answer.
pub enum StepOutcome {
    Preliminary(Preliminary),
    Answer(Answer),
}

impl StepOutcome {
    /// How long the LLM call took, and whether it succeeded; None when no LLM was called (a
    /// preliminary step that only encoded the text).
    pub fn llm_elapsed(&self) -> Option<(Duration, bool)> {
        match self {
            StepOutcome::Preliminary(p) if p.keywords.calls == 0 => None,
            StepOutcome::Preliminary(p) => Some((p.keywords.elapsed, p.keywords.text.is_some())),
            StepOutcome::Answer(a) => Some((a.elapsed, a.failure.is_none())),
        }
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The first step of a decoded (or rejected) text: its candidates, or a wait for its
/// preliminary step (the LLM's keywords, its sentence vector).
pub fn begin(
    classifier: &TextSteps,
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
        Ok(event) if classifier.has_preliminary(engine) => Work::Preliminary { event, decode_ms },
        Ok(event) => prepare(
            classifier,
            engine,
            stats,
            span,
            event,
            Preliminary::default(),
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
    classifier: &TextSteps,
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
    classifier: &TextSteps,
    engine: &Engine,
    stats: &Stats,
    span: &tracing::Span,
    event: TextEvent,
    preliminary: Preliminary,
    decode_ms: f64,
) -> Work {
    let prepared = span.in_scope(|| classifier.prepare(engine, &event.text, preliminary));
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
    classifier: &TextSteps,
    engine: &Engine,
    stats: &Stats,
    text: &mut Text,
    outcome: StepOutcome,
) -> Advanced {
    match (outcome, &mut text.work) {
        (StepOutcome::Preliminary(preliminary), Work::Preliminary { event, decode_ms }) => {
            let (event, decode_ms) = (event.clone(), *decode_ms);
            text.work = prepare(
                classifier,
                engine,
                stats,
                &text.span,
                event,
                preliminary,
                decode_ms,
            );
            if text.work.is_final() {
                Advanced::Ready
            } else {
                Advanced::Waiting
            }
        }
        (
            StepOutcome::Answer(answer),
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

/// What a text's task is to do.
enum Request {
    /// The LLM's keywords and the text's sentence vector (either may be off).
    Preliminary(String, Option<Arc<dyn TextEncoder>>),
    /// The LLM's choice.
    Answer(Option<Prompt>),
}

impl Request {
    /// What `work` waits for; None when it waits for nothing.
    fn of(work: &Work, engine: &Engine) -> Option<Self> {
        match work {
            Work::Preliminary { event, .. } => Some(Request::Preliminary(
                event.text.clone(),
                engine.analyzer().query_encoder(),
            )),
            Work::Classify {
                pending,
                answer: None,
            } => Some(Request::Answer(pending.prepared.prompt.clone())),
            _ => None,
        }
    }

    async fn run(self, classifier: TextSteps, max_prompt_chars: usize) -> StepOutcome {
        match self {
            Request::Preliminary(text, encoder) => StepOutcome::Preliminary(
                classifier
                    .preliminary(text, max_prompt_chars, encoder)
                    .await,
            ),
            Request::Answer(prompt) => {
                StepOutcome::Answer(classifier.answer(prompt.as_ref()).await)
            }
        }
    }

    /// What the text gets when its task died: the outcome it waits for, failed (a preliminary
    /// step: no LLM keywords and no vector, as when each fails on its own — the engine's
    /// keywords, lexical retrieval), so that it never waits for ever.
    fn failed(preliminary: bool, error: &tokio::task::JoinError) -> StepOutcome {
        if preliminary {
            tracing::error!(%error, "preliminary task failed");
            return StepOutcome::Preliminary(Preliminary::default());
        }
        StepOutcome::Answer(Answer {
            failure: Some(LlmFailure {
                reason: "task_failed".into(),
                detail: error.to_string(),
            }),
            ..Answer::default()
        })
    }
}

/// The task `text` waits for (its preliminary step, or the LLM's answer), to start once its
/// slot is known.
pub fn step_task(
    classifier: &TextSteps,
    engine: &Engine,
    text: &Text,
) -> Option<impl FnOnce(SlotId) -> StepTask> {
    let request = Request::of(&text.work, engine)?;
    let preliminary = matches!(request, Request::Preliminary(..));
    let span = if preliminary && !classifier.asks_for_keywords() {
        tracing::info_span!(parent: &text.span, "preliminary")
    } else {
        tracing::info_span!(parent: &text.span, "llm")
    };
    let run = request
        .run(classifier.clone(), engine.config().max_prompt_chars)
        .instrument(span);
    Some(move |slot: SlotId| -> StepTask {
        // Dropped (the service closing), the task stops: its LLM call or its wait for an
        // encoding permit goes with it.
        let mut call = AbortOnDrop(tokio::spawn(run));
        Box::pin(async move {
            let outcome = (&mut call.0)
                .await
                .unwrap_or_else(|error| Request::failed(preliminary, &error));
            StepDone { slot, outcome }
        })
    })
}

/// A spawned task that is stopped when its handle is dropped (a no-op once it has finished).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// For tests: an engine after one round of labels with one example each.
#[cfg(test)]
pub(crate) fn one_round_engine(
    config: crate::engine::EngineConfig,
    labels: &[(&str, &str)],
) -> Engine {
    let mut engine = Engine::new(config);
    let labels: Vec<crate::engine::NewLabel> = labels
        .iter()
        .map(|(id, example)| crate::engine::NewLabel {
            id: id.to_string(),
            name: None,
            description: None,
            examples: vec![example.to_string()],
        })
        .collect();
    engine
        .apply_round(Some("r1"), &labels)
        .expect("a valid round");
    engine
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::keywords::KeywordMode;
    use crate::engine::EngineConfig;
    use crate::events::decode::Reason;
    use crate::telemetry::metrics::Metrics;

    #[test]
    fn texts_begun_together_keep_their_order() {
        let engine = one_round_engine(
            EngineConfig::default(),
            &[("shipping", "parcel courier delivery late tracking")],
        );
        let classifier = TextSteps::new(None, KeywordMode::Tfidf);
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
                Work::Preliminary { .. } => panic!("no preliminary step without an encoder"),
            }
        }
    }

    #[tokio::test]
    async fn with_the_embedding_signal_a_text_is_encoded_by_its_task_then_prepared() {
        use crate::engine::embedding::tests::TopicEncoder;
        // The signal weighs as much as the words, so that it decides this text.
        let mut config = EngineConfig::default();
        config.ranking.embedding_weight = 1.0;
        let lexical = one_round_engine(
            config,
            &[
                ("astronomy", "space rocket orbit"),
                ("cooking", "recipe oven stove"),
            ],
        );
        /// Counts the texts it encodes.
        struct Counting(std::sync::atomic::AtomicUsize);
        impl TextEncoder for Counting {
            fn encode(
                &self,
                text: &str,
            ) -> Result<Vec<f32>, crate::engine::embedding::EncodeError> {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                TopicEncoder.encode(text)
            }
        }
        let encoder = Arc::new(Counting(Default::default()));
        let (engine, _) = lexical.clone().with_encoder(encoder.clone());
        let encoded = || encoder.0.load(std::sync::atomic::Ordering::SeqCst);
        let material = encoded();
        let classifier = TextSteps::new(None, KeywordMode::Tfidf);
        let stats = Stats::new(Arc::new(Metrics::new()));
        // Its words lean to cooking; only the encoder hears "space" in "spacecraft".
        let event = TextEvent {
            version: 1,
            id: "t1".into(),
            text: "a recipe and an oven aboard the rocket spacecraft".into(),
            metadata: None,
            gold_label: None,
        };
        let first = |engine: &Engine| {
            let prepared = classifier
                .prepare(engine, &event.text, Preliminary::default())
                .unwrap();
            prepared.retrieval.label_ids()[0].clone()
        };
        assert_eq!(first(&lexical), "cooking");
        // The loop only notes that the text waits: its task encodes it.
        let span = tracing::Span::none();
        let work = begin(&classifier, &engine, &stats, &span, Ok(event.clone()), 0.0);
        assert!(matches!(work, Work::Preliminary { .. }));
        assert_eq!(encoded(), material, "nothing encoded on the loop");
        let text = Text {
            span,
            source: ReadText {
                position: InputPosition {
                    topic: "texts".into(),
                    partition: 0,
                    offset: 0,
                },
                key: None,
                payload: Vec::new(),
            },
            received: Instant::now(),
            work,
        };
        let task = step_task(&classifier, &engine, &text).expect("a task for its preliminary step");
        let mut slots = Slots::default();
        let slot = slots.push(0, 0, text, false);
        let done = task(slot).await;
        assert_eq!(done.slot, slot);
        assert_eq!(done.outcome.llm_elapsed(), None, "no LLM was called");
        assert_eq!(encoded(), material + 1, "the task encoded the text");
        let text = slots.get_mut(slot).unwrap();
        let advanced = advance(&classifier, &engine, &stats, text, done.outcome);
        assert_eq!(advanced, Advanced::Ready, "no LLM: answered at once");
        let Work::Classify { pending, .. } = &text.work else {
            panic!("prepared after its preliminary step");
        };
        assert!(pending.prepared.analysis.embedding.is_some());
        assert_eq!(pending.prepared.retrieval.label_ids()[0], "astronomy");
    }
}
