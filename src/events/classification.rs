//! The events a classified text turns into — its prediction and, when the LLM answered
//! outside the candidates, its hallucination report — built from the engine's results, the same
//! way by `gorag serve` and `gorag classify`.

use super::{
    HallucinationReport, InputPosition, Prediction, PredictionStatus, ProposalCandidate, Rationale,
    StageLatency, TextEvent, EVENT_VERSION, PREDICTION_VERSION,
};
use crate::engine::{Analysis, Decision, Engine, Retrieval, Verdict};

/// Everything a text's events are made of.
pub struct Classification<'a> {
    pub event: &'a TextEvent,
    pub analysis: &'a Analysis,
    pub retrieval: &'a Retrieval,
    pub decision: &'a Decision,
    /// What the decision comes to (read once, when it was made).
    pub verdict: &'a Verdict,
    pub llm_asked: bool,
    pub llm_changed: bool,
    pub raw_answer: Option<&'a str>,
    pub llm_error: Option<&'a str>,
    pub model: Option<&'a str>,
    pub latency: StageLatency,
    pub position: &'a InputPosition,
    /// The open proposal the text was held for (its verdict already says so).
    pub held: Option<ProposalCandidate>,
}

pub fn prediction_event(engine: &Engine, c: &Classification<'_>) -> Prediction {
    let status = PredictionStatus::from(c.verdict.status);
    // No match: no label, and no rationale for one; the candidates stay for a reviewer.
    let label = (status != PredictionStatus::NoMatch).then(|| c.decision.label.clone());
    Prediction {
        version: PREDICTION_VERSION,
        text_id: c.event.id.clone(),
        label_name: label
            .as_deref()
            .and_then(|label| engine.labels().get(label))
            .and_then(|l| l.name.clone()),
        rationale: label
            .as_deref()
            .and_then(|label| rationale(c.retrieval, label)),
        label,
        source: c.decision.source.into(),
        candidates: c.retrieval.label_ids(),
        candidate_scores: c
            .retrieval
            .candidates
            .iter()
            .filter_map(|c| c.score)
            .map(|s| (s * 10_000.0).round() / 10_000.0)
            .collect(),
        basis: c.retrieval.basis.into(),
        confident: c.verdict.confident,
        confidence: Some(c.decision.confidence),
        status,
        llm_asked: c.llm_asked,
        llm_changed: c.llm_changed,
        proposal: c.held.clone(),
        keywords: c
            .analysis
            .keywords
            .iter()
            .map(|k| k.phrase.clone())
            .collect(),
        hallucination: c.decision.hallucination.is_some(),
        hallucination_kind: c.decision.hallucination.map(Into::into),
        // An endpoint's error may quote what it was sent or answered: bounded like every
        // error text.
        llm_error: c.llm_error.map(crate::bounds::error_text),
        round: engine.labels().last_round().map(str::to_string),
        label_version: engine.labels().version(),
        // The model that was asked about this text: none when none was.
        model: c.model.filter(|_| c.llm_asked).map(str::to_string),
        latency: c.latency.clone(),
        gold_label: c.event.gold_label.clone(),
        metadata: c.event.metadata.clone(),
        input: c.position.clone(),
    }
}

/// Characters of an example shown in a rationale.
const EXCERPT_CHARS: usize = 160;

/// The decided label's closest example and the terms it shares with the text, when retrieval
/// ranked the label.
pub fn rationale(retrieval: &Retrieval, label: &str) -> Option<Rationale> {
    let evidence = retrieval.candidate(label)?.evidence.as_ref()?;
    let matched = evidence.example_match.as_ref()?;
    let text = evidence.example.as_deref()?;
    Some(Rationale {
        example_id: format!("{label}#{}", matched.number),
        excerpt: crate::engine::prompt::clip(text, EXCERPT_CHARS).to_string(),
        terms: matched.terms.clone(),
    })
}

pub fn hallucination_report(
    engine: &Engine,
    c: &Classification<'_>,
) -> Option<HallucinationReport> {
    let kind = c.decision.hallucination?;
    Some(HallucinationReport {
        version: EVENT_VERSION,
        text_id: c.event.id.clone(),
        kind: kind.into(),
        raw_answer: c.raw_answer.unwrap_or_default().to_string(),
        candidates: c.retrieval.label_ids(),
        label: c.decision.label.clone(),
        source: c.decision.source.into(),
        model: c.model.map(str::to_string),
        label_version: engine.labels().version(),
        input: c.position.clone(),
    })
}
