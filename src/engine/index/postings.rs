//! The inverted index proper: per term, the documents holding it and the term's normalised
//! weight in each, in document order. A query reads only its own terms' lists, never every
//! document.

use super::ids::{DocId, TermId};
use super::renumber::keep_where;

/// Per term id: (document, weight), documents ascending.
#[derive(Debug, Clone, Default)]
pub struct Postings {
    lists: Vec<Vec<(DocId, f32)>>,
}

impl Postings {
    /// A new term id (the next one), posted nowhere yet.
    pub fn push_term(&mut self) {
        self.lists.push(Vec::new());
    }

    /// Post a document's weights (the newest document: lists stay in document order).
    pub fn post(&mut self, doc: DocId, weights: Vec<(TermId, f32)>) {
        for (term, weight) in weights {
            self.lists[term.index()].push((doc, weight));
        }
    }

    /// Overwrite a posted document's weights in place. False when it cannot be done in place
    /// (a term twice in one document, or a weight never posted): the caller recomputes.
    pub fn repost(&mut self, doc: DocId, weights: Vec<(TermId, f32)>) -> bool {
        for (term, weight) in weights {
            let list = &mut self.lists[term.index()];
            let at = list.partition_point(|&(d, _)| d < doc);
            let posted = list[at..].iter().take_while(|(d, _)| *d == doc).count();
            if posted != 1 {
                return false;
            }
            list[at].1 = weight;
        }
        true
    }

    /// Every list emptied (the terms stay): before every document is posted again.
    pub fn clear(&mut self) {
        for list in &mut self.lists {
            list.clear();
        }
    }

    /// The documents `term` is posted for, ascending.
    pub fn docs_holding(&self, term: TermId) -> impl Iterator<Item = DocId> + '_ {
        self.lists[term.index()].iter().map(|&(doc, _)| doc)
    }

    /// Each document's dot product with a query's weights (indexed by document, `docs` of
    /// them), and the documents touched, in the order they were first touched (one touched
    /// again after a zero contribution appears twice).
    pub fn dot(&self, query: &[(TermId, f64)], docs: usize) -> (Vec<f64>, Vec<DocId>) {
        // Dense accumulator, but only the documents that share a term are visited afterwards.
        let mut scores = vec![0.0f64; docs];
        let mut touched: Vec<DocId> = Vec::new();
        for &(term, weight) in query {
            for &(doc, w) in &self.lists[term.index()] {
                let score = &mut scores[doc.index()];
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += weight * f64::from(w);
            }
        }
        (scores, touched)
    }

    /// Renumber terms and documents as the index compacts (`None`: dropped, with its
    /// postings).
    pub fn compact(&mut self, term_ids: &[Option<TermId>], doc_ids: &[Option<DocId>]) {
        let mut lists = keep_where(std::mem::take(&mut self.lists), |term| {
            term_ids[term].is_some()
        });
        for list in &mut lists {
            list.retain_mut(|(doc, _)| match doc_ids[doc.index()] {
                Some(new) => {
                    *doc = new;
                    true
                }
                None => false,
            });
        }
        self.lists = lists;
    }

    /// The weights posted for `doc` under `term`, in list order (bit patterns: the lockstep
    /// tests compare them exactly).
    #[cfg(test)]
    pub fn posted(&self, term: TermId, doc: DocId) -> Vec<u32> {
        self.lists[term.index()]
            .iter()
            .filter(|(d, _)| *d == doc)
            .map(|(_, weight)| weight.to_bits())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(pairs: &[(u32, f32)]) -> Vec<(TermId, f32)> {
        pairs.iter().map(|&(t, w)| (TermId(t), w)).collect()
    }

    /// A repost overwrites in place only a weight posted exactly once for the document.
    #[test]
    fn a_repost_overwrites_in_place_or_gives_up() {
        let mut postings = Postings::default();
        postings.push_term();
        postings.push_term();
        postings.post(DocId(0), weights(&[(0, 0.6), (1, 0.8)]));
        postings.post(DocId(1), weights(&[(0, 1.0)]));
        assert!(postings.repost(DocId(0), weights(&[(0, 0.8), (1, 0.6)])));
        assert_eq!(postings.posted(TermId(0), DocId(0)), [0.8f32.to_bits()]);
        assert_eq!(postings.posted(TermId(0), DocId(1)), [1.0f32.to_bits()]);
        assert!(
            !postings.repost(DocId(1), weights(&[(1, 1.0)])),
            "never posted there"
        );
        postings.post(DocId(2), weights(&[(1, 0.5), (1, 0.5)]));
        assert!(!postings.repost(DocId(2), weights(&[(1, 0.5)])), "twice");
    }

    /// A compaction drops the dropped documents' postings and renumbers the rest, in order.
    #[test]
    fn a_compaction_keeps_lists_in_document_order() {
        let mut postings = Postings::default();
        for _ in 0..3 {
            postings.push_term();
        }
        for doc in 0..4 {
            postings.post(DocId(doc), weights(&[(doc % 2, 1.0), (2, 0.5)]));
        }
        let (scores, touched) = postings.dot(&[(TermId(2), 1.0)], 4);
        assert_eq!((scores.len(), touched.len()), (4, 4));
        postings.compact(
            &[Some(TermId(0)), None, Some(TermId(1))],
            &[None, Some(DocId(0)), Some(DocId(1)), Some(DocId(2))],
        );
        let docs = |term| postings.docs_holding(TermId(term)).collect::<Vec<_>>();
        assert_eq!(docs(0), [DocId(1)], "doc 2, renumbered");
        assert_eq!(docs(1), [DocId(0), DocId(1), DocId(2)]);
    }
}
