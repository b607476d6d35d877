//! The document store: every document the index ever took, by [`DocId`], with its terms' ids,
//! whether it is alive, and the queues of classified texts that bound each kind by its capacity
//! (the oldest goes first). An evicted or taken-back document is only tombstoned here; it goes,
//! and the ids after it move down, at a compaction.

use std::collections::VecDeque;

use super::ids::{DocId, TermId};
use super::renumber::{keep_where, renumbering};
use super::{ClassifiedCapacity, DocKind, IndexDoc};

/// Documents in the order they were added, tombstones included until a compaction.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    docs: Vec<IndexDoc>,
    /// Per document, its terms' ids (in its terms' order): weights are recomputed without
    /// hashing a string.
    doc_terms: Vec<Vec<TermId>>,
    alive: Vec<bool>,
    /// Alive seen texts, oldest first.
    seen: VecDeque<DocId>,
    /// Alive tentative texts, oldest first.
    tentative: VecDeque<DocId>,
    dead: usize,
    capacity: ClassifiedCapacity,
}

impl Documents {
    pub fn new(capacity: ClassifiedCapacity) -> Self {
        Self {
            capacity,
            ..Self::default()
        }
    }

    /// How many classified texts of each kind are kept (the tests rebuild an index with it).
    #[cfg(test)]
    pub fn capacity(&self) -> ClassifiedCapacity {
        self.capacity
    }

    /// Add a document whose terms have these ids; a classified text joins its kind's queue.
    pub(super) fn push(&mut self, doc: IndexDoc, terms: Vec<TermId>) -> DocId {
        let id = DocId::at(self.docs.len());
        self.doc_terms.push(terms);
        if let Some(queue) = queue_of(&mut self.seen, &mut self.tentative, doc.kind) {
            queue.push_back(id);
        }
        self.docs.push(doc);
        self.alive.push(true);
        id
    }

    /// A document by id (a tombstoned one too, until the next compaction).
    pub fn get(&self, id: DocId) -> Option<&IndexDoc> {
        self.docs.get(id.index())
    }

    /// The alive documents, in order: what a snapshot stores.
    pub fn alive(&self) -> impl Iterator<Item = &IndexDoc> {
        self.docs
            .iter()
            .zip(&self.alive)
            .filter(|(_, alive)| **alive)
            .map(|(doc, _)| doc)
    }

    /// The alive documents with their ids, in order.
    pub fn alive_with_ids(&self) -> impl Iterator<Item = (DocId, &IndexDoc)> {
        self.docs
            .iter()
            .enumerate()
            .zip(&self.alive)
            .filter(|(_, alive)| **alive)
            .map(|((at, doc), _)| (DocId::at(at), doc))
    }

    /// Documents held, tombstones included: the range of [`DocId`]s.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Whether `id` is a live document (false for a tombstone or an id past the end).
    pub fn is_alive(&self, id: DocId) -> bool {
        self.alive.get(id.index()).copied().unwrap_or(false)
    }

    /// A document's terms' ids, in its terms' order.
    pub(super) fn term_ids(&self, id: DocId) -> &[TermId] {
        &self.doc_terms[id.index()]
    }

    /// A document's terms: (id, count), in its terms' order.
    pub(super) fn term_counts(
        &self,
        id: DocId,
    ) -> impl ExactSizeIterator<Item = (TermId, u32)> + '_ {
        self.doc_terms[id.index()]
            .iter()
            .zip(&self.docs[id.index()].terms.counts)
            .map(|(&term, (_, count))| (term, *count))
    }

    /// A labelled example's number among its label's examples, from 1 in the order they were
    /// indexed; None when `id` is no example.
    pub fn example_number(&self, id: DocId) -> Option<u32> {
        let doc = self.get(id).filter(|d| d.kind == DocKind::Example)?;
        let before = self.docs[..id.index()]
            .iter()
            .filter(|d| d.kind == DocKind::Example && d.label == doc.label)
            .count();
        Some(1 + before as u32)
    }

    /// Alive classified texts of `kind` (labelled material: none are queued).
    pub fn classified_count(&self, kind: DocKind) -> usize {
        match kind {
            DocKind::Seen => self.seen.len(),
            DocKind::Tentative => self.tentative.len(),
            DocKind::Example | DocKind::Name | DocKind::Description => 0,
        }
    }

    /// Evicted documents not yet compacted away.
    pub fn tombstones(&self) -> usize {
        self.dead
    }

    /// How many documents of `kind` are kept (labelled material: all).
    pub fn capacity_of(&self, kind: DocKind) -> usize {
        match kind {
            DocKind::Seen => self.capacity.seen,
            DocKind::Tentative => self.capacity.tentative,
            DocKind::Example | DocKind::Name | DocKind::Description => usize::MAX,
        }
    }

    /// Take the oldest classified texts past their kind's capacity off their queues (seen
    /// texts first, each kind oldest first), for the caller to tombstone.
    pub(super) fn over_capacity(&mut self) -> Vec<DocId> {
        let mut evicted = Vec::new();
        for kind in [DocKind::Seen, DocKind::Tentative] {
            let capacity = self.capacity_of(kind);
            if let Some(queue) = queue_of(&mut self.seen, &mut self.tentative, kind) {
                while queue.len() > capacity {
                    evicted.extend(queue.pop_front());
                }
            }
        }
        evicted
    }

    /// Take a live classified text off its queue, for the caller to tombstone; false when `id`
    /// is no such text (labelled material, dead, or unknown).
    pub(super) fn take_back(&mut self, id: DocId) -> bool {
        let Some(kind) = self
            .docs
            .get(id.index())
            .filter(|_| self.alive[id.index()])
            .map(|d| d.kind)
        else {
            return false;
        };
        let Some(queue) = queue_of(&mut self.seen, &mut self.tentative, kind) else {
            return false;
        };
        let Some(at) = queue.iter().position(|&d| d == id) else {
            return false;
        };
        queue.remove(at);
        true
    }

    /// Mark a document dead (off its queue already): its terms, for the statistics to let go.
    pub(super) fn tombstone(&mut self, id: DocId) -> &[TermId] {
        self.alive[id.index()] = false;
        self.dead += 1;
        &self.doc_terms[id.index()]
    }

    /// Whether the tombstones are a quarter of what the postings walk over: time to compact.
    pub fn compaction_due(&self) -> bool {
        self.dead * 4 > self.docs.len()
    }

    /// New ids of the alive documents (`None` for the dead).
    pub(super) fn renumbering(&self) -> Vec<Option<DocId>> {
        renumbering(self.alive.iter().copied(), DocId)
    }

    /// Drop the dead documents and renumber the rest and their terms (`doc_ids` from
    /// [`Documents::renumbering`]; a term an alive document holds is never dropped).
    pub(super) fn compact(&mut self, doc_ids: &[Option<DocId>], term_ids: &[Option<TermId>]) {
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

/// The queue of classified texts of `kind` (labelled material has none).
fn queue_of<'q>(
    seen: &'q mut VecDeque<DocId>,
    tentative: &'q mut VecDeque<DocId>,
    kind: DocKind,
) -> Option<&'q mut VecDeque<DocId>> {
    match kind {
        DocKind::Seen => Some(seen),
        DocKind::Tentative => Some(tentative),
        DocKind::Example | DocKind::Name | DocKind::Description => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LabelPos, TermCounts};
    use super::*;

    fn doc(kind: DocKind, label: u32) -> IndexDoc {
        IndexDoc {
            kind,
            label: LabelPos(label),
            terms: TermCounts::of("oven bread"),
            text: None,
        }
    }

    /// The queues hold exactly the alive classified texts, oldest first, through eviction,
    /// taking back and compaction.
    #[test]
    fn queues_hold_the_alive_classified_texts_oldest_first() {
        let mut docs = Documents::new(ClassifiedCapacity {
            seen: 2,
            tentative: 1,
        });
        docs.push(doc(DocKind::Example, 0), vec![TermId(0)]);
        for label in 0..3 {
            docs.push(doc(DocKind::Seen, label), vec![TermId(0)]);
        }
        docs.push(doc(DocKind::Tentative, 0), vec![TermId(1)]);
        assert_eq!(docs.over_capacity(), [DocId(1)], "the oldest seen text");
        assert_eq!(docs.tombstone(DocId(1)), [TermId(0)]);
        assert!(!docs.take_back(DocId(1)), "dead already");
        assert!(!docs.take_back(DocId(0)), "labelled material stays");
        assert!(docs.take_back(DocId(4)));
        docs.tombstone(DocId(4));
        assert_eq!(
            (
                docs.classified_count(DocKind::Seen),
                docs.classified_count(DocKind::Tentative)
            ),
            (2, 0)
        );
        assert_eq!((docs.tombstones(), docs.compaction_due()), (2, true));
        let doc_ids = docs.renumbering();
        docs.compact(&doc_ids, &[Some(TermId(0)), None]);
        assert_eq!((docs.len(), docs.tombstones()), (3, 0));
        let labels: Vec<u32> = docs.alive().map(|d| d.label.0).collect();
        assert_eq!(labels, [0, 1, 2]);
        docs.push(doc(DocKind::Seen, 3), vec![TermId(0)]);
        assert_eq!(docs.over_capacity(), [DocId(1)], "renumbered, still oldest");
        assert_eq!(docs.example_number(DocId(0)), Some(1));
        assert_eq!(docs.example_number(DocId(1)), None);
    }
}
