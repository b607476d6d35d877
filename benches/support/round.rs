//! A synthetic round of `n` labels shaped the way a real taxonomy's round shares its words:
//! every label has a short name, a description and one or two examples, drawn from
//!   - a general vocabulary (Zipf-like: its commonest words occur in most labels' texts, so
//!     their keywords are shared by thousands of labels),
//!   - its topic's vocabulary (labels come in topics of `TOPIC_LABELS`, sharing those words),
//!   - a few words of its own,
//!
//! with stop words between them as in prose. Sized like the project's own taxonomy
//! (examples/taxonomy/support.jsonl: one-sentence examples of about 13 words, descriptions of
//! about 8): an example has 12 content words, a description 6, a name 2.
//!
//! Deterministic (seeded). Used by `benches/round_size.rs` and `examples/round_size.rs`.

// Each including binary uses part of it.
#![allow(dead_code)]

use gorag::engine::NewLabel;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Labels per topic.
const TOPIC_LABELS: usize = 20;
const TOPIC_WORDS: usize = 80;
const GENERAL_WORDS: usize = 5000;
const OWN_WORDS: usize = 8;

/// Content words of a description and of an example: (general, topic, own).
const DESCRIPTION_WORDS: (usize, usize, usize) = (2, 2, 2);
const EXAMPLE_WORDS: (usize, usize, usize) = (5, 4, 3);
/// Stop words, one of which follows a content word with probability `STOP_WORD_SHARE`.
const STOP_WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "for", "with", "my", "on",
];
const STOP_WORD_SHARE: f64 = 0.4;

pub struct RoundMaker {
    rng: StdRng,
}

impl RoundMaker {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// Zipf-like rank in 0..n: low ranks are much more frequent.
    fn rank(&mut self, n: usize) -> usize {
        let u: f64 = self.rng.random_range(0.0..1.0);
        ((n as f64).powf(u) - 1.0) as usize % n
    }

    /// A text of label `label`: (general, topic, own) content words, shuffled together.
    fn text(&mut self, label: usize, (general, topic, own): (usize, usize, usize)) -> String {
        let group = label / TOPIC_LABELS;
        let mut words = Vec::with_capacity(general + topic + own);
        for _ in 0..general {
            let r = self.rank(GENERAL_WORDS);
            words.push(format!("gen{r}"));
        }
        for _ in 0..topic {
            let r = self.rank(TOPIC_WORDS);
            words.push(format!("top{group}w{r}"));
        }
        for _ in 0..own {
            let r = self.rng.random_range(0..OWN_WORDS);
            words.push(format!("own{label}w{r}"));
        }
        // Fisher–Yates, so the kinds of words mix into the phrases as in prose.
        for i in (1..words.len()).rev() {
            let j = self.rng.random_range(0..=i);
            words.swap(i, j);
        }
        let mut text = String::new();
        for word in words {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&word);
            if self.rng.random_bool(STOP_WORD_SHARE) {
                let stop = STOP_WORDS[self.rng.random_range(0..STOP_WORDS.len())];
                text.push(' ');
                text.push_str(stop);
            }
        }
        text
    }

    /// Label `label` of a round: named after its topic and itself, described, with one example
    /// (even labels) or two (odd ones).
    pub fn label(&mut self, label: usize) -> NewLabel {
        let group = label / TOPIC_LABELS;
        let examples = (0..1 + label % 2)
            .map(|_| self.text(label, EXAMPLE_WORDS))
            .collect();
        NewLabel {
            id: format!("label-{label}"),
            name: Some(format!("top{group}w0 own{label}name")),
            description: Some(self.text(label, DESCRIPTION_WORDS)),
            examples,
        }
    }

    /// A round of `n` labels.
    pub fn round(&mut self, n: usize) -> Vec<NewLabel> {
        (0..n).map(|label| self.label(label)).collect()
    }
}
