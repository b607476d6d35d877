//! Work a sync waits for, done off the loop: a round's labels described by the LLM before the
//! round is forwarded (seconds to two minutes), a label event's material encoded ahead of
//! applying it with the embedding signal (≈ 0.1 s of CPU a text: seconds to minutes a round).
//!
//! A [`Job`] is a task the loop does not await in place: it goes on committing, answering
//! rebalances, finishing texts and taking in texts older than the last sync while the job runs,
//! and finishes the sync when the job reports (see [`super::sync::LogSync::finish`]). Startup,
//! which has nothing else to do, waits for it directly; shutdown gives it up (see
//! [`super::sync::LogSync::abandon`]). Dropping a job stops it: the encoding after the texts in
//! hand, the describing at once. A job's task that panics is a bug: the panic surfaces in the
//! loop, as a delivery task's does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::broker::Record;
use crate::engine::embedding::{Embeddings, TextEncoder};
use crate::engine::NewLabel;
use crate::one_text::TextSteps;
use crate::state::codec::{ChangeDecodeError, ChangeRecord};

/// How long describing a round's labels may take; labels not described by then go without.
const DESCRIBE_BUDGET: Duration = Duration::from_secs(120);

/// What the sync does once the job is done.
pub enum Then {
    /// Apply this changelog record (its material now kept by the encoder).
    Apply {
        message: Record,
        record: Box<Result<ChangeRecord, ChangeDecodeError>>,
    },
    /// Forward this labels-topic record as the round `round` with the described labels.
    Forward { message: Record, round: String },
}

/// What a job produced.
pub enum JobOutput {
    /// Of `texts` to encode, those `reached` before the job ended (all unless it was stopped).
    Encoded { texts: usize, reached: usize },
    /// The round's labels, with the descriptions written in time.
    Described(Vec<NewLabel>),
    /// The task was cancelled (the runtime going away): the job is given up.
    Cancelled,
}

pub struct Job {
    pub then: Then,
    task: JoinHandle<JobOutput>,
    started: Instant,
    _stop: StopOnDrop,
}

impl Job {
    /// Encode `texts` (see [`crate::serve::replica::Replica::material_ahead`]) on the blocking
    /// pool into `encoder`, which keeps them, then apply `record`.
    pub fn encode(
        encoder: Arc<dyn TextEncoder>,
        texts: Vec<String>,
        message: Record,
        record: Result<ChangeRecord, ChangeDecodeError>,
    ) -> Box<Self> {
        let stop = StopOnDrop::default();
        let (flag, count) = (stop.cancelled.clone(), texts.len());
        tracing::info!(
            texts = count,
            "encoding labelled material ahead of applying it"
        );
        let task = tokio::task::spawn_blocking(move || {
            let reached = Embeddings::encode_ahead(encoder.as_ref(), texts, &flag);
            JobOutput::Encoded {
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
            started: Instant::now(),
            _stop: stop,
        })
    }

    /// Have the LLM describe the round's `labels`, within [`DESCRIBE_BUDGET`] and `at_once` at
    /// a time, then forward it.
    pub fn describe(
        classifier: &TextSteps,
        labels: Vec<NewLabel>,
        at_once: usize,
        message: Record,
        round: String,
    ) -> Box<Self> {
        let classifier = classifier.clone();
        tracing::info!(
            %round,
            labels = labels.len(),
            "describing the round's labels before forwarding it"
        );
        let task = tokio::spawn(async move {
            let mut labels = labels;
            let describing = classifier.describe_labels(&mut labels, at_once);
            if tokio::time::timeout(DESCRIBE_BUDGET, describing)
                .await
                .is_err()
            {
                tracing::warn!(
                    budget_secs = DESCRIBE_BUDGET.as_secs(),
                    "the round's labels were not all described in time: the rest go without"
                );
            }
            JobOutput::Described(labels)
        });
        let stop = StopOnDrop {
            cancelled: Arc::default(),
            abort: Some(task.abort_handle()),
        };
        Box::new(Self {
            then: Then::Forward { message, round },
            task,
            started: Instant::now(),
            _stop: stop,
        })
    }

    /// Whether a round's labels need describing: an LLM, and a named label without one.
    pub fn needs_describing(classifier: &TextSteps, labels: &[NewLabel]) -> bool {
        classifier.llm().is_some()
            && labels
                .iter()
                .any(|label| label.name.is_some() && label.description.is_none())
    }

    /// Wait for the job's result (cancel-safe: polling it again goes on waiting).
    pub async fn prepared(&mut self) -> JobOutput {
        let prepared = match (&mut self.task).await {
            Ok(prepared) => prepared,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => {
                tracing::warn!(%error, "a round's preparation was cancelled");
                return JobOutput::Cancelled;
            }
        };
        self.log_report(&prepared);
        prepared
    }

    fn log_report(&self, prepared: &JobOutput) {
        let seconds = self.started.elapsed().as_secs_f64();
        match (prepared, &self.then) {
            (JobOutput::Encoded { texts, reached }, _) => tracing::info!(
                texts,
                reached,
                seconds,
                "labelled material encoded ahead of applying it"
            ),
            (JobOutput::Described(labels), Then::Forward { round, .. }) => {
                let described = labels.iter().filter(|l| l.description.is_some()).count();
                tracing::info!(
                    %round,
                    labels = labels.len(),
                    described,
                    seconds,
                    "the round's labels described"
                )
            }
            _ => {}
        }
    }
}

/// The loop's jobs: at most a round being described, for the sync that came upon it (no sync
/// goes on meanwhile), and a changelog record being encoded ahead, for a sync or for the
/// loop's own reading of the changelog (the changelog is not read on meanwhile). The changelog
/// goes on being applied while a round is described: this instance's own learn records, read
/// back, give their intake places back.
#[derive(Default)]
pub struct Jobs {
    describing: Option<Box<Job>>,
    encoding: Option<Box<Job>>,
}

impl Jobs {
    /// Whether a sync waits for a job.
    pub fn any(&self) -> bool {
        self.describing.is_some() || self.encoding.is_some()
    }

    /// Whether a changelog record waits for its encoding.
    pub fn is_encoding(&self) -> bool {
        self.encoding.is_some()
    }

    /// Keep `job` until it reports. Its kind's slot is free: a sync waiting for a job does not
    /// start another, and the changelog is not read on while a record is being encoded.
    pub fn hold(&mut self, job: Box<Job>) {
        let slot = match job.then {
            Then::Apply { .. } => &mut self.encoding,
            Then::Forward { .. } => &mut self.describing,
        };
        debug_assert!(slot.is_none(), "one job of a kind at a time");
        *slot = Some(job);
    }

    /// The first job to report, taken out, with its result; never while there is none.
    /// Cancel-safe: dropped before a job reports, the jobs stay.
    pub async fn next(&mut self) -> (Box<Job>, JobOutput) {
        tokio::select! {
            reported = take_when_done(&mut self.describing) => reported,
            reported = take_when_done(&mut self.encoding) => reported,
        }
    }

    /// Every job, taken out (to give them up).
    pub fn take_all(&mut self) -> impl Iterator<Item = Box<Job>> {
        [self.describing.take(), self.encoding.take()]
            .into_iter()
            .flatten()
    }
}

/// The job in `slot` once it reports, taken out, with its result; never while there is none.
async fn take_when_done(slot: &mut Option<Box<Job>>) -> (Box<Job>, JobOutput) {
    if let Some(job) = slot.as_mut() {
        let prepared = job.prepared().await;
        if let Some(job) = slot.take() {
            return (job, prepared);
        }
    }
    std::future::pending().await
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
