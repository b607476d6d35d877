//! Turning raw text into the lower-cased 1–3-word phrases GORAG uses as keywords.
//!
//! Tokens are runs of two or more letters/digits (underscores and hyphens split words, as in
//! scikit-learn's default token pattern that the reference code relies on). Pure numbers and
//! English stop words are removed *before* n-grams are formed, so "analysis of variance" yields
//! the bigram "analysis variance". This matches how the reference code's vectoriser builds its
//! vocabulary with `stop_words='english'`.

use foldhash::{HashMap, HashMapExt};

pub mod stop_words;

use stop_words::is_stop_word;

/// The longest phrase, in words, that becomes a keyword.
pub const MAX_NGRAM: usize = 3;

/// Lower-cased content words of `text`, in order.
pub fn content_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for_each_content_word(text, |word| words.push(word.to_string()));
    words
}

/// `f` on each lower-cased content word of `text`, in order: runs of letters and digits of two
/// or more characters, not all digits, not stop words.
fn for_each_content_word(text: &str, mut f: impl FnMut(&str)) {
    let mut current = String::new();
    let mut flush = |current: &mut String| {
        if current.chars().count() >= 2
            && !current.chars().all(|c| c.is_ascii_digit())
            && !is_stop_word(current)
        {
            f(current);
        }
        current.clear();
    };
    for ch in text.chars() {
        if ch.is_alphanumeric() {
            push_lowercase(&mut current, ch);
        } else {
            flush(&mut current);
        }
    }
    flush(&mut current);
}

/// `ch` lower-cased onto `word` (ASCII directly: most text is, and `to_lowercase` walks
/// Unicode's tables).
pub(super) fn push_lowercase(word: &mut String, ch: char) {
    if ch.is_ascii() {
        word.push(ch.to_ascii_lowercase());
    } else {
        word.extend(ch.to_lowercase());
    }
}

/// Every 1..=`MAX_NGRAM`-word phrase of `text` with its count, and the total number of phrases
/// (the denominator of term frequency).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PhraseCounts {
    pub counts: HashMap<String, u32>,
    pub total: u32,
}

impl PhraseCounts {
    pub fn of(text: &str) -> Self {
        Self::of_words(&content_words(text))
    }

    pub fn of_words(words: &[String]) -> Self {
        let mut counts: HashMap<String, u32> = HashMap::with_capacity(MAX_NGRAM * words.len());
        let mut total = 0u32;
        for n in 1..=MAX_NGRAM {
            for window in words.windows(n) {
                *counts.entry(window.join(" ")).or_insert(0) += 1;
                total += 1;
            }
        }
        Self { counts, total }
    }

    /// Each distinct phrase with its count.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.counts
            .iter()
            .map(|(phrase, &count)| (phrase.as_str(), count))
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// The phrases [`PhraseCounts`] counts, as ranges of one string (the content words joined by
/// single spaces, in which every phrase is a run): no string per phrase, for a round's many
/// labelled texts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhraseSpans {
    joined: String,
    /// Each distinct phrase's (start, end) in `joined`, and its count, in order of first sight.
    distinct: Vec<(u32, u32, u32)>,
    /// All phrases counted (the denominator of term frequency).
    pub total: u32,
}

impl PhraseSpans {
    pub fn of(text: &str) -> Self {
        let mut joined = String::with_capacity(text.len());
        let mut words: Vec<(u32, u32)> = Vec::new();
        for_each_content_word(text, |word| {
            if !joined.is_empty() {
                joined.push(' ');
            }
            let start = joined.len();
            joined.push_str(word);
            words.push((start as u32, joined.len() as u32));
        });
        let mut distinct: Vec<(u32, u32, u32)> = Vec::with_capacity(MAX_NGRAM * words.len());
        let mut total = 0u32;
        {
            let mut at: HashMap<&str, usize> = HashMap::with_capacity(MAX_NGRAM * words.len());
            for n in 1..=MAX_NGRAM {
                for window in words.windows(n) {
                    let (start, end) = (window[0].0, window[n - 1].1);
                    let phrase = &joined[start as usize..end as usize];
                    match at.entry(phrase) {
                        std::collections::hash_map::Entry::Occupied(seen) => {
                            distinct[*seen.get()].2 += 1;
                        }
                        std::collections::hash_map::Entry::Vacant(new) => {
                            new.insert(distinct.len());
                            distinct.push((start, end, 1));
                        }
                    }
                    total += 1;
                }
            }
        }
        Self {
            joined,
            distinct,
            total,
        }
    }

    /// Distinct phrases.
    pub fn distinct(&self) -> usize {
        self.distinct.len()
    }

    /// Each distinct phrase with its count.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.distinct
            .iter()
            .map(|&(start, end, count)| (&self.joined[start as usize..end as usize], count))
    }
}

/// A phrase as the graph stores it: lower case, punctuation and stop words removed, words
/// joined by single spaces. Used for LLM-proposed keywords and label names alike.
pub fn normalise_phrase(raw: &str) -> String {
    content_words(raw).join(" ")
}

/// Lower case, every non-alphanumeric run turned into one space. Unlike [`normalise_phrase`]
/// it keeps stop words: label names such as "state of the art" must stay distinguishable.
pub fn normalise_label_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut pending_space = false;
    for ch in raw.chars() {
        if ch.is_alphanumeric() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.extend(ch.to_lowercase());
        } else {
            pending_space = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_words_drop_stop_words_numbers_and_single_letters() {
        let words = content_words("The (3+1)-dimensional KP equations of a fluid, in 2019!");
        assert_eq!(words, vec!["dimensional", "kp", "equations", "fluid"]);
    }

    #[test]
    fn phrases_are_counted_up_to_trigrams() {
        let counts = PhraseCounts::of("neural network, neural network training");
        // words: neural network neural network training → 5 unigrams, 4 bigrams, 3 trigrams
        assert_eq!(counts.total, 12);
        assert_eq!(counts.counts["neural network"], 2);
        assert_eq!(counts.counts["neural"], 2);
        assert_eq!(counts.counts["network neural network"], 1);
        assert_eq!(counts.counts["network training"], 1);
    }

    #[test]
    fn phrase_spans_are_the_phrase_counts() {
        for text in [
            "neural network, neural network training",
            "The (3+1)-dimensional KP equations of a fluid, in 2019! Übergang façade façade",
            "",
            "of the and, 42 !",
            "a b c dd ee dd ee dd ee",
        ] {
            let counts = PhraseCounts::of(text);
            let spans = PhraseSpans::of(text);
            let from_spans: std::collections::BTreeMap<&str, u32> = spans.iter().collect();
            let from_counts: std::collections::BTreeMap<&str, u32> = counts.iter().collect();
            assert_eq!(from_spans, from_counts, "{text}");
            assert_eq!(spans.iter().count(), counts.counts.len(), "{text}");
            assert_eq!(spans.total, counts.total, "{text}");
        }
    }

    fn piece() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let words = [
            "Neural",
            "network",
            "networks",
            "the",
            "of",
            "42",
            "7b",
            "x",
            "Übergang",
            "façade",
            "data_driven",
            "don't",
            "training",
            "network",
        ];
        let separators = [" ", "  ", ", ", "-", "'", ". ", "\n"];
        (
            proptest::sample::select(words.to_vec()),
            proptest::sample::select(separators.to_vec()),
        )
            .prop_map(|(word, separator)| format!("{word}{separator}"))
    }

    proptest::proptest! {
        #[test]
        fn phrase_spans_count_what_phrase_counts_counts(
            pieces in proptest::collection::vec(piece(), 0..24)
        ) {
            let text = pieces.concat();
            let counts = PhraseCounts::of(&text);
            let spans = PhraseSpans::of(&text);
            let from_spans: std::collections::BTreeMap<&str, u32> = spans.iter().collect();
            let from_counts: std::collections::BTreeMap<&str, u32> = counts.iter().collect();
            proptest::prop_assert_eq!(from_spans, from_counts);
            proptest::prop_assert_eq!(spans.total, counts.total);
        }
    }

    #[test]
    fn empty_and_stop_word_only_texts_have_no_phrases() {
        assert!(PhraseCounts::of("").is_empty());
        assert!(PhraseCounts::of("of the and, 42 !").is_empty());
    }

    #[test]
    fn label_text_normalisation_keeps_words_and_folds_separators() {
        assert_eq!(normalise_label_text("Machine_Learning"), "machine learning");
        assert_eq!(
            normalise_label_text("  signal-flow_graph. "),
            "signal flow graph"
        );
        assert_eq!(normalise_label_text("label 7"), "label 7");
        assert_eq!(normalise_phrase("The Neural-Networks"), "neural networks");
    }

    #[test]
    fn unicode_letters_are_words() {
        assert_eq!(content_words("Übergang façade"), vec!["übergang", "façade"]);
    }
}
