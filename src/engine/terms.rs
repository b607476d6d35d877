//! The terms of the retrieval index: stemmed words and the 2–3-word phrases they form.
//!
//! Different from the graph's keyword phrases ([`super::text`]) on purpose: the Steiner graph
//! keeps the paper's phrases unchanged, while ranked retrieval measured better with
//! (a) Snowball (Porter 2) stems, so "classifier" meets "classification", and (b) n-grams that
//! never cross a stop word or a punctuation mark, so "analysis of variance" gives the unigrams
//! and no "analysis variance" bigram that the text never says.

use std::cell::RefCell;
use std::sync::LazyLock;

use foldhash::HashMap;
use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

use super::text::is_stop_word;

/// Longest n-gram, in words.
pub const MAX_TERM_WORDS: usize = 3;

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Words whose stems each thread remembers, at most (past it, it starts afresh): words recur
/// (a vocabulary's common words are most of any text), and the Snowball stemmer costs a few
/// thousand instructions a word, most of what a round's indexing cost.
const STEMS_KEPT: usize = 1 << 14;

thread_local! {
    static STEMS: RefCell<HashMap<String, String>> = RefCell::new(HashMap::default());
}

/// The Snowball stem of a lower-cased word (a pure function, remembered per thread).
fn stem(word: &str) -> String {
    STEMS.with(|stems| {
        let mut stems = stems.borrow_mut();
        if let Some(stem) = stems.get(word) {
            return stem.clone();
        }
        let stem = STEMMER.stem(word).into_owned();
        if stems.len() >= STEMS_KEPT {
            stems.clear();
        }
        stems.insert(word.to_string(), stem.clone());
        stem
    })
}

/// A text's distinct terms with their counts, sorted by term (a canonical form: equal texts give
/// equal values, whatever the hashing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermCounts {
    pub counts: Vec<(String, u32)>,
}

impl TermCounts {
    pub fn of(text: &str) -> Self {
        let mut all: Vec<String> = Vec::new();
        for run in stemmed_runs(text) {
            for n in 1..=MAX_TERM_WORDS {
                for window in run.windows(n) {
                    all.push(window.join(" "));
                }
            }
        }
        all.sort_unstable();
        let mut counts: Vec<(String, u32)> = Vec::new();
        for term in all {
            match counts.last_mut() {
                Some((last, count)) if *last == term => *count += 1,
                _ => counts.push((term, 1)),
            }
        }
        Self { counts }
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// Runs of consecutive content words, stemmed. A stop word, a number or any character other
/// than letters, digits, spaces, hyphens and apostrophes ends a run.
fn stemmed_runs(text: &str) -> Vec<Vec<String>> {
    let mut runs: Vec<Vec<String>> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut word = String::new();
    let end_run = |run: &mut Vec<String>, runs: &mut Vec<Vec<String>>| {
        if !run.is_empty() {
            runs.push(std::mem::take(run));
        }
    };
    for ch in text.chars().chain(std::iter::once('.')) {
        if ch.is_alphanumeric() {
            word.extend(ch.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            let content = word.chars().count() >= 2
                && !word.chars().all(|c| c.is_ascii_digit())
                && !is_stop_word(&word);
            if content {
                run.push(stem(&word));
            } else {
                end_run(&mut run, &mut runs);
            }
            word.clear();
        }
        if !(ch.is_whitespace() || ch == '-' || ch == '\'' || ch == '’') {
            end_run(&mut run, &mut runs);
        }
    }
    end_run(&mut run, &mut runs);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        TermCounts::of(text)
            .counts
            .into_iter()
            .map(|(t, _)| t)
            .collect()
    }

    #[test]
    fn words_are_stemmed_and_phrases_stop_at_stop_words_and_punctuation() {
        let t = terms("Analysis of variance, classifiers classifying");
        assert_eq!(
            t,
            vec!["analysi", "classifi", "classifi classifi", "varianc"]
        );
    }

    #[test]
    fn counts_repeat_and_hyphens_join_a_phrase() {
        let counts = TermCounts::of("neural networks; neural network-training");
        let get = |term: &str| {
            counts
                .counts
                .iter()
                .find(|(t, _)| t == term)
                .map(|(_, c)| *c)
        };
        assert_eq!(get("neural"), Some(2));
        assert_eq!(get("neural network"), Some(2));
        assert_eq!(get("network train"), Some(1));
        assert_eq!(get("neural network train"), Some(1));
        assert_eq!(get("network neural"), None);
    }

    #[test]
    fn remembered_stems_are_the_stemmer_s() {
        for word in ["classifiers", "running", "generalization", "gen42", "ran", "classifiers"] {
            assert_eq!(stem(word), STEMMER.stem(word), "{word}");
        }
    }

    #[test]
    fn empty_numbers_and_stop_words_give_nothing() {
        assert!(TermCounts::of("").is_empty());
        assert!(TermCounts::of("of the 42, and 7 !").is_empty());
    }
}
