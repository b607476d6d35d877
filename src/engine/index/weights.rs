//! What the index answers about its terms' weights: which of a text's terms weigh most (what a
//! classified text keeps, what a pooled text keeps), and what classified texts taught the
//! weights (as a snapshot stores it).

use super::spread::SpreadState;
use super::{TermStats, Vocabulary};
use crate::engine::terms::TermCounts;

/// The vocabulary and the per-term statistics, read together.
pub struct TermWeights<'a> {
    pub(super) vocabulary: &'a Vocabulary,
    pub(super) stats: &'a TermStats,
}

impl TermWeights<'_> {
    /// What classified texts taught the weights, as a snapshot stores it.
    pub fn learned_state(&self) -> SpreadState {
        self.stats.learned().to_state(self.vocabulary.names())
    }

    /// The `cap` heaviest terms of a text under the current weights, sorted by term.
    pub fn heaviest(&self, terms: &TermCounts, cap: usize) -> TermCounts {
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
                    self.stats.weight(self.vocabulary.get(term), entry.1),
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
