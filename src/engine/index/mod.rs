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
//!
//! Its parts, each with one home: the [`Vocabulary`] (term ↔ [`TermId`]), the [`TermStats`]
//! the weights are made of (with what classified texts taught, [`spread`]), the [`Documents`]
//! (with the classified texts' queues and capacity) and the [`postings`]. [`TextIndex`] owns
//! them and keeps them in step; callers read a part through its read-only accessor.

use serde::{Deserialize, Serialize};

use super::terms::TermCounts;

mod documents;
mod example_match;
mod ids;
mod postings;
mod renumber;
mod search;
mod spread;
mod term_stats;
mod upkeep;
mod vocabulary;
mod weights;

pub use documents::Documents;
pub use example_match::ExampleMatch;
pub use ids::{DocId, LabelPos, TermId};
use postings::Postings;
pub use spread::{SpreadState, TermWeighting, FOLD_AT_LEAST};
pub use term_stats::TermStats;
pub use vocabulary::Vocabulary;
pub use weights::TermWeights;

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

/// How many classified texts of each kind the index keeps, the oldest of a kind going first
/// (`[engine.capacity]`). Part of what makes replicas equal: every replica of a group must use
/// the same values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
#[command(next_help_heading = "Capacity (engine.capacity)")]
pub struct ClassifiedCapacity {
    /// Texts classified with confidence kept in the text graph.
    #[arg(long = "seen-capacity", default_value_t = ClassifiedCapacity::default().seen)]
    pub seen: usize,
    /// Texts classified without confidence kept as tentative texts (0 keeps none). They speak
    /// only for a text nothing labelled explains.
    #[arg(long = "tentative-capacity", default_value_t = ClassifiedCapacity::default().tentative)]
    pub tentative: usize,
}

impl ClassifiedCapacity {
    /// No classified text kept: an index of the labels' own material only.
    pub const NONE: Self = Self {
        seen: 0,
        tentative: 0,
    };
}

impl Default for ClassifiedCapacity {
    fn default() -> Self {
        Self {
            seen: 20_000,
            tentative: 20_000,
        }
    }
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

/// The retrieval index: its parts, and what keeps them in step — adding and taking back
/// documents, the weights' upkeep ([`upkeep`]), the queries ([`search`]).
#[derive(Debug, Clone, Default)]
pub struct TextIndex {
    vocabulary: Vocabulary,
    stats: TermStats,
    docs: Documents,
    postings: Postings,
}

impl TextIndex {
    pub fn new(capacity: ClassifiedCapacity, weighting: TermWeighting) -> Self {
        Self {
            vocabulary: Vocabulary::default(),
            stats: TermStats::new(weighting),
            docs: Documents::new(capacity),
            postings: Postings::default(),
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
        // Learned terms no live document holds join the vocabulary without postings.
        let mut ids_of = |learned: Vec<(String, Vec<LabelPos>)>| -> Vec<(TermId, Vec<LabelPos>)> {
            learned
                .into_iter()
                .map(|(term, labels)| (index.term_id(&term), labels))
                .collect()
        };
        let folded = ids_of(spread.folded);
        let pending = ids_of(spread.pending);
        index
            .stats
            .restore_learned(folded, pending, spread.folded_texts, spread.pending_texts);
        index.recompute();
        index.evict_over_capacity();
        index
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
        let mut index = Self::new(ClassifiedCapacity::NONE, self.stats.weighting());
        for doc in docs {
            index.push(doc);
        }
        let learned = self.stats.learned();
        for terms in scored {
            for (term, _) in &terms.counts {
                let here = self.vocabulary.get(term);
                if here.is_some_and(|id| learned.has_folded(id)) {
                    index.term_id(term);
                }
            }
        }
        // The copy's terms by id, with what this index folded of each.
        let folded: Vec<Vec<LabelPos>> = index
            .vocabulary
            .names()
            .iter()
            .map(|term| match self.vocabulary.get(term) {
                Some(here) => learned.labels(here).to_vec(),
                None => Vec::new(),
            })
            .collect();
        index.stats.adopt_folded(folded, &self.stats);
        index.recompute();
        index
    }

    /// Weigh terms another way from now on (nothing is folded).
    pub fn set_weighting(&mut self, weighting: TermWeighting) {
        if self.stats.set_weighting(weighting) {
            self.recompute();
        }
    }

    /// The terms' weights as they stand: what a text's heaviest terms are, what classified
    /// texts taught them.
    pub fn weights(&self) -> TermWeights<'_> {
        TermWeights {
            vocabulary: &self.vocabulary,
            stats: &self.stats,
        }
    }

    /// The vocabulary (term ↔ id), read-only.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocabulary
    }

    /// The per-term statistics the weights are made of, read-only.
    pub fn term_stats(&self) -> &TermStats {
        &self.stats
    }

    /// The documents (alive ones, classified texts per kind, tombstones), read-only.
    pub fn documents(&self) -> &Documents {
        &self.docs
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

    /// A classified text joins the index under its decided label: `Seen` (classified with
    /// confidence: the text graph) or `Tentative` (without: it speaks only for texts nothing
    /// labelled explains). It keeps its `SEEN_TERMS` heaviest terms.
    pub fn add_classified(&mut self, kind: DocKind, label: LabelPos, terms: &TermCounts) {
        if terms.is_empty() || self.docs.capacity_of(kind) == 0 {
            return;
        }
        let kept = self.weights().heaviest(terms, SEEN_TERMS);
        let id = self.push(IndexDoc {
            kind,
            label,
            terms: kept,
            text: None,
        });
        let fold_due = self.stats.record(label, self.docs.term_ids(id));
        let weights = self.stats.doc_weights(self.docs.term_counts(id));
        self.postings.post(id, weights);
        self.evict_over_capacity();
        if fold_due {
            let changed = self.stats.fold();
            self.reweigh_terms(&changed);
        }
    }

    /// Add a document: its terms get ids (new ones join every per-term table) and count as
    /// held (an example's also in the example statistics).
    fn push(&mut self, doc: IndexDoc) -> DocId {
        let terms: Vec<TermId> = doc
            .terms
            .counts
            .iter()
            .map(|(term, _)| self.term_id(term))
            .collect();
        let example_of = (doc.kind == DocKind::Example).then_some(doc.label);
        self.stats.hold(&terms, example_of);
        self.docs.push(doc, terms)
    }

    fn term_id(&mut self, term: &str) -> TermId {
        let (id, new) = self.vocabulary.intern(term);
        if new {
            self.stats.push_term();
            self.postings.push_term();
        }
        id
    }

    /// Take back classified texts (seen or tentative documents) as eviction would: tombstoned
    /// all, then compacted if that is due (which renumbers documents, so `ids` are all read
    /// first). Returns how many were live classified texts.
    pub fn remove_classified(&mut self, ids: &[DocId]) -> usize {
        let mut removed = 0;
        for &id in ids {
            if self.docs.take_back(id) {
                self.stats.release(self.docs.tombstone(id));
                removed += 1;
            }
        }
        if self.docs.compaction_due() {
            self.compact();
        }
        removed
    }

    /// Tombstone the oldest classified texts past their kind's capacity (what they taught the
    /// weights stays until a fold forgets it), and compact once the tombstones are a quarter
    /// of what the postings walk over.
    fn evict_over_capacity(&mut self) {
        for oldest in self.docs.over_capacity() {
            self.stats.release(self.docs.tombstone(oldest));
        }
        if self.docs.compaction_due() {
            self.compact();
        }
    }
}

#[cfg(test)]
mod tests;
