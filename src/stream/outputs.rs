//! The records a finished text turns into.

use crate::engine::{Analysis, Decision, Engine, Retrieval};
use crate::events::decode::Rejection;
use crate::events::{
    DeadLetterHeaders, HallucinationReport, InputPosition, Prediction, PredictionStatus, Rationale,
    StageLatency, TextEvent, DEAD_LETTER_MAX_VALUE_BYTES, EVENT_VERSION, PREDICTION_VERSION,
};

use super::kafka::Outgoing;

/// The original record, untouched, with Connect-style headers saying why; a value too large
/// for the topic is cut to its first [`DEAD_LETTER_MAX_VALUE_BYTES`] (see the header
/// `gorag.truncated_from`).
pub fn dead_letter(
    topic: &str,
    position: &InputPosition,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    stage: &str,
    rejection: &Rejection,
) -> Outgoing {
    let mut headers = DeadLetterHeaders::new(position, stage, rejection);
    let mut payload = payload;
    if payload.len() > DEAD_LETTER_MAX_VALUE_BYTES {
        headers.truncated_from = Some(payload.len().to_string());
        payload.truncate(DEAD_LETTER_MAX_VALUE_BYTES);
    }
    Outgoing {
        topic: topic.to_string(),
        key,
        payload,
        headers: headers
            .pairs()
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect(),
    }
}

pub struct Classification<'a> {
    pub event: &'a TextEvent,
    pub analysis: &'a Analysis,
    pub retrieval: &'a Retrieval,
    pub decision: &'a Decision,
    /// Whether online indexing may learn from the decision (decided once, by the service).
    pub confident: bool,
    pub llm_asked: bool,
    pub llm_changed: bool,
    pub raw_answer: Option<&'a str>,
    pub llm_error: Option<&'a str>,
    pub model: Option<&'a str>,
    pub latency: StageLatency,
    pub position: &'a InputPosition,
}

pub fn prediction(engine: &Engine, c: &Classification<'_>) -> Prediction {
    Prediction {
        version: PREDICTION_VERSION,
        text_id: c.event.id.clone(),
        label: c.decision.label.clone(),
        label_name: engine.label(&c.decision.label).and_then(|l| l.name.clone()),
        source: c.decision.source,
        candidates: c.retrieval.candidates.clone(),
        candidate_scores: c
            .retrieval
            .scores
            .iter()
            .map(|s| (s * 10_000.0).round() / 10_000.0)
            .collect(),
        basis: c.retrieval.basis,
        confident: c.confident,
        confidence: Some(c.decision.confidence),
        status: if engine.needs_review(c.retrieval, c.decision) {
            PredictionStatus::NeedsReview
        } else {
            PredictionStatus::Decided
        },
        llm_asked: c.llm_asked,
        llm_changed: c.llm_changed,
        rationale: rationale(c.retrieval, &c.decision.label),
        keywords: c
            .analysis
            .keywords
            .iter()
            .map(|k| k.phrase.clone())
            .collect(),
        hallucination: c.decision.hallucination.is_some(),
        hallucination_kind: c.decision.hallucination,
        llm_error: c.llm_error.map(str::to_string),
        round: engine.last_round().map(str::to_string),
        label_version: engine.label_version(),
        model: c.model.map(str::to_string),
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
    let at = retrieval.candidates.iter().position(|c| c == label)?;
    let matched = retrieval.example_matches.get(at)?.as_ref()?;
    let text = retrieval.examples.get(at)?.as_deref()?;
    Some(Rationale {
        example_id: format!("{label}#{}", matched.number),
        excerpt: crate::engine::prompt::clip(text, EXCERPT_CHARS).to_string(),
        terms: matched.terms.clone(),
    })
}

pub fn hallucination(engine: &Engine, c: &Classification<'_>) -> Option<HallucinationReport> {
    let kind = c.decision.hallucination?;
    Some(HallucinationReport {
        version: EVENT_VERSION,
        text_id: c.event.id.clone(),
        kind,
        raw_answer: c.raw_answer.unwrap_or_default().to_string(),
        candidates: c.retrieval.candidates.clone(),
        label: c.decision.label.clone(),
        source: c.decision.source,
        model: c.model.map(str::to_string),
        label_version: engine.label_version(),
        input: c.position.clone(),
    })
}

pub fn json_record<T: serde::Serialize>(topic: &str, key: &str, value: &T) -> Outgoing {
    Outgoing {
        topic: topic.to_string(),
        key: Some(key.as_bytes().to_vec()),
        // Serialising these plain structs cannot fail.
        payload: serde_json::to_vec(value).unwrap_or_default(),
        headers: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::decode::Reason;

    fn letter(payload: Vec<u8>) -> Outgoing {
        let position = InputPosition {
            topic: "texts".into(),
            partition: 1,
            offset: 7,
        };
        let rejection = Rejection::new(Reason::OversizedText, "too long");
        dead_letter("dlq", &position, None, payload, "decode", &rejection)
    }

    fn header<'a>(record: &'a Outgoing, name: &str) -> Option<&'a str> {
        record
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn a_value_that_fits_is_kept_whole() {
        let record = letter(vec![b'x'; DEAD_LETTER_MAX_VALUE_BYTES]);
        assert_eq!(record.payload.len(), DEAD_LETTER_MAX_VALUE_BYTES);
        assert_eq!(header(&record, "gorag.truncated_from"), None);
        assert_eq!(header(&record, "gorag.reason"), Some("oversized_text"));
    }

    #[test]
    fn a_huge_value_is_cut_and_says_so() {
        let record = letter(vec![b'x'; 10 * 1024 * 1024]);
        assert_eq!(record.payload.len(), DEAD_LETTER_MAX_VALUE_BYTES);
        assert_eq!(header(&record, "gorag.truncated_from"), Some("10485760"));
    }
}
