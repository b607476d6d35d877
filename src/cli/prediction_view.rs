//! A prediction as one line a person reads (`gorag tail --format prediction`,
//! `gorag classify --output table`).

use crate::events::{Prediction, PredictionStatus};

/// "id → label  0.93 decided (llm asked[, hallucination])  candidates: …"; a text that
/// matches no label shows "(no match)" in the label's place.
pub fn line(p: &Prediction) -> String {
    let status = match p.status {
        PredictionStatus::Decided => "decided",
        PredictionStatus::NeedsReview => "needs review",
        PredictionStatus::NoMatch => "no match",
    };
    let status = format!("{status} ({})", p.source.as_str());
    let confidence = p
        .confidence
        .map_or("    ".to_string(), |c| format!("{c:.2}"));
    let llm = match (p.llm_asked, p.llm_changed, p.hallucination) {
        (_, _, true) => "llm: hallucination",
        (true, true, false) => "llm changed it",
        (true, false, false) => "llm asked",
        (false, _, false) => "",
    };
    format!(
        "{:<10} → {:<22} {confidence} {:<21}{:<20} candidates: {}",
        p.text_id,
        p.label_name
            .as_deref()
            .or(p.label.as_deref())
            .unwrap_or("(no match)"),
        status,
        llm,
        candidate_list(&p.candidates, &p.candidate_scores)
    )
}

/// "a 0.61, b 0.32" when scores came with the candidates, else "a, b".
fn candidate_list(candidates: &[String], scores: &[f64]) -> String {
    if scores.len() != candidates.len() {
        return candidates.join(", ");
    }
    candidates
        .iter()
        .zip(scores)
        .map(|(c, s)| format!("{c} {s:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}
