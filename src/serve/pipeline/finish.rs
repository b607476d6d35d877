//! The last step of a text, in its partition's order: decide, and turn the decision into the
//! records to deliver. Pure: it reads the engine and returns what to send, what to learn and
//! what to count; the loop does the sending and the counting.

use std::time::Instant;

use super::{Pending, ReadText, Text, Work};
use crate::broker::{Outgoing, RecordLimit};
use crate::config::{OnLlmFailure, TopicsSection};
use crate::discovery::{self, DiscoveryConfig, Held, Holding, PoolNote, Unexplained};
use crate::engine::Engine;
use crate::events::classification::{hallucination_report, prediction_event, Classification};
use crate::events::decode::{Reason, Rejection};
use crate::events::{HallucinationKind, PredictionStatus, ProposalCandidate, Source, TextEvent};
use crate::one_text::{Answer, Classified, LlmFailure, TextSteps};
use crate::position::Position;
use crate::serve::delivery::OutputKind;
use crate::serve::outputs;
use crate::serve::stats::Stats;
use crate::state::codec::LearnedText;

/// What finishing needs to know besides the engine.
pub struct Finishing<'a> {
    pub topics: &'a TopicsSection,
    pub on_llm_failure: OnLlmFailure,
    pub online_indexing: bool,
    /// Emerging-class discovery, when enabled: which texts join the pool.
    pub discovery: Option<&'a DiscoveryConfig>,
    /// The open proposals, as the last pass saw them: a text that reads like one is held for
    /// review.
    pub holding: Option<&'a Holding>,
    /// The model's name, when there is an LLM.
    pub model: Option<&'a str>,
    /// The largest record the producer sends (a dead letter is cut to it).
    pub record_limit: RecordLimit,
}

/// Whether the text may be learned, as the loop knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learning {
    Allowed,
    /// Learned before a restart or rebalance: predict again, do not learn twice.
    AlreadyLearned,
    /// Its partition was revoked while it was in flight: the new owner reads it again and
    /// learns it.
    Revoked,
}

/// What one finished text counts.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    pub dead_letter: Option<Reason>,
    pub llm_fallback: bool,
    pub relearn_skipped: bool,
    /// Held for review as reading like an open proposal.
    pub held_for_proposal: bool,
    pub hallucination: Option<HallucinationKind>,
    /// Where the published label came from, and the prediction's status.
    pub predicted: Option<(Source, PredictionStatus)>,
    /// Time spent deciding what to learn.
    pub index_seconds: Option<f64>,
}

impl Tally {
    pub fn count(&self, stats: &mut Stats) {
        if let Some(reason) = self.dead_letter {
            stats.dead_letter(reason);
        }
        if self.llm_fallback {
            stats.llm_fallback();
        }
        if self.relearn_skipped {
            stats.relearn_skipped();
        }
        if self.held_for_proposal {
            stats.held_for_proposal();
        }
        if let Some(kind) = self.hallucination {
            stats.hallucination(kind);
        }
        if let Some((source, status)) = self.predicted {
            stats.predicted(source, status);
        }
        if let Some(seconds) = self.index_seconds {
            stats.stage("index", seconds);
        }
    }
}

/// A finished text: its online-indexing step (if any: for the changelog, where this instance
/// applies it when it reads it back, like every other replica) and the records to deliver, in
/// sending order, plus the input record to dead-letter should the broker refuse them.
pub struct Finished {
    pub learn: Option<LearnedText>,
    pub records: Vec<(OutputKind, Outgoing)>,
    pub source: Option<ReadText>,
    pub tally: Tally,
}

impl Finished {
    fn dead_letter(
        finishing: &Finishing,
        source: ReadText,
        stage: &str,
        rejection: Rejection,
    ) -> Self {
        let record = outputs::dead_letter(
            &finishing.topics.dead_letter,
            &source.position,
            source.key,
            source.payload,
            stage,
            &rejection,
            finishing.record_limit,
        );
        Self {
            learn: None,
            records: vec![(OutputKind::DeadLetter, record)],
            source: None,
            tally: Tally {
                dead_letter: Some(rejection.reason),
                ..Tally::default()
            },
        }
    }
}

/// Decide `text` and say what to send, learn and count.
pub fn finish(finishing: &Finishing, engine: &Engine, text: Text, learning: Learning) -> Finished {
    let Text {
        span,
        source,
        received,
        work,
    } = text;
    let (pending, answer, llm_fallback) = match final_answer(work, finishing.on_llm_failure) {
        Ok(answered) => answered,
        Err((stage, rejection)) => {
            tracing::debug!(offset = source.position.offset, %rejection, "text rejected");
            return Finished::dead_letter(finishing, source, stage, rejection);
        }
    };
    let Pending {
        event,
        prepared,
        mut latency,
    } = *pending;
    let mut classified = TextSteps::conclude(engine, prepared, answer);
    let held = held_for(finishing, engine, &classified);
    if held.is_some() {
        classified.verdict = classified.verdict.held_for_review();
    }
    let decision = &classified.decision;
    span.record("label", decision.label.as_str());
    span.record("source", Source::from(decision.source).as_str());

    let Indexed { learn, seconds } = index_step(
        finishing,
        engine,
        &classified,
        (&event, &source),
        (learning, held.is_some()),
        &span,
    );
    let mut tally = Tally {
        llm_fallback,
        index_seconds: Some(seconds),
        relearn_skipped: learning != Learning::Allowed,
        held_for_proposal: held.is_some(),
        ..Tally::default()
    };
    latency.index_ms = seconds * 1000.0;
    latency.total_ms = received.elapsed().as_secs_f64() * 1000.0;

    let classification = Classification {
        event: &event,
        analysis: &classified.analysis,
        retrieval: &classified.retrieval,
        decision,
        verdict: &classified.verdict,
        llm_asked: classified.llm_asked,
        llm_changed: classified.llm_changed,
        raw_answer: classified.raw_answer.as_deref(),
        llm_error: classified.llm_error.as_deref(),
        model: finishing.model,
        latency,
        position: &source.position,
        held: held.map(|held| ProposalCandidate {
            id: held.proposal,
            name: held.name,
            similarity: (held.similarity * 10_000.0).round() / 10_000.0,
        }),
    };
    let records = output_records(finishing, engine, &classification, &mut tally);
    let status = PredictionStatus::from(classified.verdict.status);
    tally.predicted = Some((decision.source.into(), status));
    Finished {
        learn,
        records,
        source: Some(source),
        tally,
    }
}

/// The open proposal `classified` is held for, if discovery holds texts, the text's meaning
/// weighs in a pass (a short text, by default), and it reads like one.
fn held_for(finishing: &Finishing, engine: &Engine, classified: &Classified) -> Option<Held> {
    let config = finishing.discovery?;
    let holding = finishing.holding?;
    if !discovery::meaning::weighs(&classified.analysis.terms, engine, config) {
        return None;
    }
    holding.hold(classified.analysis.embedding.as_deref()?)
}

/// The index stage's outcome.
struct Indexed {
    /// None when the text was learned already, or its partition revoked.
    learn: Option<LearnedText>,
    seconds: f64,
}

/// The index stage: the learn record.
fn index_step(
    finishing: &Finishing,
    engine: &Engine,
    classified: &Classified,
    (event, source): (&TextEvent, &ReadText),
    (learning, held): (Learning, bool),
    span: &tracing::Span,
) -> Indexed {
    let started = Instant::now();
    let _index_span = tracing::info_span!(parent: span, "index").entered();
    let learn = match learning {
        Learning::AlreadyLearned | Learning::Revoked => None,
        Learning::Allowed => learn_record(finishing, engine, classified, (event, source), held),
    };
    Indexed {
        learn,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The text's pending classification and its final answer, and whether that answer is the
/// graph's fallback for a failed LLM call; or the stage and reason to dead-letter it.
fn final_answer(
    work: Work,
    on_llm_failure: OnLlmFailure,
) -> Result<(Box<Pending>, Answer, bool), (&'static str, Rejection)> {
    let (pending, answer) = match work {
        Work::Rejected { stage, rejection } => return Err((stage, rejection)),
        Work::Preliminary { .. } => {
            return Err((
                "classify",
                Rejection::new(Reason::LlmFailed, "its preliminary step never came back"),
            ))
        }
        // Finished only once final; were it not, its answer is unknown: treat it as an LLM
        // failure rather than stall or panic.
        Work::Classify { pending, answer } => (
            pending,
            answer.unwrap_or_else(|| Answer {
                failure: Some(LlmFailure::other("no_answer")),
                ..Answer::default()
            }),
        ),
    };
    match &answer.failure {
        Some(failure) if on_llm_failure == OnLlmFailure::DeadLetter => {
            let message = format!("{}: {}", failure.reason, failure.detail);
            Err(("classify", Rejection::new(Reason::LlmFailed, message)))
        }
        Some(_) => Ok((pending, answer, true)),
        None => Ok((pending, answer, false)),
    }
}

/// The online-indexing step for a text this instance may learn: written when online indexing
/// is on, or when discovery pools the text — a poorly explained text travels to every
/// replica's discovery pool in its learn record (written for it even when online indexing is
/// off). A text held for an open proposal is pooled whatever else said of it, so the
/// proposal grows by it.
fn learn_record(
    finishing: &Finishing,
    engine: &Engine,
    classified: &Classified,
    (event, source): (&TextEvent, &ReadText),
    held: bool,
) -> Option<LearnedText> {
    let note = finishing
        .discovery
        .and_then(|config| {
            discovery::unexplained(
                &classified.retrieval,
                &classified.decision,
                classified.verdict.status,
                config,
            )
            .or(held.then_some(Unexplained::NeedsReview))
        })
        .map(|why| {
            PoolNote::new(
                &event.id,
                &event.text,
                &engine.analyzer().poolable_terms(&classified.analysis.terms),
                why,
                discovery::arrival_score(&classified.retrieval),
            )
        });
    (finishing.online_indexing || note.is_some()).then(|| LearnedText {
        position: Position::new(source.position.partition, source.position.offset),
        analysis: engine.analyzer().learnable(&classified.analysis),
        // A text that matched no label is learned under none (`NO_LABEL`).
        label: classified.verdict.learn_as.clone(),
        confident: classified.verdict.confident,
        note,
    })
}

/// The records to deliver, in sending order: the hallucination report (if any), then the
/// prediction.
fn output_records(
    finishing: &Finishing,
    engine: &Engine,
    classification: &Classification,
    tally: &mut Tally,
) -> Vec<(OutputKind, Outgoing)> {
    let mut records = Vec::with_capacity(2);
    if let Some(report) = hallucination_report(engine, classification) {
        tally.hallucination = Some(report.kind);
        records.push((
            OutputKind::Hallucination,
            outputs::json_record(&finishing.topics.hallucinations, &report.text_id, &report),
        ));
    }
    let prediction = prediction_event(engine, classification);
    records.push((
        OutputKind::Prediction,
        outputs::json_record(
            &finishing.topics.predictions,
            &prediction.text_id,
            &prediction,
        ),
    ));
    records
}

#[cfg(test)]
#[path = "finish_tests.rs"]
mod tests;
