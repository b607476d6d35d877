//! Keyword extraction: which phrases of a text become keyword nodes / Steiner terminals.
//!
//! Two modes, as in GORAG.md:
//! - `tfidf` (the reference code's default, no LLM call): score every 1–3-gram with the
//!   normalised TF-IDF score and keep the best ones;
//! - `llm` (the paper): the LLM proposes keywords; each is normalised and kept only when it is a
//!   phrase of the text, scored like the statistical ones (the reference code likewise drops
//!   LLM keywords missing from its TF-IDF vocabulary).
//!
//! The cut: an absolute `s ≥ 0.1` keeps almost nothing on ~200-word abstracts (tf is taken over
//! all phrases), so selection is **top-k by score** plus an optional absolute floor. The default
//! k was chosen by measuring candidate recall on the WOS split (see docs/design/keyword-cut.md,
//! "Keyword cut").

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::text::{normalise_phrase, PhraseCounts};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum KeywordMode {
    #[default]
    Tfidf,
    Llm,
}

impl KeywordMode {
    /// As the configuration spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tfidf => "tfidf",
            Self::Llm => "llm",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeywordSelection {
    /// Keep at most this many phrases per text, best first.
    pub top_k: usize,
    /// And only those scoring at least this much (0 = no floor).
    pub min_score: f64,
}

impl Default for KeywordSelection {
    fn default() -> Self {
        Self {
            top_k: 20,
            min_score: 0.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Keyword {
    pub phrase: String,
    /// Normalised TF-IDF score `s` of the phrase in this text.
    pub score: f64,
}

/// The best phrases of a text by score. Ties (common in short texts, where every phrase occurs
/// once) go to shorter phrases — a single word is more likely to recur in later texts — then
/// alphabetically, so results are stable.
pub fn select<P: AsRef<str>>(scores: Vec<(P, f64)>, selection: &KeywordSelection) -> Vec<Keyword> {
    best(scores, selection)
        .into_iter()
        .map(|(phrase, score)| Keyword {
            phrase: phrase.as_ref().to_string(),
            score,
        })
        .collect()
}

/// [`select`]'s phrases and scores, as they were given (no copy). The phrases are distinct, so
/// the order is total: the best `top_k` are picked first and only they are sorted, which gives
/// what sorting them all would.
pub fn best<P: AsRef<str>>(scores: Vec<(P, f64)>, selection: &KeywordSelection) -> Vec<(P, f64)> {
    if selection.top_k == 0 {
        return Vec::new();
    }
    let mut ranked: Vec<(f64, usize, P)> = scores
        .into_iter()
        .filter(|(_, s)| *s >= selection.min_score)
        .map(|(phrase, score)| (score, word_count(phrase.as_ref()), phrase))
        .collect();
    let order = |a: &(f64, usize, P), b: &(f64, usize, P)| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| a.2.as_ref().cmp(b.2.as_ref()))
    };
    if ranked.len() > selection.top_k {
        ranked.select_nth_unstable_by(selection.top_k - 1, order);
        ranked.truncate(selection.top_k);
    }
    ranked.sort_unstable_by(order);
    ranked
        .into_iter()
        .map(|(score, _, phrase)| (phrase, score))
        .collect()
}

/// Keywords proposed by an LLM answer, kept only when they are phrases of the text.
/// `scores` are the text's phrase scores; the answer may separate keywords by commas,
/// semicolons, new lines or list markers.
pub fn from_llm_answer(
    answer: &str,
    text_phrases: &PhraseCounts,
    scores: &HashMap<String, f64>,
    selection: &KeywordSelection,
) -> Vec<Keyword> {
    let mut seen = std::collections::HashSet::new();
    let mut picked = Vec::new();
    for piece in answer.split([',', ';', '\n', '|']) {
        let phrase = normalise_phrase(strip_list_marker(piece));
        if phrase.is_empty() || !text_phrases.counts.contains_key(&phrase) {
            continue;
        }
        if seen.insert(phrase.clone()) {
            let score = scores.get(&phrase).copied().unwrap_or(0.0);
            picked.push((phrase, score));
        }
    }
    select(picked, selection)
}

/// Words of a phrase (single spaces between them).
fn word_count(phrase: &str) -> usize {
    phrase.bytes().filter(|&b| b == b' ').count() + 1
}

fn strip_list_marker(piece: &str) -> &str {
    let trimmed = piece.trim();
    let without_bullet = trimmed.trim_start_matches(['-', '*', '•']);
    let digits = without_bullet
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_digit())
        .count();
    let rest = &without_bullet[digits..];
    if digits > 0 && (rest.starts_with('.') || rest.starts_with(')')) {
        &rest[1..]
    } else {
        without_bullet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_keeps_the_best_k_above_the_floor() {
        let scores = vec![
            ("a".to_string(), 0.1),
            ("b".to_string(), 0.3),
            ("c".to_string(), 0.3),
            ("d".to_string(), 0.01),
        ];
        let picked = select(
            scores,
            &KeywordSelection {
                top_k: 3,
                min_score: 0.05,
            },
        );
        let names: Vec<_> = picked.iter().map(|k| k.phrase.as_str()).collect();
        assert_eq!(names, vec!["b", "c", "a"]);
    }

    #[test]
    fn llm_keywords_must_occur_in_the_text() {
        let phrases = PhraseCounts::of("Deep neural networks for image segmentation");
        let scores: HashMap<String, f64> =
            phrases.counts.keys().map(|p| (p.clone(), 0.5)).collect();
        let answer = "1. Neural Networks\n2) image segmentation; quantum gravity, - deep";
        let picked = from_llm_answer(
            answer,
            &phrases,
            &scores,
            &KeywordSelection {
                top_k: 10,
                min_score: 0.0,
            },
        );
        let mut names: Vec<_> = picked.iter().map(|k| k.phrase.clone()).collect();
        names.sort();
        assert_eq!(names, vec!["deep", "image segmentation", "neural networks"]);
    }
}
