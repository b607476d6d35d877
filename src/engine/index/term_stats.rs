//! Per-term statistics: what the index's weights are made of — how many labelled examples and
//! which labels hold each term, what classified texts taught ([`LearnedSpread`]), how many live
//! documents hold it — and each term's inverse-frequency factor, refreshed from them only when
//! the index says so (a round, a fold), which keeps the weights a pure function of the log.

use std::collections::BTreeSet;

use super::ids::{LabelPos, TermId};
use super::renumber::keep_where;
use super::spread::{insert_sorted, union_len, LearnedSpread, TermWeighting};

/// Per term id, the counts the weights read, and the inverse factor they were last given.
#[derive(Debug, Clone, Default)]
pub struct TermStats {
    weighting: TermWeighting,
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
}

/// What a fold moved ([`TermStats::reweigh`]).
pub enum Reweighed {
    /// These terms' inverse factors (the documents holding them need reposting).
    Terms(Vec<TermId>),
    /// N: every weight (recompute everything).
    Everything,
}

impl TermStats {
    pub fn new(weighting: TermWeighting) -> Self {
        Self {
            weighting,
            ..Self::default()
        }
    }

    pub fn weighting(&self) -> TermWeighting {
        self.weighting
    }

    /// Weigh terms another way from now on; true when that changes something (then every
    /// weight needs a recompute).
    pub(super) fn set_weighting(&mut self, weighting: TermWeighting) -> bool {
        let changed = weighting != self.weighting;
        self.weighting = weighting;
        changed
    }

    /// A new term id (the next one).
    pub(super) fn push_term(&mut self) {
        self.live_docs.push(0);
        self.df.push(0);
        self.example_labels.push(Vec::new());
        self.learned.push_term();
        // What a recompute would give a term no example holds (an example's terms are
        // recomputed before any weight is read).
        self.inverse.push(self.inverse_of(None));
    }

    /// A document holding `terms` was added; an example (`example_of` its label) also counts in
    /// its terms' document frequency and label lists.
    pub(super) fn hold(&mut self, terms: &[TermId], example_of: Option<LabelPos>) {
        for &term in terms {
            self.live_docs[term.index()] += 1;
            if let Some(label) = example_of {
                self.df[term.index()] += 1;
                insert_sorted(&mut self.example_labels[term.index()], label);
            }
        }
        if let Some(label) = example_of {
            self.examples += 1;
            self.labels_with_examples.insert(label);
        }
    }

    /// A document holding `terms` went (eviction, taking back): what it taught the weights
    /// stays until a fold forgets the terms no live document holds any more.
    pub(super) fn release(&mut self, terms: &[TermId]) {
        for &term in terms {
            let held_by = &mut self.live_docs[term.index()];
            *held_by -= 1;
            if *held_by == 0 {
                self.learned.unheld(term);
            }
        }
    }

    /// A text classified under `label` held these terms. True when a fold is due.
    pub(super) fn record(&mut self, label: LabelPos, terms: &[TermId]) -> bool {
        self.learned.record(label, terms)
    }

    /// Fold what classified texts taught since the last fold, forgetting the terms no live
    /// document holds any more. Returns the terms whose labels changed (weights unchanged
    /// until [`TermStats::reweigh`] or a recompute).
    pub(super) fn fold(&mut self) -> Vec<TermId> {
        let live_docs = &self.live_docs;
        self.learned.fold(|term| live_docs[term.index()] > 0)
    }

    /// What classified texts taught, as a snapshot stored it, for terms given ids in this
    /// order: a learned term no live document holds is unheld, so that, as in the running
    /// index, the next fold forgets it unless one holds it again. Nothing is folded here.
    pub(super) fn restore_learned(
        &mut self,
        folded: Vec<(TermId, Vec<LabelPos>)>,
        pending: Vec<(TermId, Vec<LabelPos>)>,
        folded_texts: u64,
        pending_texts: u64,
    ) {
        for (term, labels) in folded {
            if self.live_docs[term.index()] == 0 {
                self.learned.unheld(term);
            }
            self.learned.restore_folded(term, labels);
        }
        for (term, labels) in pending {
            if self.live_docs[term.index()] == 0 {
                self.learned.unheld(term);
            }
            self.learned.restore_pending(term, &labels);
        }
        self.learned.restore_counters(folded_texts, pending_texts);
    }

    /// A detached copy's learning: per term id of the copy, what `from` folded of it, and N
    /// as `from` counts it (the copy holds the folded labels of only some terms, and never
    /// folds).
    pub(super) fn adopt_folded(&mut self, folded: Vec<Vec<LabelPos>>, from: &Self) {
        for (id, labels) in folded.into_iter().enumerate() {
            self.learned.restore_folded(TermId::at(id), labels);
        }
        self.learned.count_labels_as(&from.learned);
    }

    /// What classified texts taught, per term id.
    pub(super) fn learned(&self) -> &LearnedSpread {
        &self.learned
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

    /// A term's weight at `count` occurrences under the current weights (`None`: a term the
    /// index does not know).
    pub(super) fn weight(&self, term: Option<TermId>, count: u32) -> f64 {
        let inverse = match term {
            Some(id) => self.inverse[id.index()],
            None => self.inverse_of(None),
        };
        tf_weight(count) * inverse
    }

    /// A document's normalised weights from its terms' (id, count), in its terms' order (none
    /// when its norm is 0).
    pub(super) fn doc_weights(
        &self,
        terms: impl Iterator<Item = (TermId, u32)>,
    ) -> Vec<(TermId, f32)> {
        let weights: Vec<(TermId, f64)> = terms
            .map(|(term, count)| (term, tf_weight(count) * self.inverse[term.index()]))
            .collect();
        let norm = weights.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
        if norm == 0.0 {
            return Vec::new();
        }
        weights
            .into_iter()
            .map(|(term, weight)| (term, (weight / norm) as f32))
            .collect()
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

    /// Every term's inverse factor from the folded state.
    pub(super) fn recompute(&mut self) {
        self.label_count = self.count_labels();
        for id in 0..self.inverse.len() {
            self.inverse[id] = self.inverse_of(Some(TermId::at(id)));
        }
    }

    /// After a fold: reweigh the terms whose labels changed, returning those whose factor
    /// moved; or, when the number of labels changed (which moves every weight), nothing, for
    /// a recompute. `idf` never reads the spread (it is kept folded for a switch of weighting).
    pub(super) fn reweigh(&mut self, changed: &[TermId]) -> Reweighed {
        if self.weighting != TermWeighting::LabelSpread {
            return Reweighed::Terms(Vec::new());
        }
        if self.count_labels() != self.label_count {
            return Reweighed::Everything;
        }
        let mut moved = Vec::new();
        for &term in changed {
            let inverse = self.inverse_of(Some(term));
            let id = term.index();
            if inverse.to_bits() != self.inverse[id].to_bits() {
                self.inverse[id] = inverse;
                moved.push(term);
            }
        }
        Reweighed::Terms(moved)
    }

    /// Per term id, whether a compaction keeps it: a live document holds it, or something was
    /// learned of it (since the last fold, or folded).
    pub(super) fn kept_terms(&self) -> Vec<bool> {
        let pending = self.learned.pending_terms();
        (0..self.live_docs.len())
            .map(|term| {
                self.live_docs[term] > 0
                    || pending[term]
                    || self.learned.has_folded(TermId::at(term))
            })
            .collect()
    }

    /// Renumber terms as the index compacts (`None`: dropped; only terms [`Self::kept_terms`]
    /// rejects are). Nothing the weights read changes.
    pub(super) fn compact(&mut self, term_ids: &[Option<TermId>]) {
        self.learned.compact(term_ids);
        let kept = |term: usize| term_ids[term].is_some();
        self.live_docs = keep_where(std::mem::take(&mut self.live_docs), kept);
        self.df = keep_where(std::mem::take(&mut self.df), kept);
        self.example_labels = keep_where(std::mem::take(&mut self.example_labels), kept);
        self.inverse = keep_where(std::mem::take(&mut self.inverse), kept);
    }

    /// Classified texts folded into the weights so far.
    pub fn folded_texts(&self) -> u64 {
        self.learned.folded_texts()
    }

    /// Whether a live document holds `term`, and its inverse factor's bits: what the lockstep
    /// tests compare.
    #[cfg(test)]
    pub fn held_inverse(&self, term: TermId) -> Option<u64> {
        (self.live_docs[term.index()] > 0).then(|| self.inverse[term.index()].to_bits())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Held counts follow the documents: a term whose last document goes is unheld, and the
    /// next fold forgets what was learned of it, moving its factor back.
    #[test]
    fn a_term_released_by_its_last_document_is_forgotten_at_the_next_fold() {
        let mut stats = TermStats::new(TermWeighting::LabelSpread);
        let (oven, bread) = (TermId(0), TermId(1));
        stats.push_term();
        stats.push_term();
        stats.hold(&[oven], Some(LabelPos(0)));
        stats.hold(&[bread], Some(LabelPos(1)));
        stats.recompute();
        let before = stats.weight(Some(oven), 1);
        stats.hold(&[oven], None);
        stats.record(LabelPos(1), &[oven]);
        assert_eq!(stats.fold(), [oven]);
        assert!(matches!(stats.reweigh(&[oven]), Reweighed::Terms(moved) if moved == [oven]));
        assert!(
            stats.weight(Some(oven), 1) < before,
            "under both labels now"
        );
        stats.hold(&[oven], None);
        stats.release(&[oven]);
        assert!(stats.fold().is_empty(), "still held");
        stats.release(&[oven]);
        stats.release(&[oven]);
        assert_eq!(stats.held_inverse(oven), None);
        assert_eq!(stats.fold(), [oven]);
        assert!(matches!(stats.reweigh(&[oven]), Reweighed::Terms(moved) if moved == [oven]));
        assert_eq!(stats.weight(Some(oven), 1), before);
        assert_eq!(stats.kept_terms(), [false, true]);
    }

    /// A label known only from what was learned under it changes N: every weight moves.
    #[test]
    fn a_new_label_in_n_moves_every_weight() {
        let mut stats = TermStats::new(TermWeighting::LabelSpread);
        stats.push_term();
        stats.hold(&[TermId(0)], Some(LabelPos(0)));
        stats.recompute();
        stats.hold(&[TermId(0)], None);
        stats.record(LabelPos(5), &[TermId(0)]);
        let changed = stats.fold();
        assert!(matches!(stats.reweigh(&changed), Reweighed::Everything));
        let mut idf = TermStats::new(TermWeighting::Idf);
        idf.push_term();
        idf.record(LabelPos(5), &[TermId(0)]);
        let changed = idf.fold();
        assert!(matches!(idf.reweigh(&changed), Reweighed::Terms(moved) if moved.is_empty()));
    }
}
