//! A prediction's rationale, from the index: which of its label's examples matched a text, and
//! on which terms.

use super::{DocId, TextIndex};
use crate::engine::terms::TermCounts;

/// Why a labelled example matched a query ([`TextIndex::example_match`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExampleMatch {
    /// Its number among its label's examples, from 1 in the order they were indexed.
    pub number: u32,
    /// The shared terms that added most to the similarity, heaviest first.
    pub terms: Vec<String>,
}

impl TextIndex {
    /// Why a labelled example matched a query: its number among its label's examples (1 for
    /// the first indexed) and the `n` shared terms that added most to the cosine, heaviest
    /// first. None when `id` is no labelled example.
    pub fn example_match(&self, id: DocId, query: &TermCounts, n: usize) -> Option<ExampleMatch> {
        let number = self.docs.example_number(id)?;
        let doc = self.docs.get(id)?;
        let mut shared: Vec<(f64, &str)> = query
            .counts
            .iter()
            .filter_map(|(term, count)| {
                let (_, in_doc) = doc.terms.counts.iter().find(|(t, _)| t == term)?;
                let known = self.vocabulary.get(term);
                let weight = self.stats.weight(known, *count) * self.stats.weight(known, *in_doc);
                Some((weight, term.as_str()))
            })
            .collect();
        shared.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        Some(ExampleMatch {
            number,
            terms: shared
                .into_iter()
                .take(n)
                .map(|(_, t)| t.to_string())
                .collect(),
        })
    }
}
