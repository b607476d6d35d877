//! What the desk counts of its answers: how many of each kind, and how often gorag's label
//! agreed with the reviewer's, by gorag's confidence — the live calibration check (a bucket
//! of confidence 0.8–0.9 should agree about 85 % of the time).

use crate::events::{Prediction, PredictionStatus};

use super::queue::ItemKind;

/// The confidence buckets' upper edges (the last takes the rest).
pub const BUCKET_EDGES: [f64; 5] = [0.2, 0.4, 0.6, 0.8, 0.9];

/// A bucket's name, as `/metrics` labels it.
pub fn bucket_name(bucket: usize) -> &'static str {
    [
        "0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-0.9", "0.9-1.0",
    ]
    .get(bucket)
    .copied()
    .unwrap_or("0.9-1.0")
}

/// The bucket of `confidence`.
pub fn bucket_of(confidence: f64) -> usize {
    BUCKET_EDGES
        .iter()
        .position(|&edge| confidence < edge)
        .unwrap_or(BUCKET_EDGES.len())
}

/// Answers to texts of one kind in one confidence bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Agreement {
    pub answers: u64,
    /// gorag's label was the reviewer's (or gorag said no match and the reviewer none).
    pub agreed: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// By bucket, for items that needed review.
    pub review: [Agreement; BUCKET_EDGES.len() + 1],
    /// By bucket, for audits (decided predictions picked at random).
    pub audit: [Agreement; BUCKET_EDGES.len() + 1],
    pub proposals_answered: u64,
    /// Items that could not be queued (the queue, or the predictions waiting for their text,
    /// at their bound): they wait in their topic until the desk restarts.
    pub not_queued: u64,
}

impl Tally {
    /// A reviewer gave `label` (none: no label fits) to a text gorag predicted as `prediction`.
    pub fn answered(&mut self, kind: ItemKind, prediction: &Prediction, label: Option<&str>) {
        let agreed = match (prediction.status, label) {
            (PredictionStatus::NoMatch, None) => true,
            (PredictionStatus::NoMatch, Some(_)) | (_, None) => false,
            (_, Some(label)) => prediction.label.as_deref() == Some(label),
        };
        let bucket = bucket_of(prediction.confidence.unwrap_or(0.0));
        let row = match kind {
            ItemKind::Audit => &mut self.audit,
            ItemKind::Review | ItemKind::Proposal => &mut self.review,
        };
        row[bucket].answers += 1;
        row[bucket].agreed += u64::from(agreed);
    }

    /// Texts answered, audits included.
    pub fn texts_answered(&self) -> u64 {
        self.review
            .iter()
            .chain(&self.audit)
            .map(|a| a.answers)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_at_their_edges() {
        assert_eq!(bucket_of(0.0), 0);
        assert_eq!(bucket_of(0.2), 1);
        assert_eq!(bucket_of(0.85), 4);
        assert_eq!(bucket_of(0.9), 5);
        assert_eq!(bucket_of(1.0), 5);
        assert_eq!(bucket_name(bucket_of(0.95)), "0.9-1.0");
    }
}
