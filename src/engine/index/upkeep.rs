//! Keeping the index's weights and postings current: posting a document, reweighing after a
//! round (everything) or a fold (only the documents holding a term whose weight changed, or
//! everything when the number of labels changes), and compacting evicted documents away (no
//! weight changes: what evicted documents taught stays, by term id, until a fold forgets it).
//!
//! Every path gives the weights a full recompute from the same state would give, bit for bit:
//! a document's weights are always computed by [`TextIndex::doc_weights`], and a term's inverse
//! factor by `inverse_of` from inputs that change only where these functions look. The lockstep
//! test in `tests.rs` compares a running index with one rebuilt from its snapshot at every step.

use super::{tf_weight, DocId, TermId, TermWeighting, TextIndex};

impl TextIndex {
    /// A document's normalised weights, in its terms' order (none when its norm is 0).
    fn doc_weights(&self, id: DocId) -> Vec<(TermId, f32)> {
        let doc = &self.docs[id.index()];
        let weights: Vec<(TermId, f64)> = self.doc_terms[id.index()]
            .iter()
            .zip(&doc.terms.counts)
            .map(|(&term_id, (_, count))| {
                (term_id, tf_weight(*count) * self.inverse[term_id.index()])
            })
            .collect();
        let norm = weights.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
        if norm == 0.0 {
            return Vec::new();
        }
        weights
            .into_iter()
            .map(|(term_id, weight)| (term_id, (weight / norm) as f32))
            .collect()
    }

    /// Post one document's weights (the newest document: lists stay in document order).
    pub(super) fn post(&mut self, id: DocId) {
        for (term_id, weight) in self.doc_weights(id) {
            self.postings[term_id.index()].push((id, weight));
        }
    }

    /// Overwrite a posted document's weights in place. False when it cannot be done in place
    /// (a term twice in one document, or a weight never posted): the caller recomputes.
    fn repost(&mut self, id: DocId) -> bool {
        let weights = self.doc_weights(id);
        if weights.len() != self.doc_terms[id.index()].len() {
            return false;
        }
        for (term_id, weight) in weights {
            let list = &mut self.postings[term_id.index()];
            let at = list.partition_point(|&(doc, _)| doc < id);
            let posted = list[at..].iter().take_while(|(doc, _)| *doc == id).count();
            if posted != 1 {
                return false;
            }
            list[at].1 = weight;
        }
        true
    }

    /// Fold what classified texts taught into the weights and recompute them all: after
    /// examples arrive (they change every weight).
    pub fn reweigh(&mut self) {
        self.fold();
        self.recompute();
    }

    /// Fold what classified texts taught since the last fold, forgetting the terms no live
    /// document holds any more. Returns the terms whose labels changed (weights unchanged
    /// until [`TextIndex::reweigh_terms`] or a recompute).
    pub(super) fn fold(&mut self) -> Vec<TermId> {
        let live_docs = &self.live_docs;
        self.learned.fold(|term| live_docs[term.index()] > 0)
    }

    /// After a fold: reweigh the terms whose labels changed, and repost the live documents
    /// holding one whose weight moved. A change in the number of labels moves every weight:
    /// then everything is recomputed. `idf` never reads the spread (it is kept folded for a
    /// switch of weighting).
    pub(super) fn reweigh_terms(&mut self, changed: &[TermId]) {
        if self.weighting != TermWeighting::LabelSpread {
            return;
        }
        if self.count_labels() != self.label_count {
            self.recompute();
            return;
        }
        let mut affected = vec![false; self.docs.len()];
        for &term in changed {
            let inverse = self.inverse_of(Some(term));
            let id = term.index();
            if inverse.to_bits() == self.inverse[id].to_bits() {
                continue;
            }
            self.inverse[id] = inverse;
            for &(doc, _) in &self.postings[id] {
                affected[doc.index()] = true;
            }
        }
        let live_affected: Vec<DocId> = (0..self.docs.len())
            .filter(|&doc| affected[doc] && self.alive[doc])
            .map(DocId::at)
            .collect();
        for doc in live_affected {
            if !self.repost(doc) {
                self.recompute();
                return;
            }
        }
    }

    /// Labels with examples or with classified texts folded in (the label spread's N).
    fn count_labels(&self) -> usize {
        let learned_only = self
            .learned
            .folded_labels()
            .filter(|label| !self.labels_with_examples.contains(label))
            .count();
        self.labels_with_examples.len() + learned_only
    }

    /// Recompute every weight from the folded state (evicted documents compacted away first).
    pub(super) fn recompute(&mut self) {
        if self.dead > 0 {
            self.compact();
        }
        self.label_count = self.count_labels();
        for id in 0..self.inverse.len() {
            self.inverse[id] = self.inverse_of(Some(TermId::at(id)));
        }
        for list in &mut self.postings {
            list.clear();
        }
        for id in 0..self.docs.len() {
            self.post(DocId::at(id));
        }
    }

    /// Drop evicted documents and the terms only they held and nothing was learned of,
    /// renumbering both (ids never affect results). Weights are kept: they depend on examples,
    /// which are never evicted, and on what was folded, which changes only at a fold.
    pub(super) fn compact(&mut self) {
        let doc_ids = renumbering(self.alive.iter().copied(), DocId);
        let pending = self.learned.pending_terms();
        let term_ids = renumbering(
            (0..self.live_docs.len()).map(|term| {
                self.live_docs[term] > 0
                    || pending[term]
                    || self.learned.has_folded(TermId::at(term))
            }),
            TermId,
        );
        self.learned.compact(&term_ids);
        self.vocabulary
            .retain(|_, id| term_ids[id.index()].is_some());
        for id in self.vocabulary.values_mut() {
            *id = term_ids[id.index()].unwrap_or(TermId(u32::MAX));
        }
        let held = |term: usize| term_ids[term].is_some();
        self.names = keep_where(std::mem::take(&mut self.names), held);
        self.live_docs = keep_where(std::mem::take(&mut self.live_docs), held);
        self.df = keep_where(std::mem::take(&mut self.df), held);
        self.example_labels = keep_where(std::mem::take(&mut self.example_labels), held);
        self.inverse = keep_where(std::mem::take(&mut self.inverse), held);
        let mut postings = keep_where(std::mem::take(&mut self.postings), held);
        for list in &mut postings {
            list.retain_mut(|(doc, _)| match doc_ids[doc.index()] {
                Some(new) => {
                    *doc = new;
                    true
                }
                None => false,
            });
        }
        self.postings = postings;
        let alive = |doc: usize| doc_ids[doc].is_some();
        self.docs = keep_where(std::mem::take(&mut self.docs), alive);
        let mut doc_terms = keep_where(std::mem::take(&mut self.doc_terms), alive);
        for terms in &mut doc_terms {
            for term in terms.iter_mut() {
                *term = term_ids[term.index()].unwrap_or(TermId(u32::MAX));
            }
        }
        self.doc_terms = doc_terms;
        self.alive = vec![true; self.docs.len()];
        for queue in [&mut self.seen, &mut self.tentative] {
            for doc in queue.iter_mut() {
                *doc = doc_ids[doc.index()].unwrap_or(DocId(u32::MAX));
            }
        }
        self.dead = 0;
    }
}

/// New ids for the items kept, in order (`None` for the dropped), made with `id`.
fn renumbering<T>(kept: impl Iterator<Item = bool>, id: impl Fn(u32) -> T) -> Vec<Option<T>> {
    let mut next = 0u32;
    kept.map(|keep| {
        keep.then(|| {
            next += 1;
            id(next - 1)
        })
    })
    .collect()
}

/// The items whose position `keep` accepts, in order.
pub(super) fn keep_where<T>(items: Vec<T>, keep: impl Fn(usize) -> bool) -> Vec<T> {
    items
        .into_iter()
        .enumerate()
        .filter(|(at, _)| keep(*at))
        .map(|(_, item)| item)
        .collect()
}
