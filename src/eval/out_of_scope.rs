//! `gorag eval --out-of-scope FILE`: texts that fit none of the dataset's classes, classified
//! after every round (never learned from), to measure how many gorag would still publish with
//! a decided label. The repository's own set is `examples/out-of-scope/texts.csv`.

use serde::Serialize;

use crate::classify::Classifier;
use crate::engine::{Engine, EngineError, Status};

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

/// Classify `texts` with `engine` as it stands (nothing learned) and count what each was
/// published as.
pub async fn measure(
    engine: &Engine,
    texts: &[String],
    classifier: &Classifier,
) -> Result<OutOfScopeShares, EngineError> {
    let mut statuses = Vec::with_capacity(texts.len());
    for text in texts {
        let classified = classifier.classify(engine, text).await?;
        statuses.push(engine.status(&classified.retrieval, &classified.decision));
    }
    Ok(OutOfScopeShares::of(&statuses))
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
