//! The retrieval index: every text ranked retrieval can point to — labelled examples, label
//! names, label descriptions, texts already classified with confidence ("seen" texts, the
//! nodes of TopoRAG's text graph) and texts classified without it ("tentative" texts, heard
//! only for a text nothing labelled explains) — as TF-IDF vectors behind an inverted index, so a
//! query costs the postings of its own terms, not a scan of every text.
//!
//! Weights: sublinear term frequency `1 + ln(count)` times a smoothed inverse frequency
//! `ln((1 + N) / (1 + n)) + 1`, L2-normalised. By default ([`TermWeighting::LabelSpread`]) N
//! counts the labels with examples or classified texts and n the labels a term occurs under —
//! in their examples or in texts classified under them, as of the last fold ([`spread`]); with
//! [`TermWeighting::Idf`] (the `naive` baseline) N and n count labelled examples. What the
//! weights depend on changes only when examples arrive (a round: rare) and at folds, fixed
//! points of the log (compactions keep the weights), which keeps a restarted or
//! replayed engine bit-for-bit equal to one that ran without stopping.
//!
//! Classified texts are bounded: each keeps its `SEEN_TERMS` heaviest terms, and the oldest of
//! its kind is evicted past that kind's capacity (evicted documents are tombstoned and
//! compacted away in bulk, see [`upkeep`]).

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use foldhash::HashMap;
use serde::{Deserialize, Serialize};

use super::terms::TermCounts;

mod example_match;
mod ids;
mod search;
mod spread;
mod upkeep;

pub use example_match::ExampleMatch;
pub use ids::{DocId, LabelPos, TermId};
use spread::{insert_sorted, union_len, LearnedSpread};
pub use spread::{SpreadState, TermWeighting, FOLD_AT_LEAST};

/// Terms kept per classified text, seen or tentative (the heaviest by weight when it is added).
pub const SEEN_TERMS: usize = 100;

/// Characters of an example's text kept for prompts.
pub const EXAMPLE_TEXT_CHARS: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DocKind {
    /// A labelled example.
    Example,
    /// A label's name, as a tiny document.
    Name,
    /// A label's description (the operator's or the LLM's).
    Description,
    /// A text the engine classified with confidence (online indexing).
    Seen,
    /// A text the engine classified without confidence: it speaks only for a text that nothing
    /// labelled explains (see [`super::rank`]), so it never makes a decision confident.
    Tentative,
}

/// How many classified texts of each kind the index keeps (the oldest of a kind goes first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassifiedCapacity {
    pub seen: usize,
    pub tentative: usize,
}

/// One document as the state stores it: everything else is derived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexDoc {
    pub kind: DocKind,
    /// Position of its label in the engine's label list.
    pub label: LabelPos,
    pub terms: TermCounts,
    /// Examples only: the (clipped) text, shown next to its label in prompts.
    pub text: Option<String>,
}

/// A document's similarity to a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: DocId,
    pub kind: DocKind,
    pub label: LabelPos,
    pub similarity: f64,
}

#[derive(Debug, Clone, Default)]
pub struct TextIndex {
    weighting: TermWeighting,
    vocabulary: HashMap<Arc<str>, TermId>,
    /// Per term id, the term (shared with `vocabulary`).
    names: Vec<Arc<str>>,
    /// Per term, the live documents holding it.
    live_docs: Vec<u32>,
    /// Labelled examples containing each term.
    df: Vec<u32>,
    /// Labelled examples indexed (N).
    examples: u32,
    /// Per term, the labels (ascending) whose examples hold it.
    example_labels: Vec<Vec<LabelPos>>,
    /// Labels with at least one example.
    labels_with_examples: BTreeSet<LabelPos>,
    /// Labels with examples or with classified texts folded in (the label spread's N), as of
    /// the last recompute.
    label_count: usize,
    /// Per term, its weights' inverse-frequency factor (label spread or idf), refreshed with
    /// them.
    inverse: Vec<f64>,
    /// Per term, the labels classified texts holding it were decided under.
    learned: LearnedSpread,
    docs: Vec<IndexDoc>,
    /// Per document, its terms' ids (in its terms' order): weights are recomputed without
    /// hashing a string.
    doc_terms: Vec<Vec<TermId>>,
    alive: Vec<bool>,
    /// Per term: (document, weight).
    postings: Vec<Vec<(DocId, f32)>>,
    /// Alive seen texts, oldest first.
    seen: VecDeque<DocId>,
    /// Alive tentative texts, oldest first.
    tentative: VecDeque<DocId>,
    dead: usize,
    capacity: ClassifiedCapacity,
}

impl TextIndex {
    pub fn new(capacity: ClassifiedCapacity, weighting: TermWeighting) -> Self {
        Self {
            capacity,
            weighting,
            ..Self::default()
        }
    }

    /// Rebuild from stored documents (in their order) and what classified texts taught the
    /// weights, exactly as they were when stored: nothing is folded here.
    pub fn from_docs(
        docs: Vec<IndexDoc>,
        spread: SpreadState,
        capacity: ClassifiedCapacity,
        weighting: TermWeighting,
    ) -> Self {
        let mut index = Self::new(capacity, weighting);
        for doc in docs {
            index.push(doc);
        }
        // Learned terms no live document holds join the vocabulary without postings, unheld:
        // as in the running index, the next fold forgets them unless one holds them again.
        for (term, labels) in spread.folded {
            let id = index.learned_term_id(&term);
            index.learned.restore_folded(id, labels);
        }
        for (term, labels) in spread.pending {
            let id = index.learned_term_id(&term);
            index.learned.restore_pending(id, &labels);
        }
        index
            .learned
            .restore_counters(spread.folded_texts, spread.pending_texts);
        index.recompute();
        index.evict_over_capacity();
        index
    }

    /// The id of a term a snapshot says was learned (unheld when no live document holds it).
    fn learned_term_id(&mut self, term: &str) -> TermId {
        let id = self.term_id(term);
        if self.live_docs[id.index()] == 0 {
            self.learned.unheld(id);
        }
        id
    }

    /// An index of `docs` weighed as this one is now (what classified texts taught included),
    /// which never learns: discovery's copy of the labels' material. Queries made of the
    /// `scored` texts' terms are weighed exactly as here; in other queries, a term only this
    /// index knows counts as one nothing was learned of.
    pub fn detached<'a>(
        &self,
        docs: Vec<IndexDoc>,
        scored: impl IntoIterator<Item = &'a TermCounts>,
    ) -> Self {
        let mut index = Self::new(ClassifiedCapacity::default(), self.weighting);
        for doc in docs {
            index.push(doc);
        }
        for terms in scored {
            for (term, _) in &terms.counts {
                let learned = self.vocabulary.get(term.as_str());
                if learned.is_some_and(|&id| self.learned.has_folded(id)) {
                    index.term_id(term);
                }
            }
        }
        // The copy's terms by id, with what this index folded of each.
        let learned: Vec<Vec<LabelPos>> = index
            .names
            .iter()
            .map(|term| match self.vocabulary.get(term) {
                Some(&here) => self.learned.labels(here).to_vec(),
                None => Vec::new(),
            })
            .collect();
        for (id, labels) in learned.into_iter().enumerate() {
            index.learned.restore_folded(TermId::at(id), labels);
        }
        index.learned.count_labels_as(&self.learned);
        index.recompute();
        index
    }

    /// Weigh terms another way from now on (nothing is folded).
    pub fn set_weighting(&mut self, weighting: TermWeighting) {
        if weighting != self.weighting {
            self.weighting = weighting;
            self.recompute();
        }
    }

    /// What classified texts taught the weights, as a snapshot stores it.
    pub fn spread_state(&self) -> SpreadState {
        self.learned.to_state(&self.names)
    }

    /// The alive documents, in order: what a snapshot stores.
    pub fn docs(&self) -> impl Iterator<Item = &IndexDoc> {
        self.docs
            .iter()
            .zip(&self.alive)
            .filter(|(_, alive)| **alive)
            .map(|(doc, _)| doc)
    }

    pub fn doc(&self, id: DocId) -> Option<&IndexDoc> {
        self.docs.get(id.index())
    }

    pub fn seen_count(&self) -> usize {
        self.seen.len()
    }

    pub fn tentative_count(&self) -> usize {
        self.tentative.len()
    }

    /// Add labelled material (examples, names, descriptions). Call [`TextIndex::reweigh`] after
    /// the batch: examples change every weight. Returns the document's id (None: no terms, not
    /// indexed), valid until classified texts are taken back.
    pub fn add_labelled(
        &mut self,
        kind: DocKind,
        label: LabelPos,
        terms: TermCounts,
        text: Option<&str>,
    ) -> Option<DocId> {
        if terms.is_empty() {
            return None;
        }
        let text = match kind {
            DocKind::Example => {
                text.map(|t| super::prompt::clip(t, EXAMPLE_TEXT_CHARS).to_string())
            }
            _ => None,
        };
        Some(self.push(IndexDoc {
            kind,
            label,
            terms,
            text,
        }))
    }

    /// A text classified with confidence joins the text graph, under its decided label.
    pub fn add_seen(&mut self, label: LabelPos, terms: &TermCounts) {
        self.add_classified(DocKind::Seen, label, terms);
    }

    /// A text classified without confidence is kept as a tentative text, under its decided
    /// label.
    pub fn add_tentative(&mut self, label: LabelPos, terms: &TermCounts) {
        self.add_classified(DocKind::Tentative, label, terms);
    }

    fn add_classified(&mut self, kind: DocKind, label: LabelPos, terms: &TermCounts) {
        if terms.is_empty() || self.capacity_of(kind) == 0 {
            return;
        }
        let kept = self.heaviest_terms(terms);
        let id = self.push(IndexDoc {
            kind,
            label,
            terms: kept,
            text: None,
        });
        let fold_due = self.learned.record(label, &self.doc_terms[id.index()]);
        self.post(id);
        if self.tombstone_over_capacity() {
            self.compact();
        }
        if fold_due {
            let changed = self.fold();
            self.reweigh_terms(&changed);
        }
    }

    /// The `SEEN_TERMS` heaviest terms of a text under the current weights: what a classified
    /// text keeps (and all a learn record needs to carry).
    pub fn heaviest_terms(&self, terms: &TermCounts) -> TermCounts {
        self.heaviest_terms_up_to(terms, SEEN_TERMS)
    }

    /// The `cap` heaviest terms of a text under the current weights, sorted by term.
    pub fn heaviest_terms_up_to(&self, terms: &TermCounts, cap: usize) -> TermCounts {
        // Already within the cap (a learn record's terms): all of them are kept, in order.
        if terms.counts.len() <= cap {
            let mut kept = terms.counts.clone();
            kept.sort_unstable();
            return TermCounts { counts: kept };
        }
        // Heaviest first. Many terms tie (every phrase nothing labelled has gets the top
        // weight):
        // shorter phrases first (more likely to recur), then a fixed hash of the term rather
        // than the alphabet, so the kept set is canonical without favouring "a…" terms. The
        // keys are computed once per term, not per comparison.
        let mut keyed: Vec<(f64, usize, u64, &(String, u32))> = terms
            .counts
            .iter()
            .map(|entry| {
                let term = entry.0.as_str();
                (
                    self.term_weight(term, entry.1),
                    word_count(term),
                    fnv1a(term),
                    entry,
                )
            })
            .collect();
        keyed.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.cmp(&b.1))
                .then_with(|| a.2.cmp(&b.2))
                .then_with(|| a.3 .0.cmp(&b.3 .0))
        });
        keyed.truncate(cap);
        let mut kept: Vec<(String, u32)> = keyed.into_iter().map(|k| k.3.clone()).collect();
        kept.sort_unstable();
        TermCounts { counts: kept }
    }

    fn push(&mut self, doc: IndexDoc) -> DocId {
        let id = DocId::at(self.docs.len());
        let term_ids = self.register_terms(&doc);
        self.doc_terms.push(term_ids);
        if doc.kind == DocKind::Example {
            self.examples += 1;
            self.labels_with_examples.insert(doc.label);
        }
        if let Some(queue) = self.queue_of(doc.kind) {
            queue.push_back(id);
        }
        self.docs.push(doc);
        self.alive.push(true);
        id
    }

    /// A document's term ids (new terms join the vocabulary); an example also counts in its
    /// terms' document frequency and label counts.
    fn register_terms(&mut self, doc: &IndexDoc) -> Vec<TermId> {
        let mut ids = Vec::with_capacity(doc.terms.counts.len());
        for (term, _) in &doc.terms.counts {
            let term_id = self.term_id(term);
            self.live_docs[term_id.index()] += 1;
            if doc.kind == DocKind::Example {
                self.df[term_id.index()] += 1;
                insert_sorted(&mut self.example_labels[term_id.index()], doc.label);
            }
            ids.push(term_id);
        }
        ids
    }

    fn term_id(&mut self, term: &str) -> TermId {
        if let Some(&id) = self.vocabulary.get(term) {
            return id;
        }
        let id = TermId::at(self.df.len());
        let name: Arc<str> = Arc::from(term);
        self.vocabulary.insert(Arc::clone(&name), id);
        self.names.push(name);
        self.live_docs.push(0);
        self.df.push(0);
        self.example_labels.push(Vec::new());
        self.learned.push_term();
        self.postings.push(Vec::new());
        // What a recompute would give a term no example holds (an example's terms are
        // recomputed before any weight is read).
        self.inverse.push(self.inverse_of(None));
        id
    }

    /// The inverse-frequency factor of a term (by id; `None`: one the index does not know),
    /// from the labels and the number of examples holding it.
    fn inverse_of(&self, term: Option<TermId>) -> f64 {
        let (example_labels, df, learned) = match term {
            Some(id) => (
                self.example_labels[id.index()].as_slice(),
                self.df[id.index()],
                self.learned.labels(id),
            ),
            None => (&[][..], 0, &[][..]),
        };
        match self.weighting {
            TermWeighting::Idf => smoothed_inverse(self.examples as usize, df),
            TermWeighting::LabelSpread => {
                smoothed_inverse(self.label_count, union_len(example_labels, learned) as u32)
            }
        }
    }

    fn term_weight(&self, term: &str, count: u32) -> f64 {
        let inverse = match self.vocabulary.get(term) {
            Some(&id) => self.inverse[id.index()],
            None => self.inverse_of(None),
        };
        tf_weight(count) * inverse
    }

    /// Classified texts folded into the weights so far.
    pub fn folded_texts(&self) -> u64 {
        self.learned.folded_texts()
    }

    /// Evicted documents not yet compacted away.
    pub fn tombstones(&self) -> usize {
        self.dead
    }

    /// Distinct terms known to the index: the live documents' terms, those of documents evicted
    /// since the last compaction, learned terms a fold has not forgotten yet (kept across
    /// compactions and restores), and in a detached copy the scored texts' learned terms.
    pub fn vocabulary_len(&self) -> usize {
        self.vocabulary.len()
    }

    /// The queue of classified texts of `kind` (labelled material has none).
    fn queue_of(&mut self, kind: DocKind) -> Option<&mut VecDeque<DocId>> {
        match kind {
            DocKind::Seen => Some(&mut self.seen),
            DocKind::Tentative => Some(&mut self.tentative),
            DocKind::Example | DocKind::Name | DocKind::Description => None,
        }
    }

    fn capacity_of(&self, kind: DocKind) -> usize {
        match kind {
            DocKind::Seen => self.capacity.seen,
            DocKind::Tentative => self.capacity.tentative,
            DocKind::Example | DocKind::Name | DocKind::Description => usize::MAX,
        }
    }

    /// Tombstone the oldest classified texts past their kind's capacity; true once the
    /// tombstones are a quarter of what the postings walk over (time to compact).
    fn tombstone_over_capacity(&mut self) -> bool {
        for kind in [DocKind::Seen, DocKind::Tentative] {
            let capacity = self.capacity_of(kind);
            let mut evicted = Vec::new();
            if let Some(queue) = self.queue_of(kind) {
                while queue.len() > capacity {
                    evicted.extend(queue.pop_front());
                }
            }
            for oldest in evicted {
                self.tombstone(oldest);
            }
        }
        self.dead > 0 && self.dead * 4 > self.docs.len()
    }

    /// Mark a document dead, as eviction does: what it taught the term weights stays until a
    /// fold forgets it.
    fn tombstone(&mut self, id: DocId) {
        self.alive[id.index()] = false;
        self.dead += 1;
        for &term in &self.doc_terms[id.index()] {
            let held_by = &mut self.live_docs[term.index()];
            *held_by -= 1;
            if *held_by == 0 {
                self.learned.unheld(term);
            }
        }
    }

    /// Take back classified texts (seen or tentative documents) as eviction would: tombstoned
    /// all, then compacted if that is due (which renumbers documents, so `ids` are all read
    /// first). Returns how many were live classified texts.
    pub fn remove_classified(&mut self, ids: &[DocId]) -> usize {
        let mut removed = 0;
        for &id in ids {
            let Some(kind) = self
                .docs
                .get(id.index())
                .filter(|_| self.alive[id.index()])
                .map(|d| d.kind)
            else {
                continue;
            };
            let Some(queue) = self.queue_of(kind) else {
                continue;
            };
            let Some(at) = queue.iter().position(|&d| d == id) else {
                continue;
            };
            queue.remove(at);
            self.tombstone(id);
            removed += 1;
        }
        if self.dead * 4 > self.docs.len() {
            self.compact();
        }
        removed
    }

    fn evict_over_capacity(&mut self) {
        if self.tombstone_over_capacity() {
            self.compact();
        }
    }
}

/// Sublinear term frequency.
fn tf_weight(count: u32) -> f64 {
    1.0 + f64::from(count.max(1)).ln()
}

/// `ln((1 + n) / (1 + k)) + 1`: the smoothed inverse frequency of something `k` of `n` hold.
fn smoothed_inverse(n: usize, k: u32) -> f64 {
    ((1.0 + n as f64) / (1.0 + f64::from(k))).ln() + 1.0
}

fn word_count(term: &str) -> usize {
    term.split(' ').count()
}

/// FNV-1a: a fixed hash (unlike the standard library's, randomised per process).
fn fnv1a(term: &str) -> u64 {
    term.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests;
