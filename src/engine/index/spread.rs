//! Label spread: under how many labels a term occurs — the index's term weighting.
//!
//! A class is told apart by the words that occur under it and few others. Plain idf over the
//! labelled examples counts *documents*: at 5 shots a word every example of one class uses is
//! counted five times, as if it were common; and with one example per label (a few dozen
//! documents) it cannot tell a generic word from a rare one. The label spread counts *labels*
//! (inverse class frequency): the labels among the labelled examples holding the term, and the
//! labels every classified text the index keeps was decided under (confident or not — a wrong
//! decision only makes a term look more generic, it never makes a label look more likely; a
//! kind of text kept with capacity 0 teaches nothing). Out of how many labels: those with
//! examples or with classified texts folded in, so a term is never under more labels than that.
//! Measured in docs/design/term-weighting.md, "Term weighting": better on the tuning streams of
//! all three datasets than idf.
//!
//! What classified texts teach is *folded* into the weights at fixed points of the log — when a
//! round brings examples, and each time the texts learned since the last fold reach as many as
//! were folded before (within [`FOLD_AT_LEAST`]..=[`FOLD_AT_MOST`]) — so weights stay a pure
//! function of the log and a query never sees a half-updated index. At a fold, terms that no
//! live document holds any more are forgotten, which bounds this state by the index's own
//! vocabulary (and what was learned since the last fold: at most [`FOLD_AT_MOST`] texts). A
//! fold touches only what changed: the terms learned since the last one and those whose last
//! document went (the index tells it which), never the whole vocabulary.

use super::ids::{LabelPos, TermId};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::renumber::keep_where;

/// Fewest texts learned between two folds (the first folds come quickly, while the labels'
/// own material is all the weights know).
pub const FOLD_AT_LEAST: u64 = 64;
/// Most texts learned between two folds (a fold reweighs the documents holding a term whose
/// labels changed, on the service loop; `benches/online_indexing.rs` measures it at capacity).
pub const FOLD_AT_MOST: u64 = 8192;

/// How the index weighs a term.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum TermWeighting {
    /// Inverse label frequency over the labels' examples and the texts classified under them.
    #[default]
    LabelSpread,
    /// Inverse document frequency over the labelled examples (the `naive` baseline's, always).
    Idf,
}

impl TermWeighting {
    pub fn name(self) -> &'static str {
        match self {
            Self::LabelSpread => "label_spread",
            Self::Idf => "idf",
        }
    }
}

/// The labels classified texts were decided under, per term, as a snapshot stores it (sorted,
/// so equal states encode and digest alike).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpreadState {
    /// Folded into the weights: (term, labels ascending), terms ascending.
    pub folded: Vec<(String, Vec<LabelPos>)>,
    /// Learned since the last fold: (term, labels ascending), terms ascending.
    pub pending: Vec<(String, Vec<LabelPos>)>,
    pub folded_texts: u64,
    pub pending_texts: u64,
}

/// The labels classified texts were decided under, per term id of the index's vocabulary
/// (which keeps a term with learned labels until a fold forgets them, even when no live
/// document holds it any more: ids, not strings, so a fold costs no hashing).
#[derive(Debug, Clone, Default)]
pub struct LearnedSpread {
    /// Per term id, the labels (ascending) as of the last fold.
    folded: Vec<Vec<LabelPos>>,
    /// Per label, how many terms it is folded under (N counts the labels with one).
    label_terms: BTreeMap<LabelPos, usize>,
    /// (term id, label) learned since the last fold, in learning order.
    pending: Vec<(TermId, LabelPos)>,
    /// Terms whose last live document went since the last fold, and, in an index rebuilt from
    /// a snapshot, learned terms no live document held then: the only terms a fold can forget.
    unheld: Vec<TermId>,
    folded_texts: u64,
    pending_texts: u64,
}

impl LearnedSpread {
    /// A new term id (the next one).
    pub fn push_term(&mut self) {
        self.folded.push(Vec::new());
    }

    /// Restore `term`'s folded labels (a snapshot is read, not trusted: put in order).
    pub fn restore_folded(&mut self, term: TermId, mut labels: Vec<LabelPos>) {
        labels.sort_unstable();
        labels.dedup();
        for &label in &labels {
            *self.label_terms.entry(label).or_default() += 1;
        }
        self.forget(term);
        self.folded[term.index()] = labels;
    }

    /// Restore what was learned of `term` since the last fold.
    pub fn restore_pending(&mut self, term: TermId, labels: &[LabelPos]) {
        self.pending
            .extend(labels.iter().map(|&label| (term, label)));
    }

    pub fn restore_counters(&mut self, folded_texts: u64, pending_texts: u64) {
        self.folded_texts = folded_texts;
        self.pending_texts = pending_texts;
    }

    /// N as another index counts it (a detached copy holds the folded labels of only some
    /// terms, and never folds).
    pub fn count_labels_as(&mut self, other: &Self) {
        self.label_terms = other.label_terms.clone();
    }

    /// As a snapshot stores it, with `names` the terms by id.
    pub fn to_state(&self, names: &[Arc<str>]) -> SpreadState {
        let mut folded: Vec<(String, Vec<LabelPos>)> = self
            .folded
            .iter()
            .enumerate()
            .filter(|(_, labels)| !labels.is_empty())
            .map(|(term, labels)| (names[term].to_string(), labels.clone()))
            .collect();
        folded.sort_unstable();
        let mut by_term: HashMap<TermId, Vec<LabelPos>> = HashMap::new();
        for &(term, label) in &self.pending {
            insert_sorted(by_term.entry(term).or_default(), label);
        }
        let mut pending: Vec<(String, Vec<LabelPos>)> = by_term
            .into_iter()
            .map(|(term, labels)| (names[term.index()].to_string(), labels))
            .collect();
        pending.sort_unstable();
        SpreadState {
            folded,
            pending,
            folded_texts: self.folded_texts,
            pending_texts: self.pending_texts,
        }
    }

    /// A text classified under `label` held these terms. True when a fold is due.
    pub fn record(&mut self, label: LabelPos, terms: &[TermId]) -> bool {
        self.pending.extend(terms.iter().map(|&term| (term, label)));
        self.pending_texts = self.pending_texts.saturating_add(1);
        self.pending_texts >= self.folded_texts.clamp(FOLD_AT_LEAST, FOLD_AT_MOST)
    }

    /// `term`'s last live document went (or, rebuilding, no live document holds it): a fold
    /// forgets it unless one holds it again by then.
    pub fn unheld(&mut self, term: TermId) {
        self.unheld.push(term);
    }

    /// Whether the index must keep `term` in its vocabulary: it has folded labels (pending
    /// ones are in `pending_terms`).
    pub fn has_folded(&self, term: TermId) -> bool {
        !self.folded[term.index()].is_empty()
    }

    /// Per term id, whether something was learned of it since the last fold.
    pub fn pending_terms(&self) -> Vec<bool> {
        let mut marks = vec![false; self.folded.len()];
        for &(term, _) in &self.pending {
            marks[term.index()] = true;
        }
        marks
    }

    /// Move what was learned since the last fold into the weights' view, then forget the
    /// unheld terms `held` says no live document holds. Returns the terms whose labels changed
    /// (each once).
    pub fn fold(&mut self, held: impl Fn(TermId) -> bool) -> Vec<TermId> {
        let mut changed = Vec::new();
        for (term, label) in std::mem::take(&mut self.pending) {
            let labels = &mut self.folded[term.index()];
            if insert_sorted(labels, label) {
                *self.label_terms.entry(label).or_default() += 1;
                changed.push(term);
            }
        }
        for term in std::mem::take(&mut self.unheld) {
            if !held(term) && !self.folded[term.index()].is_empty() {
                self.forget(term);
                changed.push(term);
            }
        }
        changed.sort_unstable();
        changed.dedup();
        self.folded_texts = self
            .folded_texts
            .saturating_add(std::mem::take(&mut self.pending_texts));
        changed
    }

    fn forget(&mut self, term: TermId) {
        for label in std::mem::take(&mut self.folded[term.index()]) {
            if let Some(count) = self.label_terms.get_mut(&label) {
                *count -= 1;
                if *count == 0 {
                    self.label_terms.remove(&label);
                }
            }
        }
    }

    /// Renumber terms as the index compacts its vocabulary (`None`: dropped; only terms with
    /// nothing learned are).
    pub fn compact(&mut self, term_ids: &[Option<TermId>]) {
        self.folded = keep_where(std::mem::take(&mut self.folded), |term| {
            term_ids[term].is_some()
        });
        let renumber = |term: TermId| term_ids[term.index()];
        self.pending = self
            .pending
            .iter()
            .filter_map(|&(term, label)| renumber(term).map(|term| (term, label)))
            .collect();
        self.unheld = self.unheld.iter().filter_map(|&t| renumber(t)).collect();
    }

    /// Texts folded into the weights so far.
    pub fn folded_texts(&self) -> u64 {
        self.folded_texts
    }

    /// The labels classified texts were decided under, as of the last fold.
    pub fn folded_labels(&self) -> impl Iterator<Item = LabelPos> + '_ {
        self.label_terms.keys().copied()
    }

    /// The labels texts holding `term` were decided under, as of the last fold.
    pub fn labels(&self, term: TermId) -> &[LabelPos] {
        self.folded
            .get(term.index())
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// Insert into an ascending list of distinct labels; false when it was there.
pub fn insert_sorted(labels: &mut Vec<LabelPos>, label: LabelPos) -> bool {
    match labels.binary_search(&label) {
        Ok(_) => false,
        Err(at) => {
            labels.insert(at, label);
            true
        }
    }
}

/// How many distinct labels two ascending lists hold together.
pub fn union_len(a: &[LabelPos], b: &[LabelPos]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
        n += 1;
    }
    n + (a.len() - i) + (b.len() - j)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(positions: &[u32]) -> Vec<LabelPos> {
        positions.iter().map(|&p| LabelPos(p)).collect()
    }

    fn terms(ids: &[u32]) -> Vec<TermId> {
        ids.iter().map(|&t| TermId(t)).collect()
    }

    #[test]
    fn union_len_counts_each_label_once() {
        assert_eq!(union_len(&[], &[]), 0);
        assert_eq!(union_len(&labels(&[1, 3]), &[]), 2);
        assert_eq!(union_len(&labels(&[1, 3, 5]), &labels(&[0, 3, 9])), 5);
    }

    #[test]
    fn folds_come_after_as_many_texts_as_were_folded_within_bounds() {
        let mut spread = LearnedSpread::default();
        spread.push_term();
        let due_at = |spread: &mut LearnedSpread| {
            (1..)
                .find(|_| spread.record(LabelPos(0), &[TermId(0)]))
                .unwrap_or(0)
        };
        assert_eq!(due_at(&mut spread), FOLD_AT_LEAST);
        spread.fold(|_| false);
        assert_eq!(due_at(&mut spread), FOLD_AT_LEAST);
        spread.fold(|_| false);
        assert_eq!(due_at(&mut spread), 2 * FOLD_AT_LEAST);
    }

    #[test]
    fn a_fold_unites_labels_and_forgets_only_unheld_terms_no_live_document_holds() {
        let (oven, bread, dough) = (TermId(0), TermId(1), TermId(2));
        let names: Vec<Arc<str>> = ["oven", "bread", "dough"].map(Arc::from).to_vec();
        let mut spread = LearnedSpread::default();
        for _ in &names {
            spread.push_term();
        }
        spread.record(LabelPos(2), &[oven, bread, dough]);
        spread.record(LabelPos(0), &[oven]);
        assert!(spread.labels(oven).is_empty(), "pending is not yet seen");
        assert_eq!(spread.to_state(&names).pending.len(), 3);
        for term in [oven, bread] {
            spread.unheld(term);
        }
        // "dough" is held by no document either, but its last one did not go: kept.
        assert_eq!(spread.fold(|term| term == oven), [oven, bread, dough]);
        assert_eq!(spread.labels(oven), labels(&[0, 2]));
        assert!(spread.labels(bread).is_empty());
        assert_eq!(spread.labels(dough), labels(&[2]));
        assert_eq!(spread.folded_labels().collect::<Vec<_>>(), labels(&[0, 2]));
        let state = spread.to_state(&names);
        assert_eq!(state.folded.len(), 2);
        spread.unheld(oven);
        assert_eq!(spread.fold(|_| false), [oven]);
        assert_eq!(spread.folded_labels().collect::<Vec<_>>(), labels(&[2]));
        assert!(
            spread.fold(|_| false).is_empty(),
            "nothing learned, nothing unheld"
        );
    }

    #[test]
    fn compaction_renumbers_terms_and_what_was_learned_of_them() {
        let names: Vec<Arc<str>> = ["gone", "oven"].map(Arc::from).to_vec();
        let mut spread = LearnedSpread::default();
        spread.push_term();
        spread.push_term();
        spread.record(LabelPos(1), &terms(&[1]));
        spread.unheld(TermId(1));
        spread.compact(&[None, Some(TermId(0))]);
        assert_eq!(spread.pending_terms(), [true]);
        assert_eq!(spread.fold(|_| true), terms(&[0]), "held again");
        assert_eq!(
            spread.to_state(&names[1..]).folded,
            [("oven".to_string(), labels(&[1]))]
        );
    }
}
