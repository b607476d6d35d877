//! One text's result in one round: what `texts-<strategy>.jsonl` records, and what the round's
//! metrics read.

use serde::Serialize;

use super::dataset::Sample;
use super::{llm_curve, READINGS};
use crate::engine::answer::HallucinationKind;
use crate::engine::prompt::ChoiceMode;
use crate::engine::{Engine, Status};
use crate::events::PredictionStatus;
use crate::one_text::Classified;

/// One text's prediction in one round, as `texts-<strategy>.jsonl` has it.
#[derive(Debug, Clone, Serialize)]
pub struct TextRecord {
    /// The round after which the text was classified.
    pub round: usize,
    /// The round whose held-out texts it is of: this round's are classified with online
    /// indexing, earlier rounds' without.
    pub text_round: usize,
    /// Its position among that round's held-out texts (1-based; after `--limit` and `--order`).
    pub line: usize,
    pub gold: String,
    /// The decided label; with status `no_match`, the best guess that was not published.
    pub label: String,
    /// `decided`, `needs_review` or `no_match` (published with no label).
    pub status: PredictionStatus,
    /// Whether `label` is the gold label (the best guess's, for a `no_match`: what `gorag
    /// calibrate` fits the confidence on; the accuracy counts a `no_match` wrong).
    pub right: bool,
    pub confidence: f64,
    pub graph_choice: String,
    pub candidates: Vec<String>,
    pub scores: Vec<f64>,
    /// What each candidate's score is made of, in the candidates' order.
    pub parts: Vec<crate::engine::confidence::CandidateParts>,
    /// How much of each candidate's own material the text matches, in the candidates' order
    /// (what the no-match rule reads).
    pub evidence: Vec<crate::engine::no_match::MatchEvidence>,
    pub signals: crate::engine::confidence::Signals,
}

/// One text's result, as the metrics need it.
pub(super) struct Scored {
    pub(super) record: TextRecord,
    /// What it was published as.
    pub(super) status: Status,
    /// What retrieval's own decision (no LLM) would have been published as.
    pub(super) graph_status: Status,
    /// How the LLM's answer reads at other weights (None when it was not asked).
    pub(super) llm_readings: Option<llm_curve::Readings>,
    /// Per reading of [`READINGS`], whether it would have been right (empty without an LLM).
    pub(super) readings: Vec<bool>,
    pub(super) gold: String,
    pub(super) label: String,
    pub(super) graph_choice: String,
    pub(super) hallucination: Option<HallucinationKind>,
    pub(super) gold_in_candidates: bool,
    pub(super) candidates: usize,
    pub(super) llm_failed: bool,
    pub(super) llm_calls: u32,
    pub(super) prompt_tokens: u32,
    /// First-token mass on the candidates' names (`scored` answers only).
    pub(super) on_list: Option<f64>,
}

impl Scored {
    pub(super) fn new(
        engine: &Engine,
        sample: &Sample,
        classified: &Classified,
        at: Where,
    ) -> Self {
        let readings = match &classified.raw_answer {
            // No answer (the LLM failed): every reading falls back to retrieval, like the
            // decision itself.
            None if classified.llm_failure.is_some() => {
                vec![classified.decision.label == sample.label; READINGS.len()]
            }
            None => Vec::new(),
            Some(answer) => READINGS
                .iter()
                .map(|&(_, mode, weight)| {
                    let reading = engine.decisions().decide_as(
                        &classified.retrieval,
                        Some(answer),
                        &classified.alternatives,
                        mode,
                        weight,
                    );
                    reading.label == sample.label
                        && !engine
                            .decisions()
                            .matches_nothing(&classified.retrieval, &reading)
                })
                .collect(),
        };
        // Every text's outcome, for studying a strategy text by text
        // (`GORAG_LOG=gorag::eval=trace`).
        tracing::trace!(
            gold = %sample.label,
            label = %classified.decision.label,
            graph_choice = %classified.retrieval.graph_choice,
            basis = ?classified.retrieval.basis,
            margin = ?classified.retrieval.margin(),
            candidates = ?classified.retrieval.label_ids(),
            scores = ?classified.retrieval.scores(),
            "text"
        );
        if let Some(kind) = classified.decision.hallucination {
            // What the model said, for studying the flag (`GORAG_LOG=gorag::eval=debug`).
            tracing::debug!(
                ?kind,
                gold = %sample.label,
                answer = classified.raw_answer.as_deref().unwrap_or_default(),
                alternatives = ?classified.alternatives,
                candidates = ?classified.retrieval.label_ids(),
                "hallucination"
            );
        }
        let decision = &classified.decision;
        let signals = engine.decisions().signals(
            &classified.retrieval,
            &decision.label,
            classified.raw_answer.as_deref(),
            &classified.alternatives,
        );
        let retrieval_only = engine.decisions().decide(&classified.retrieval, None);
        // Right as published: a text published with no label is wrong, whatever label the
        // decision held (as in every other accuracy eval prints).
        let published_right = |decision: &crate::engine::Decision| {
            decision.label == sample.label
                && !engine
                    .decisions()
                    .matches_nothing(&classified.retrieval, decision)
        };
        let llm_readings = classified.llm_asked.then(|| llm_curve::Readings {
            retrieval_confidence: retrieval_only.confidence,
            retrieval_right: published_right(&retrieval_only),
            fused_right: llm_curve::WEIGHTS
                .iter()
                .map(|&weight| match &classified.raw_answer {
                    Some(answer) => published_right(&engine.decisions().decide_as(
                        &classified.retrieval,
                        Some(answer),
                        &classified.alternatives,
                        ChoiceMode::Scored,
                        weight,
                    )),
                    None => published_right(&retrieval_only),
                })
                .collect(),
        });
        let status = classified.verdict.status;
        let record = TextRecord {
            round: at.round,
            text_round: at.text_round,
            line: at.line,
            gold: sample.label.clone(),
            label: decision.label.clone(),
            status: status.into(),
            right: decision.label == sample.label,
            confidence: decision.confidence,
            graph_choice: classified.retrieval.graph_choice.clone(),
            candidates: classified.retrieval.label_ids(),
            scores: classified.retrieval.scores(),
            parts: classified.retrieval.evidence().map(|e| e.parts).collect(),
            evidence: classified.retrieval.evidence().map(|e| e.matched).collect(),
            signals,
        };
        Self {
            status,
            graph_status: engine
                .decisions()
                .status(&classified.retrieval, &retrieval_only),
            llm_readings,
            record,
            readings,
            gold: sample.label.clone(),
            label: classified.decision.label.clone(),
            graph_choice: classified.retrieval.graph_choice.clone(),
            hallucination: classified.decision.hallucination,
            gold_in_candidates: classified.retrieval.offers(&sample.label),
            candidates: classified.retrieval.candidates.len(),
            llm_failed: classified.llm_failure.is_some(),
            llm_calls: classified.llm_calls,
            prompt_tokens: classified.prompt_tokens,
            on_list: engine
                .decisions()
                .on_list_mass(&classified.retrieval, &classified.alternatives),
        }
    }
}

impl Scored {
    /// Whether its published label is the gold label (a text published with no label has none
    /// right).
    pub(super) fn right(&self) -> bool {
        self.status != Status::NoMatch && self.label == self.gold
    }

    /// Whether retrieval's own decision would have been published right.
    pub(super) fn graph_right(&self) -> bool {
        self.graph_status != Status::NoMatch && self.graph_choice == self.gold
    }
}

/// Where a text was classified: the round, the round it is of, its position there.
#[derive(Debug, Clone, Copy)]
pub(super) struct Where {
    pub(super) round: usize,
    pub(super) text_round: usize,
    pub(super) line: usize,
}
