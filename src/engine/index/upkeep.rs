//! Keeping the index's weights and postings current: reweighing after a round (everything) or
//! a fold (only the documents holding a term whose weight changed, or everything when the
//! number of labels changes), and compacting evicted documents away (no weight changes: what
//! evicted documents taught stays, by term id, until a fold forgets it).
//!
//! Every path gives the weights a full recompute from the same state would give, bit for bit:
//! a document's weights are always computed by [`super::TermStats::doc_weights`], and a term's inverse
//! factor by the statistics from inputs that change only where these functions look. The
//! lockstep test in `tests.rs` compares a running index with one rebuilt from its snapshot at
//! every step.

use super::renumber::renumbering;
use super::term_stats::Reweighed;
use super::{DocId, TermId, TextIndex};

impl TextIndex {
    /// Fold what classified texts taught into the weights and recompute them all: after
    /// examples arrive (they change every weight).
    pub fn reweigh(&mut self) {
        self.stats.fold();
        self.recompute();
    }

    /// After a fold: reweigh the terms whose labels changed, and repost the live documents
    /// holding one whose weight moved. A change in the number of labels moves every weight:
    /// then everything is recomputed.
    pub(super) fn reweigh_terms(&mut self, changed: &[TermId]) {
        let moved = match self.stats.reweigh(changed) {
            Reweighed::Terms(moved) => moved,
            Reweighed::Everything => {
                self.recompute();
                return;
            }
        };
        if moved.is_empty() {
            return;
        }
        let mut affected = vec![false; self.docs.len()];
        for term in moved {
            for doc in self.postings.docs_holding(term) {
                affected[doc.index()] = true;
            }
        }
        let live_affected: Vec<DocId> = (0..self.docs.len())
            .map(DocId::at)
            .filter(|&doc| affected[doc.index()] && self.docs.is_alive(doc))
            .collect();
        for doc in live_affected {
            // In place, unless it cannot be (no weights at all, a term twice in one document):
            // then everything is recomputed.
            let terms = self.docs.term_counts(doc);
            let held = terms.len();
            let weights = self.stats.doc_weights(terms);
            if weights.len() != held || !self.postings.repost(doc, weights) {
                self.recompute();
                return;
            }
        }
    }

    /// Recompute every weight from the folded state (evicted documents compacted away first).
    pub(super) fn recompute(&mut self) {
        if self.docs.tombstones() > 0 {
            self.compact();
        }
        self.stats.recompute();
        self.postings.clear();
        for id in (0..self.docs.len()).map(DocId::at) {
            let weights = self.stats.doc_weights(self.docs.term_counts(id));
            self.postings.post(id, weights);
        }
    }

    /// Drop evicted documents and the terms only they held and nothing was learned of,
    /// renumbering both (ids never affect results). Weights are kept: they depend on examples,
    /// which are never evicted, and on what was folded, which changes only at a fold.
    pub(super) fn compact(&mut self) {
        let doc_ids = self.docs.renumbering();
        let term_ids = renumbering(self.stats.kept_terms().into_iter(), TermId);
        self.stats.compact(&term_ids);
        self.vocabulary.compact(&term_ids);
        self.postings.compact(&term_ids, &doc_ids);
        self.docs.compact(&doc_ids, &term_ids);
    }
}
