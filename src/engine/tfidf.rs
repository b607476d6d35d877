//! Incremental TF-IDF statistics and GORAG's normalised keyword score.
//!
//! `s = tf · idf / ln(N + 1)` with `tf = count / phrases_in_text`,
//! `idf = ln((N + 1) / (df + 1))`, N = texts seen so far (labelled and query texts), df = texts
//! containing the phrase. Adding a text costs O(its distinct phrases): document frequencies are
//! kept as counts, never re-derived from a document matrix.
//!
//! Bounded: past a capacity of distinct phrases the rarest are forgotten ([`CorpusStats::bound`]),
//! so a stream that keeps bringing new words does not grow the table without end.

use std::collections::BTreeMap;

use foldhash::HashMap;

use serde::{Deserialize, Serialize};

use super::text::PhraseCounts;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CorpusStats {
    /// Texts that joined the statistics.
    pub documents: u64,
    /// Phrase → number of texts containing it.
    pub document_frequency: HashMap<String, u64>,
}

impl CorpusStats {
    /// Make `phrases` part of the statistics (N += 1, df += 1 for each distinct phrase).
    pub fn add(&mut self, phrases: &PhraseCounts) {
        self.add_distinct(phrases.counts.keys().map(String::as_str));
    }

    /// Room for `phrases` more distinct phrases (a batch's, at most: the table is not grown
    /// and rehashed again and again while it adds them).
    pub fn reserve(&mut self, phrases: usize) {
        self.document_frequency.reserve(phrases);
    }

    /// [`Self::add`] of a text's distinct phrases however they are held.
    pub fn add_distinct<'p>(&mut self, phrases: impl Iterator<Item = &'p str>) {
        self.documents += 1;
        for phrase in phrases {
            // A phrase already counted is not copied (`entry` would take an owned key).
            match self.document_frequency.get_mut(phrase) {
                Some(df) => *df += 1,
                None => {
                    self.document_frequency.insert(phrase.to_string(), 1);
                }
            }
        }
    }

    /// Past `capacity` distinct phrases, forget the rarest: every phrase whose document
    /// frequency is at most the smallest `t` that leaves at most half the capacity. The whole
    /// class at `t` goes, so a pass can forget far more than half (on WOS-shaped text `t` = 1,
    /// the phrases seen once: 93 % of WOS's phrases, 65–89 % of a full synthetic table). A
    /// forgotten phrase counts as never seen (df 0) until it occurs again, and from then on
    /// from 1; N keeps counting every text. Counts never age: once the phrases kept fill half
    /// the capacity, `t` rises (docs/design/keyword-statistics.md, "Bounded keyword
    /// statistics"). At most one pass over the table per `capacity / 2` new phrases. A pure
    /// function of the texts added and their order (the pass counts phrases per df, so the
    /// map's order does not matter): replicas and restarts that add the same texts under the
    /// same capacity agree. Returns the phrases forgotten.
    pub fn bound(&mut self, capacity: usize) -> usize {
        let before = self.document_frequency.len();
        if before <= capacity {
            return 0;
        }
        let mut phrases_by_df: BTreeMap<u64, usize> = BTreeMap::new();
        for &df in self.document_frequency.values() {
            *phrases_by_df.entry(df).or_insert(0) += 1;
        }
        let keep_at_most = capacity / 2;
        let mut left = before;
        let mut threshold = 0;
        for (df, phrases) in phrases_by_df {
            if left <= keep_at_most {
                break;
            }
            left -= phrases;
            threshold = df;
        }
        self.document_frequency.retain(|_, df| *df > threshold);
        before - self.document_frequency.len()
    }

    /// Distinct phrases counted (at most the capacity [`Self::bound`] was last given).
    pub fn phrase_count(&self) -> usize {
        self.document_frequency.len()
    }

    pub fn df(&self, phrase: &str) -> u64 {
        self.document_frequency.get(phrase).copied().unwrap_or(0)
    }

    /// Score every phrase of a text. When `text_is_counted` is false the text is scored as if it
    /// had already joined the statistics (N + 1, df + 1), which is what the reference code's
    /// vectoriser sees after fitting on the corpus that includes the text.
    /// The phrases are borrowed: a caller keeps the few it selects (a text has many).
    pub fn scores<'p>(
        &self,
        phrases: &'p PhraseCounts,
        text_is_counted: bool,
    ) -> Vec<(&'p str, f64)> {
        self.scores_of(phrases.iter(), phrases.total, text_is_counted)
    }

    /// [`Self::scores`] of a text's distinct phrases and counts however they are held, `total`
    /// phrases in all.
    pub fn scores_of<'p>(
        &self,
        phrases: impl Iterator<Item = (&'p str, u32)>,
        total: u32,
        text_is_counted: bool,
    ) -> Vec<(&'p str, f64)> {
        if total == 0 {
            return Vec::new();
        }
        let extra = u64::from(!text_is_counted);
        let n = (self.documents + extra) as f64;
        let norm = (n + 1.0).ln();
        let total = f64::from(total);
        phrases
            .map(|(phrase, count)| {
                let df = (self.df(phrase) + extra) as f64;
                let tf = f64::from(count) / total;
                let idf = ((n + 1.0) / (df + 1.0)).ln();
                let s = if norm > 0.0 { tf * idf / norm } else { 0.0 };
                (phrase, s)
            })
            .collect()
    }

    /// `tf · idf` weights used for cosine similarity (the NaiveRAG-style baseline).
    pub fn tfidf_weight(&self, count: u32, total: u32, phrase: &str) -> f64 {
        let n = self.documents as f64;
        let df = self.df(phrase) as f64;
        let tf = f64::from(count) / f64::from(total.max(1));
        tf * ((n + 1.0) / (df + 1.0)).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score_of(scores: &[(&str, f64)], phrase: &str) -> f64 {
        scores
            .iter()
            .find(|(p, _)| *p == phrase)
            .map(|(_, s)| *s)
            .unwrap_or(f64::NAN)
    }

    /// Golden values worked out by hand from the formula in GORAG.md.
    #[test]
    fn golden_scores_follow_the_formula() {
        let mut stats = CorpusStats::default();
        stats.add(&PhraseCounts::of("graph neural"));
        stats.add(&PhraseCounts::of("graph theory"));
        stats.add(&PhraseCounts::of("protein folding"));
        // Query "graph graph kernel": words graph graph kernel → phrases:
        // graph×2, kernel, graph graph, graph kernel, graph graph kernel → total 6.
        let query = PhraseCounts::of("graph graph kernel");
        assert_eq!(query.total, 6);
        let scores = stats.scores(&query, false);
        // N = 3 + 1 = 4, norm = ln 5.
        let norm = 5f64.ln();
        // graph: tf = 2/6, df = 2 + 1 = 3, idf = ln(5/4).
        let graph = (2.0 / 6.0) * (5.0f64 / 4.0).ln() / norm;
        // kernel: tf = 1/6, df = 0 + 1, idf = ln(5/2).
        let kernel = (1.0 / 6.0) * (5.0f64 / 2.0).ln() / norm;
        assert!((score_of(&scores, "graph") - graph).abs() < 1e-12);
        assert!((score_of(&scores, "kernel") - kernel).abs() < 1e-12);
        assert!((score_of(&scores, "graph kernel") - kernel).abs() < 1e-12);
    }

    #[test]
    fn counted_text_is_not_counted_twice() {
        let mut stats = CorpusStats::default();
        stats.add(&PhraseCounts::of("alpha beta"));
        let text = PhraseCounts::of("beta gamma");
        let before = stats.scores(&text, false);
        stats.add(&text);
        let after = stats.scores(&text, true);
        let mut before: Vec<_> = before;
        let mut after: Vec<_> = after;
        before.sort_by(|a, b| a.0.cmp(b.0));
        after.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(before, after);
    }

    #[test]
    fn first_text_scores_zero_and_empty_text_scores_nothing() {
        let stats = CorpusStats::default();
        let solitary = PhraseCounts::of("solitary text");
        let scores = stats.scores(&solitary, false);
        assert!(scores.iter().all(|(_, s)| *s == 0.0));
        assert!(stats.scores(&PhraseCounts::default(), false).is_empty());
    }

    #[test]
    fn adding_counts_each_distinct_phrase_once() {
        let mut stats = CorpusStats::default();
        stats.add(&PhraseCounts::of("echo echo echo"));
        assert_eq!(stats.documents, 1);
        assert_eq!(stats.df("echo"), 1);
        assert_eq!(stats.df("echo echo"), 1);
    }

    fn stats_of(texts: &[&str]) -> CorpusStats {
        let mut stats = CorpusStats::default();
        for text in texts {
            stats.add(&PhraseCounts::of(text));
        }
        stats
    }

    #[test]
    fn within_capacity_nothing_is_forgotten() {
        let mut stats = stats_of(&["alpha beta", "alpha gamma"]);
        let before = stats.clone();
        // alpha, beta, gamma, alpha beta, alpha gamma: five phrases.
        assert_eq!(stats.bound(5), 0);
        assert_eq!(stats, before);
    }

    #[test]
    fn past_capacity_the_rarest_are_forgotten_and_the_rest_kept_exactly() {
        // alpha in 3 texts, beta in 2, every other phrase in 1.
        let mut stats = stats_of(&["alpha beta", "alpha beta", "alpha"]);
        stats.add(&PhraseCounts::of("delta"));
        stats.add(&PhraseCounts::of("epsilon"));
        // alpha, beta, alpha beta (2), delta, epsilon: 5 phrases, capacity 4 → keep at most 2.
        assert_eq!(stats.document_frequency.len(), 5);
        let forgotten = stats.bound(4);
        // df ≤ 1 goes (delta, epsilon) and leaves 3 > 2, so df ≤ 2 goes too: alpha stays.
        assert_eq!(forgotten, 4);
        assert_eq!(stats.df("alpha"), 3);
        assert_eq!(stats.df("beta"), 0);
        assert_eq!(stats.df("delta"), 0);
        assert_eq!(stats.documents, 5, "N keeps counting every text");
    }

    #[test]
    fn a_forgotten_phrase_counts_again_from_its_next_text() {
        let mut stats = stats_of(&["common", "common", "common rare"]);
        // common (3), rare (1), common rare (1): capacity 2 keeps at most 1.
        stats.bound(2);
        assert_eq!(stats.df("rare"), 0);
        assert_eq!(stats.df("common"), 3);
        stats.add(&PhraseCounts::of("rare"));
        assert_eq!(stats.df("rare"), 1);
        assert_eq!(stats.df("common"), 3, "a kept phrase keeps its count");
    }

    #[test]
    fn bounding_never_leaves_more_than_the_capacity_whatever_the_spread() {
        // Every phrase equally frequent: the only way to at most half is to forget them all.
        let mut stats = stats_of(&["kiwi mango", "kiwi mango"]);
        stats.bound(2);
        assert!(stats.document_frequency.is_empty());
        // A long stream of new words never holds more than the capacity, and a phrase every
        // text has is never forgotten.
        let mut stats = CorpusStats::default();
        for i in 0..2_000 {
            stats.add(&PhraseCounts::of(&format!("shared word{i}x")));
            stats.bound(100);
            assert!(stats.document_frequency.len() <= 100);
        }
        assert_eq!(stats.df("shared"), 2_000);
    }
}
