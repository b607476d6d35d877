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

use super::text::push_lowercase;
use super::text::stop_words::is_stop_word;

/// Longest n-gram, in words.
pub const MAX_TERM_WORDS: usize = 3;

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Words whose stems each thread remembers in each of two generations: words recur (a
/// vocabulary's common words are most of any text), and the Snowball stemmer costs a few
/// thousand instructions a word, most of what preparing a round's texts cost. When the young
/// generation is full it becomes the old one (the old one is dropped); a word found among the
/// old moves back to the young, so the words in use stay while one-off words pass through.
const STEMS_KEPT: usize = 1 << 13;

#[derive(Default)]
struct Stems {
    young: HashMap<String, String>,
    old: HashMap<String, String>,
}

thread_local! {
    static STEMS: RefCell<Stems> = RefCell::new(Stems::default());
}

/// Append the Snowball stem of a lower-cased word to `out` (a pure function, remembered per
/// thread).
fn stem_into(word: &str, out: &mut String) {
    STEMS.with(|stems| {
        let mut stems = stems.borrow_mut();
        if let Some(stem) = stems.young.get(word) {
            out.push_str(stem);
            return;
        }
        let stem = match stems.old.remove(word) {
            Some(stem) => stem,
            None => STEMMER.stem(word).into_owned(),
        };
        out.push_str(&stem);
        if stems.young.len() >= STEMS_KEPT {
            stems.old = std::mem::take(&mut stems.young);
        }
        stems.young.insert(word.to_string(), stem);
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
        let stems = StemmedRuns::of(text);
        let mut grams: Vec<&str> = Vec::with_capacity(MAX_TERM_WORDS * stems.words.len());
        for run in &stems.runs {
            let run = &stems.words[run.clone()];
            for n in 1..=MAX_TERM_WORDS {
                for window in run.windows(n) {
                    grams.push(&stems.joined[window[0].0..window[n - 1].1]);
                }
            }
        }
        grams.sort_unstable();
        let mut counts: Vec<(String, u32)> = Vec::with_capacity(grams.len());
        for term in grams {
            match counts.last_mut() {
                Some((last, count)) if last == term => *count += 1,
                _ => counts.push((term.to_string(), 1)),
            }
        }
        Self { counts }
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// Runs of consecutive content words, stemmed. A stop word, a number or any character other
/// than letters, digits, spaces, hyphens and apostrophes ends a run. Every stem is in one
/// string, separated by single spaces, so each n-gram of a run is a slice of it: one string per
/// distinct term, not one per word and per n-gram.
struct StemmedRuns {
    joined: String,
    /// Each stem's place in `joined`.
    words: Vec<(usize, usize)>,
    /// Each run's stems in `words`.
    runs: Vec<std::ops::Range<usize>>,
}

impl StemmedRuns {
    fn of(text: &str) -> Self {
        let mut stems = Self {
            joined: String::with_capacity(text.len()),
            words: Vec::new(),
            runs: Vec::new(),
        };
        let mut run_start = 0;
        let mut word = String::new();
        let end_run = |stems: &mut Self, run_start: &mut usize| {
            if stems.words.len() > *run_start {
                stems.runs.push(*run_start..stems.words.len());
                *run_start = stems.words.len();
            }
        };
        for ch in text.chars().chain(std::iter::once('.')) {
            if ch.is_alphanumeric() {
                push_lowercase(&mut word, ch);
                continue;
            }
            if !word.is_empty() {
                let content = word.chars().count() >= 2
                    && !word.chars().all(|c| c.is_ascii_digit())
                    && !is_stop_word(&word);
                if content {
                    if !stems.joined.is_empty() {
                        stems.joined.push(' ');
                    }
                    let start = stems.joined.len();
                    stem_into(&word, &mut stems.joined);
                    stems.words.push((start, stems.joined.len()));
                } else {
                    end_run(&mut stems, &mut run_start);
                }
                word.clear();
            }
            if !(ch.is_whitespace() || ch == '-' || ch == '\'' || ch == '’') {
                end_run(&mut stems, &mut run_start);
            }
        }
        end_run(&mut stems, &mut run_start);
        stems
    }
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

    /// The terms as they were first computed (a string per word and per n-gram): the oracle
    /// for the one-string version.
    fn terms_one_string_each(text: &str) -> Vec<(String, u32)> {
        let mut runs: Vec<Vec<String>> = vec![Vec::new()];
        let mut word = String::new();
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
                    runs.last_mut()
                        .unwrap()
                        .push(STEMMER.stem(&word).into_owned());
                } else {
                    runs.push(Vec::new());
                }
                word.clear();
            }
            if !(ch.is_whitespace() || ch == '-' || ch == '\'' || ch == '’') {
                runs.push(Vec::new());
            }
        }
        let mut all: Vec<String> = Vec::new();
        for run in runs {
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
        counts
    }

    fn piece() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let words = [
            "Classifiers",
            "classifying",
            "running",
            "the",
            "of",
            "42",
            "7b",
            "network",
            "networks",
            "x",
            "Übergang",
            "façade",
            "data-driven",
            "don't",
            "analysis",
        ];
        let separators = [" ", "  ", ", ", "-", "'", "’", ". ", "\n", "; "];
        (
            proptest::sample::select(words.to_vec()),
            proptest::sample::select(separators.to_vec()),
        )
            .prop_map(|(word, separator)| format!("{word}{separator}"))
    }

    proptest::proptest! {
        #[test]
        fn terms_are_those_of_a_string_per_word_and_n_gram(
            pieces in proptest::collection::vec(piece(), 0..24)
        ) {
            let text = pieces.concat();
            proptest::prop_assert_eq!(TermCounts::of(&text).counts, terms_one_string_each(&text));
        }
    }

    #[test]
    fn remembered_stems_are_the_stemmer_s() {
        // Past both generations, so words come back from the old one and are stemmed again.
        let words: Vec<String> = (0..3 * STEMS_KEPT)
            .map(|i| format!("running{}", i % (STEMS_KEPT + 7)))
            .chain(
                [
                    "classifiers",
                    "generalization",
                    "gen42",
                    "ran",
                    "classifiers",
                ]
                .map(String::from),
            )
            .collect();
        for word in &words {
            let mut stem = String::new();
            stem_into(word, &mut stem);
            assert_eq!(stem, STEMMER.stem(word), "{word}");
        }
    }

    #[test]
    fn empty_numbers_and_stop_words_give_nothing() {
        assert!(TermCounts::of("").is_empty());
        assert!(TermCounts::of("of the 42, and 7 !").is_empty());
    }
}
