//! The index's vocabulary: term ↔ [`TermId`]. Every per-term table of the index (statistics,
//! postings) is a `Vec` indexed by these ids, so a term is hashed once, when a document or a
//! query meets it, and never again by the weights' upkeep.

use std::sync::Arc;

use foldhash::HashMap;

use super::ids::TermId;
use super::renumber::keep_where;

/// Terms and their ids (dense, in the order terms were first met; renumbered by a compaction).
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    ids: HashMap<Arc<str>, TermId>,
    /// Per term id, the term (shared with `ids`).
    names: Vec<Arc<str>>,
}

impl Vocabulary {
    /// The id of a known term.
    pub fn get(&self, term: &str) -> Option<TermId> {
        self.ids.get(term).copied()
    }

    /// The id of `term`, and whether it is new (then it takes the next id, which every per-term
    /// table must now hold).
    pub(super) fn intern(&mut self, term: &str) -> (TermId, bool) {
        if let Some(&id) = self.ids.get(term) {
            return (id, false);
        }
        let id = TermId::at(self.names.len());
        let name: Arc<str> = Arc::from(term);
        self.ids.insert(Arc::clone(&name), id);
        self.names.push(name);
        (id, true)
    }

    /// The terms, by id.
    pub fn names(&self) -> &[Arc<str>] {
        &self.names
    }

    /// Distinct terms known to the index: the live documents' terms, those of documents evicted
    /// since the last compaction, learned terms a fold has not forgotten yet (kept across
    /// compactions and restores), and in a detached copy the scored texts' learned terms.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Renumber as the index compacts (`None`: the term is dropped).
    pub(super) fn compact(&mut self, term_ids: &[Option<TermId>]) {
        self.ids.retain(|_, id| term_ids[id.index()].is_some());
        for id in self.ids.values_mut() {
            *id = term_ids[id.index()].unwrap_or(TermId(u32::MAX));
        }
        self.names = keep_where(std::mem::take(&mut self.names), |term| {
            term_ids[term].is_some()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids and names stay each other's inverse through interning and compaction.
    #[test]
    fn ids_and_names_stay_inverse_through_a_compaction() {
        let mut vocabulary = Vocabulary::default();
        assert_eq!(vocabulary.intern("oven"), (TermId(0), true));
        assert_eq!(vocabulary.intern("bread"), (TermId(1), true));
        assert_eq!(vocabulary.intern("oven"), (TermId(0), false));
        assert_eq!(vocabulary.intern("dough"), (TermId(2), true));
        vocabulary.compact(&[Some(TermId(0)), None, Some(TermId(1))]);
        assert_eq!(vocabulary.len(), 2);
        assert_eq!(vocabulary.get("bread"), None);
        for (at, name) in vocabulary.names().iter().enumerate() {
            assert_eq!(vocabulary.get(name), Some(TermId::at(at)));
        }
        assert_eq!(vocabulary.intern("bread"), (TermId(2), true), "the next id");
    }
}
