//! A query against the index: the cosine of its terms' weights with every document sharing a
//! term with it, through the postings (a query costs its own terms' postings, not a scan of
//! every text).

use super::{DocId, Hit, TermId, TextIndex};
use crate::engine::terms::TermCounts;

/// A query whose postings touch more than one document in this many reads its hits off the
/// whole accumulator rather than sorting the touched ids.
const SCAN_WHEN_TOUCHED: usize = 8;

impl TextIndex {
    /// Cosine similarity of the query with every document sharing a term with it (in document
    /// order). The query's norm counts all its terms, known to the index or not.
    pub fn search(&self, query: &TermCounts) -> Vec<Hit> {
        let mut weights: Vec<(TermId, f64)> = Vec::new();
        let mut norm = 0.0;
        for (term, count) in &query.counts {
            let id = self.vocabulary.get(term);
            let weight = self.stats.weight(id, *count);
            norm += weight * weight;
            if let Some(id) = id {
                weights.push((id, weight));
            }
        }
        if norm == 0.0 || self.docs.is_empty() {
            return Vec::new();
        }
        let norm = norm.sqrt();
        let (scores, mut touched) = self.postings.dot(&weights, self.docs.len());
        // In document order: the touched ids sorted (a document touched again after a zero
        // contribution appears twice), or, when a query touches a large share of the index (a
        // common word in every label's text), the accumulator scanned instead.
        let hit = |id: DocId| {
            let s = scores[id.index()];
            let doc = self
                .docs
                .get(id)
                .filter(|_| s > 0.0 && self.docs.is_alive(id))?;
            Some(Hit {
                doc: id,
                kind: doc.kind,
                label: doc.label,
                similarity: s / norm,
            })
        };
        if touched.len() * SCAN_WHEN_TOUCHED > self.docs.len() {
            (0..self.docs.len())
                .map(DocId::at)
                .filter_map(hit)
                .collect()
        } else {
            touched.sort_unstable();
            touched.dedup();
            touched.into_iter().filter_map(hit).collect()
        }
    }
}
