//! Work a sync waits for, done off the loop: a round's labels described by the LLM before the
//! round is forwarded (seconds to two minutes), a label event's material encoded ahead of
//! applying it with the embedding signal (≈ 0.1 s of CPU a text: seconds to minutes a round).
//!
//! A [`Job`] is a task the loop does not await in place: it goes on committing, answering
//! rebalances, finishing texts and taking in texts older than the last sync while the job runs,
//! and finishes the sync when the job reports (see [`super::sync::LogSync::finish`]). Startup
//! and shutdown, which have nothing else to do, wait for it directly. Dropping a job stops it:
//! the encoding after the texts in hand, the describing at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::message::OwnedMessage;
use tokio::task::JoinHandle;

use crate::classify::Classifier;
use crate::engine::embedding::{Embeddings, TextEncoder};
use crate::engine::NewLabel;
use crate::stream::changelog::ChangeRecord;

/// How long describing a round's labels may take; labels not described by then go without.
pub const DESCRIBE_BUDGET: Duration = Duration::from_secs(120);

/// What the sync does once the job is done.
pub enum Then {
    /// Apply this changelog record (its material now kept by the encoder).
    Apply {
        message: OwnedMessage,
        record: Box<Result<ChangeRecord, String>>,
    },
    /// Forward this labels-topic record as the round `round` with the described labels.
    Forward {
        message: OwnedMessage,
        round: String,
    },
}

/// What a job produced.
pub enum Prepared {
    /// Of `texts` to encode, those `reached` before the job ended (all unless it was stopped).
    Encoded { texts: usize, reached: usize },
    /// The round's labels, with the descriptions written in time.
    Described(Vec<NewLabel>),
    /// The task died: applying encodes what was not kept; the round goes undescribed.
    Lost,
}

pub struct Job {
    pub then: Then,
    task: JoinHandle<Prepared>,
    /// The labels as they were, for a describing task that died.
    pub undescribed: Vec<NewLabel>,
    started: Instant,
    _stop: StopOnDrop,
}

impl Job {
    /// Encode `texts` (see [`crate::stream::replica::Replica::material_ahead`]) on the blocking
    /// pool into `encoder`, which keeps them, then apply `record`.
    pub fn encode(
        encoder: Arc<dyn TextEncoder>,
        texts: Vec<String>,
        message: OwnedMessage,
        record: Result<ChangeRecord, String>,
    ) -> Box<Self> {
        let stop = StopOnDrop::default();
        let (flag, count) = (stop.cancelled.clone(), texts.len());
        tracing::info!(
            texts = count,
            "encoding labelled material ahead of applying it"
        );
        let task = tokio::task::spawn_blocking(move || {
            let reached = Embeddings::encode_ahead(encoder.as_ref(), texts, &flag);
            Prepared::Encoded {
                texts: count,
                reached,
            }
        });
        Box::new(Self {
            then: Then::Apply {
                message,
                record: Box::new(record),
            },
            task,
            undescribed: Vec::new(),
            started: Instant::now(),
            _stop: stop,
        })
    }

    /// Have the LLM describe the round's `labels`, within [`DESCRIBE_BUDGET`], then forward it.
    pub fn describe(
        classifier: &Classifier,
        labels: Vec<NewLabel>,
        message: OwnedMessage,
        round: String,
    ) -> Box<Self> {
        let (classifier, undescribed) = (classifier.clone(), labels.clone());
        tracing::info!(
            %round,
            labels = labels.len(),
            "describing the round's labels before forwarding it"
        );
        let task = tokio::spawn(async move {
            let mut labels = labels;
            let describing = classifier.describe_labels(&mut labels);
            if tokio::time::timeout(DESCRIBE_BUDGET, describing)
                .await
                .is_err()
            {
                tracing::warn!(
                    budget_secs = DESCRIBE_BUDGET.as_secs(),
                    "the round's labels were not all described in time: the rest go without"
                );
            }
            Prepared::Described(labels)
        });
        let stop = StopOnDrop {
            cancelled: Arc::default(),
            abort: Some(task.abort_handle()),
        };
        Box::new(Self {
            then: Then::Forward { message, round },
            task,
            undescribed,
            started: Instant::now(),
            _stop: stop,
        })
    }

    /// Whether the job would describe labels: an LLM, and a named label without a description.
    pub fn describes(classifier: &Classifier, labels: &[NewLabel]) -> bool {
        classifier.llm().is_some()
            && labels
                .iter()
                .any(|label| label.name.is_some() && label.description.is_none())
    }

    /// Wait for the job's result (cancel-safe: polling it again goes on waiting).
    pub async fn prepared(&mut self) -> Prepared {
        let prepared = match (&mut self.task).await {
            Ok(prepared) => prepared,
            Err(error) => {
                tracing::warn!(%error, "a round's preparation failed; it goes on without");
                Prepared::Lost
            }
        };
        let seconds = self.started.elapsed().as_secs_f64();
        match &prepared {
            Prepared::Encoded { texts, reached } => {
                tracing::info!(
                    texts,
                    reached,
                    seconds,
                    "labelled material encoded ahead of applying it"
                )
            }
            Prepared::Described(labels) => {
                let described = labels.iter().filter(|l| l.description.is_some()).count();
                tracing::info!(described, seconds, "the round's labels described")
            }
            Prepared::Lost => {}
        }
        prepared
    }
}

/// The loop's job, if any: its result, or never (a `select!` branch while there is none).
pub async fn wait(job: &mut Option<Box<Job>>) -> Prepared {
    match job {
        Some(job) => job.prepared().await,
        None => std::future::pending().await,
    }
}

/// Stops the job's task when the job is dropped: the encoding on the blocking pool after the
/// texts in hand (it cannot be aborted), the describing at once.
#[derive(Default)]
struct StopOnDrop {
    cancelled: Arc<AtomicBool>,
    abort: Option<tokio::task::AbortHandle>,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
        if let Some(abort) = &self.abort {
            abort.abort();
        }
    }
}
