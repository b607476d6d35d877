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
//! Measured in the README ("Term weighting"): better on the tuning streams of all three datasets
//! than idf.
//!
//! What classified texts teach is *folded* into the weights at fixed points of the log — when a
//! round brings examples, and each time the texts learned since the last fold reach as many as
//! were folded before (within [`FOLD_AT_LEAST`]..=[`FOLD_AT_MOST`]) — so weights stay a pure
//! function of the log and a query never sees a half-updated index. At a fold, terms that no
//! live document holds any more are forgotten, which bounds this state by the index's own
//! vocabulary (and what was learned since the last fold: at most [`FOLD_AT_MOST`] texts).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::super::terms::TermCounts;

/// Fewest texts learned between two folds (the first folds come quickly, while the labels'
/// own material is all the weights know).
pub const FOLD_AT_LEAST: u64 = 64;
/// Most texts learned between two folds (a fold reweighs the whole index, on the service loop:
/// README, "Known limits"; `benches/online_indexing.rs` measures it at capacity).
pub const FOLD_AT_MOST: u64 = 8192;

/// How the index weighs a term.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    pub folded: Vec<(String, Vec<u32>)>,
    /// Learned since the last fold: (term, labels ascending), terms ascending.
    pub pending: Vec<(String, Vec<u32>)>,
    pub folded_texts: u64,
    pub pending_texts: u64,
}

/// The labels classified texts were decided under, per term.
#[derive(Debug, Clone, Default)]
pub struct LearnedSpread {
    /// Shared with detached copies of the index (discovery's label material); copied on the
    /// next fold only if one is still alive.
    folded: Arc<HashMap<String, Vec<u32>>>,
    /// Every label in `folded` (derived from it).
    folded_labels: BTreeSet<u32>,
    pending: HashMap<String, Vec<u32>>,
    folded_texts: u64,
    pending_texts: u64,
}

impl LearnedSpread {
    /// From a snapshot's state; label lists are put back in order (a snapshot is read, not
    /// trusted).
    pub fn from_state(state: SpreadState) -> Self {
        let normalised = |entries: Vec<(String, Vec<u32>)>| -> HashMap<String, Vec<u32>> {
            entries
                .into_iter()
                .map(|(term, mut labels)| {
                    labels.sort_unstable();
                    labels.dedup();
                    (term, labels)
                })
                .collect()
        };
        let folded = normalised(state.folded);
        Self {
            folded_labels: labels_in(&folded),
            folded: Arc::new(folded),
            pending: normalised(state.pending),
            folded_texts: state.folded_texts,
            pending_texts: state.pending_texts,
        }
    }

    pub fn to_state(&self) -> SpreadState {
        let sorted = |map: &HashMap<String, Vec<u32>>| {
            let mut entries: Vec<(String, Vec<u32>)> =
                map.iter().map(|(t, l)| (t.clone(), l.clone())).collect();
            entries.sort_unstable();
            entries
        };
        SpreadState {
            folded: sorted(self.folded.as_ref()),
            pending: sorted(&self.pending),
            folded_texts: self.folded_texts,
            pending_texts: self.pending_texts,
        }
    }

    /// A text classified under `label` held these terms. True when a fold is due.
    pub fn record(&mut self, label: u32, terms: &TermCounts) -> bool {
        for (term, _) in &terms.counts {
            insert_sorted(self.pending.entry(term.clone()).or_default(), label);
        }
        self.pending_texts = self.pending_texts.saturating_add(1);
        self.pending_texts >= self.folded_texts.clamp(FOLD_AT_LEAST, FOLD_AT_MOST)
    }

    /// Move what was learned since the last fold into the weights' view, keeping only the
    /// terms `live` says the index's live documents hold.
    pub fn fold(&mut self, live: impl Fn(&str) -> bool) {
        let folded = Arc::make_mut(&mut self.folded);
        for (term, labels) in self.pending.drain() {
            let entry = folded.entry(term).or_default();
            for label in labels {
                insert_sorted(entry, label);
            }
        }
        folded.retain(|term, _| live(term));
        self.folded_labels = labels_in(folded);
        self.folded_texts = self
            .folded_texts
            .saturating_add(std::mem::take(&mut self.pending_texts));
    }

    /// The labels classified texts were decided under, as of the last fold.
    pub fn folded_labels(&self) -> &BTreeSet<u32> {
        &self.folded_labels
    }

    /// What the weights know, without what was learned since the last fold (a detached copy
    /// never folds).
    pub fn folded_only(&self) -> Self {
        Self {
            folded: Arc::clone(&self.folded),
            folded_labels: self.folded_labels.clone(),
            ..Self::default()
        }
    }

    /// The labels texts holding `term` were decided under, as of the last fold.
    pub fn labels(&self, term: &str) -> &[u32] {
        self.folded.get(term).map(Vec::as_slice).unwrap_or(&[])
    }
}

fn labels_in(map: &HashMap<String, Vec<u32>>) -> BTreeSet<u32> {
    map.values().flatten().copied().collect()
}

/// Insert into an ascending list of distinct labels.
pub fn insert_sorted(labels: &mut Vec<u32>, label: u32) {
    if let Err(at) = labels.binary_search(&label) {
        labels.insert(at, label);
    }
}

/// How many distinct labels two ascending lists hold together.
pub fn union_len(a: &[u32], b: &[u32]) -> usize {
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

    #[test]
    fn union_len_counts_each_label_once() {
        assert_eq!(union_len(&[], &[]), 0);
        assert_eq!(union_len(&[1, 3], &[]), 2);
        assert_eq!(union_len(&[1, 3, 5], &[0, 3, 9]), 5);
    }

    #[test]
    fn folds_come_after_as_many_texts_as_were_folded_within_bounds() {
        let mut spread = LearnedSpread::default();
        let terms = TermCounts::of("oven bread");
        let due_at =
            |spread: &mut LearnedSpread| (1..).find(|_| spread.record(0, &terms)).unwrap_or(0);
        assert_eq!(due_at(&mut spread), FOLD_AT_LEAST);
        spread.fold(|_| false);
        assert_eq!(due_at(&mut spread), FOLD_AT_LEAST);
        spread.fold(|_| false);
        assert_eq!(due_at(&mut spread), 2 * FOLD_AT_LEAST);
    }

    #[test]
    fn a_fold_unites_labels_and_forgets_terms_no_live_document_holds() {
        let mut spread = LearnedSpread::default();
        spread.record(2, &TermCounts::of("oven bread"));
        spread.record(0, &TermCounts::of("oven"));
        assert!(spread.labels("oven").is_empty(), "pending is not yet seen");
        spread.fold(|term| term == "oven");
        assert_eq!(spread.labels("oven"), &[0, 2]);
        assert!(spread.labels("bread").is_empty());
        let state = spread.to_state();
        assert_eq!(LearnedSpread::from_state(state.clone()).to_state(), state);
    }
}
