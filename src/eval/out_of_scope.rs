//! `gorag eval --out-of-scope FILE`: texts that fit none of the dataset's classes, classified
//! after every round (never learned from), to measure how many gorag would still publish with
//! a decided label. The repository's own set is `examples/out-of-scope/texts.csv`.

use serde::Serialize;

use crate::engine::no_match::MatchEvidence;
use crate::engine::{Engine, EngineError, Status};
use crate::events::PredictionStatus;
use crate::one_text::TextSteps;

/// What a round's engine published for the out-of-scope texts, as shares of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct OutOfScopeShares {
    pub texts: usize,
    /// Published with a decided label: what should not happen to a text no class fits.
    pub decided: f64,
    pub needs_review: f64,
    pub no_match: f64,
}

impl OutOfScopeShares {
    /// The shares of a list of statuses (all 0 for none).
    pub fn of(statuses: &[Status]) -> Self {
        let n = statuses.len().max(1) as f64;
        let share = |status: Status| statuses.iter().filter(|&&s| s == status).count() as f64 / n;
        Self {
            texts: statuses.len(),
            decided: share(Status::Decided),
            needs_review: share(Status::NeedsReview),
            no_match: share(Status::NoMatch),
        }
    }
}

/// One out-of-scope text's prediction after a round, as `out-of-scope-<strategy>.jsonl` has it.
#[derive(Debug, Clone, Serialize)]
pub struct OutOfScopeRecord {
    pub round: usize,
    /// Its position in the file (from 1).
    pub line: usize,
    pub status: PredictionStatus,
    /// The decided label: with `no_match`, the best guess that was not published.
    pub label: String,
    pub confidence: f64,
    /// The decided label's evidence (what the no-match rule read), when retrieval ranked it.
    pub evidence: Option<MatchEvidence>,
    pub candidates: Vec<String>,
    pub scores: Vec<f64>,
}

/// Classify `texts` with `engine` as it stands after `round` (nothing learned): the shares of
/// what they were published as, and each text's record.
pub async fn measure(
    engine: &Engine,
    round: usize,
    texts: &[String],
    classifier: &TextSteps,
) -> Result<(OutOfScopeShares, Vec<OutOfScopeRecord>), EngineError> {
    let mut statuses = Vec::with_capacity(texts.len());
    let mut records = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let classified = classifier.classify(engine, text).await?;
        let (retrieval, decision) = (&classified.retrieval, &classified.decision);
        let status = classified.verdict.status;
        statuses.push(status);
        records.push(OutOfScopeRecord {
            round,
            line: i + 1,
            status: status.into(),
            label: decision.label.clone(),
            confidence: decision.confidence,
            evidence: retrieval
                .candidate(&decision.label)
                .and_then(|c| c.evidence.as_ref())
                .map(|e| e.matched),
            candidates: retrieval.label_ids(),
            scores: retrieval.scores(),
        });
    }
    Ok((OutOfScopeShares::of(&statuses), records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_count_each_status() {
        let shares = OutOfScopeShares::of(&[
            Status::Decided,
            Status::NoMatch,
            Status::NoMatch,
            Status::NeedsReview,
        ]);
        assert_eq!(shares.texts, 4);
        assert_eq!(
            (shares.decided, shares.needs_review, shares.no_match),
            (0.25, 0.25, 0.5)
        );
        assert_eq!(OutOfScopeShares::of(&[]).decided, 0.0);
    }
}
