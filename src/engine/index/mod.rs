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
//! points of the log (compactions recompute the same weights), which keeps a restarted or
//! replayed engine bit-for-bit equal to one that ran without stopping.
//!
//! Classified texts are bounded: each keeps its `SEEN_TERMS` heaviest terms, and the oldest of
//! its kind is evicted past that kind's capacity (evicted documents are tombstoned and
//! compacted away in bulk).

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::terms::TermCounts;

mod spread;

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
    pub label: u32,
    pub terms: TermCounts,
    /// Examples only: the (clipped) text, shown next to its label in prompts.
    pub text: Option<String>,
}

/// A document's similarity to a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: u32,
    pub kind: DocKind,
    pub label: u32,
    pub similarity: f64,
}

#[derive(Debug, Clone, Default)]
pub struct TextIndex {
    weighting: TermWeighting,
    vocabulary: HashMap<String, u32>,
    /// Labelled examples containing each term.
    df: Vec<u32>,
    /// Labelled examples indexed (N).
    examples: u32,
    /// Per term, the labels (ascending) whose examples hold it.
    example_labels: Vec<Vec<u32>>,
    /// Labels with at least one example.
    labels_with_examples: BTreeSet<u32>,
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
    doc_terms: Vec<Vec<u32>>,
    alive: Vec<bool>,
    /// Per term: (document, weight).
    postings: Vec<Vec<(u32, f32)>>,
    /// Alive seen texts, oldest first.
    seen: VecDeque<u32>,
    /// Alive tentative texts, oldest first.
    tentative: VecDeque<u32>,
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
        index.learned = LearnedSpread::from_state(spread);
        for doc in docs {
            index.push(doc);
        }
        index.recompute();
        index.evict_over_capacity();
        index
    }

    /// An index of `docs` weighed as this one is now (what classified texts taught included),
    /// which never learns: discovery's copy of the labels' material.
    pub fn detached(&self, docs: Vec<IndexDoc>) -> Self {
        let mut index = Self::new(ClassifiedCapacity::default(), self.weighting);
        index.learned = self.learned.folded_only();
        for doc in docs {
            index.push(doc);
        }
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
        self.learned.to_state()
    }

    /// The alive documents, in order: what a snapshot stores.
    pub fn docs(&self) -> impl Iterator<Item = &IndexDoc> {
        self.docs
            .iter()
            .zip(&self.alive)
            .filter(|(_, alive)| **alive)
            .map(|(doc, _)| doc)
    }

    pub fn doc(&self, id: u32) -> Option<&IndexDoc> {
        self.docs.get(id as usize)
    }

    pub fn seen_count(&self) -> usize {
        self.seen.len()
    }

    pub fn tentative_count(&self) -> usize {
        self.tentative.len()
    }

    /// Add labelled material (examples, names, descriptions). Call [`TextIndex::reweigh`] after
    /// the batch: examples change every weight.
    pub fn add_labelled(
        &mut self,
        kind: DocKind,
        label: u32,
        terms: TermCounts,
        text: Option<&str>,
    ) {
        if terms.is_empty() {
            return;
        }
        let text = match kind {
            DocKind::Example => {
                text.map(|t| super::prompt::clip(t, EXAMPLE_TEXT_CHARS).to_string())
            }
            _ => None,
        };
        self.push(IndexDoc {
            kind,
            label,
            terms,
            text,
        });
    }

    /// A text classified with confidence joins the text graph, under its decided label.
    pub fn add_seen(&mut self, label: u32, terms: &TermCounts) {
        self.add_classified(DocKind::Seen, label, terms);
    }

    /// A text classified without confidence is kept as a tentative text, under its decided
    /// label.
    pub fn add_tentative(&mut self, label: u32, terms: &TermCounts) {
        self.add_classified(DocKind::Tentative, label, terms);
    }

    fn add_classified(&mut self, kind: DocKind, label: u32, terms: &TermCounts) {
        if terms.is_empty() || self.capacity_of(kind) == 0 {
            return;
        }
        let kept = self.heaviest_terms(terms);
        let fold_due = self.learned.record(label, &kept);
        let id = self.push(IndexDoc {
            kind,
            label,
            terms: kept,
            text: None,
        });
        self.post(id);
        let compaction_due = self.tombstone_over_capacity();
        if fold_due {
            self.fold();
        }
        // One recompute compacts and reweighs alike; idf never reads the spread (it is kept
        // folded for a switch of weighting), so a fold alone does not need one.
        if compaction_due || (fold_due && self.weighting == TermWeighting::LabelSpread) {
            self.recompute();
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

    fn push(&mut self, doc: IndexDoc) -> u32 {
        let id = self.docs.len() as u32;
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
    fn register_terms(&mut self, doc: &IndexDoc) -> Vec<u32> {
        let mut ids = Vec::with_capacity(doc.terms.counts.len());
        for (term, _) in &doc.terms.counts {
            let term_id = self.term_id(term);
            if doc.kind == DocKind::Example {
                self.df[term_id as usize] += 1;
                insert_sorted(&mut self.example_labels[term_id as usize], doc.label);
            }
            ids.push(term_id);
        }
        ids
    }

    fn term_id(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.vocabulary.get(term) {
            return id;
        }
        let id = self.df.len() as u32;
        self.vocabulary.insert(term.to_string(), id);
        self.df.push(0);
        self.example_labels.push(Vec::new());
        // What a recompute would give a term no example holds (an example's terms are
        // recomputed before any weight is read).
        self.inverse.push(self.inverse_of(&[], 0, term));
        self.postings.push(Vec::new());
        id
    }

    /// The inverse-frequency factor of `term`, from the labels and the number of examples
    /// holding it.
    fn inverse_of(&self, example_labels: &[u32], df: u32, term: &str) -> f64 {
        match self.weighting {
            TermWeighting::Idf => smoothed_inverse(self.examples as usize, df),
            // A term no live document holds may still have been learned (its documents
            // evicted since the last compaction): the same answer before and after a restart.
            TermWeighting::LabelSpread => smoothed_inverse(
                self.label_count,
                union_len(example_labels, self.learned.labels(term)) as u32,
            ),
        }
    }

    fn term_weight(&self, term: &str, count: u32) -> f64 {
        let inverse = match self.vocabulary.get(term) {
            Some(&id) => self.inverse[id as usize],
            None => self.inverse_of(&[], 0, term),
        };
        tf_weight(count) * inverse
    }

    /// Post one document's normalised weights.
    fn post(&mut self, id: u32) {
        let doc = &self.docs[id as usize];
        let weights: Vec<(u32, f64)> = self.doc_terms[id as usize]
            .iter()
            .zip(&doc.terms.counts)
            .map(|(&term_id, (_, count))| {
                (term_id, tf_weight(*count) * self.inverse[term_id as usize])
            })
            .collect();
        let norm = weights.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
        if norm == 0.0 {
            return;
        }
        for (term_id, weight) in weights {
            self.postings[term_id as usize].push((id, (weight / norm) as f32));
        }
    }

    /// Fold what classified texts taught into the weights and recompute them all: after
    /// examples arrive, and when a fold is due.
    pub fn reweigh(&mut self) {
        self.fold();
        self.recompute();
    }

    /// Fold what classified texts taught since the last fold, forgetting the terms no live
    /// document holds (weights unchanged until the next recompute).
    fn fold(&mut self) {
        let mut live = vec![false; self.vocabulary.len()];
        for (terms, _) in self.doc_terms.iter().zip(&self.alive).filter(|(_, a)| **a) {
            for &id in terms {
                live[id as usize] = true;
            }
        }
        let vocabulary = &self.vocabulary;
        self.learned
            .fold(|term| vocabulary.get(term).is_some_and(|&id| live[id as usize]));
    }

    /// Recompute every weight from the folded state, dropping evicted documents and the terms
    /// only they had (term ids never affect results, so renumbering is safe).
    fn recompute(&mut self) {
        if self.dead > 0 {
            let docs = std::mem::take(&mut self.docs);
            let alive = std::mem::take(&mut self.alive);
            let kept: Vec<IndexDoc> = docs
                .into_iter()
                .zip(alive)
                .filter(|(_, a)| *a)
                .map(|(d, _)| d)
                .collect();
            self.seen.clear();
            self.tentative.clear();
            self.dead = 0;
            for (id, doc) in kept.iter().enumerate() {
                if let Some(queue) = self.queue_of(doc.kind) {
                    queue.push_back(id as u32);
                }
            }
            self.alive = vec![true; kept.len()];
            self.docs = kept;
            self.rebuild_vocabulary();
        }
        self.label_count = self
            .labels_with_examples
            .union(self.learned.folded_labels())
            .count();
        for (term, &id) in &self.vocabulary {
            let id = id as usize;
            self.inverse[id] = self.inverse_of(&self.example_labels[id], self.df[id], term);
        }
        for list in &mut self.postings {
            list.clear();
        }
        for id in 0..self.docs.len() as u32 {
            self.post(id);
        }
    }

    fn rebuild_vocabulary(&mut self) {
        self.vocabulary.clear();
        self.df.clear();
        self.example_labels.clear();
        self.inverse.clear();
        self.postings.clear();
        let docs = std::mem::take(&mut self.docs);
        self.doc_terms = docs.iter().map(|doc| self.register_terms(doc)).collect();
        self.docs = docs;
    }

    /// Distinct terms known to the index (bounded by the live documents' terms, plus those of
    /// documents evicted since the last compaction).
    pub fn vocabulary_len(&self) -> usize {
        self.vocabulary.len()
    }

    /// The queue of classified texts of `kind` (labelled material has none).
    fn queue_of(&mut self, kind: DocKind) -> Option<&mut VecDeque<u32>> {
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
                self.alive[oldest as usize] = false;
                self.dead += 1;
            }
        }
        self.dead > 0 && self.dead * 4 > self.docs.len()
    }

    fn evict_over_capacity(&mut self) {
        if self.tombstone_over_capacity() {
            self.recompute();
        }
    }

    /// Cosine similarity of the query with every document sharing a term with it (in document
    /// order). The query's norm counts all its terms, known to the index or not.
    pub fn search(&self, query: &TermCounts) -> Vec<Hit> {
        let mut weights: Vec<(u32, f64)> = Vec::new();
        let mut norm = 0.0;
        for (term, count) in &query.counts {
            let weight = self.term_weight(term, *count);
            norm += weight * weight;
            if let Some(&id) = self.vocabulary.get(term) {
                weights.push((id, weight));
            }
        }
        if norm == 0.0 || self.docs.is_empty() {
            return Vec::new();
        }
        let norm = norm.sqrt();
        // Dense accumulator, but only the documents that share a term are visited afterwards.
        let mut scores = vec![0.0f64; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (term_id, weight) in weights {
            for &(doc, w) in &self.postings[term_id as usize] {
                let score = &mut scores[doc as usize];
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += weight * f64::from(w);
            }
        }
        let mut hits: Vec<Hit> = touched
            .into_iter()
            .map(|id| (id, scores[id as usize]))
            .filter(|&(id, s)| s > 0.0 && self.alive[id as usize])
            .map(|(id, s)| {
                let doc = &self.docs[id as usize];
                Hit {
                    doc: id,
                    kind: doc.kind,
                    label: doc.label,
                    similarity: s / norm,
                }
            })
            .collect();
        hits.sort_unstable_by_key(|h| h.doc);
        hits.dedup_by_key(|h| h.doc);
        hits
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
