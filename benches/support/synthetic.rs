//! A synthetic corpus shaped like WOS: 133 labels, each with its own topic vocabulary drawn
//! Zipf-style plus a shared general vocabulary, ~120-word texts. Deterministic (seeded).

// Each benchmark binary includes this file and uses part of it.
#![allow(dead_code)]

use gorag::engine::{Engine, EngineConfig, NewLabel};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const LABELS: usize = 133;
const TOPIC_WORDS: usize = 600;
const GENERAL_WORDS: usize = 3000;
const WORDS_PER_TEXT: usize = 120;

pub struct Corpus {
    rng: StdRng,
}

impl Corpus {
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

    /// One text of `label`: 60% topic words, 40% general words.
    pub fn text(&mut self, label: usize) -> String {
        let mut words = Vec::with_capacity(WORDS_PER_TEXT);
        for _ in 0..WORDS_PER_TEXT {
            if self.rng.random_bool(0.6) {
                let r = self.rank(TOPIC_WORDS);
                words.push(format!("t{label}x{r}"));
            } else {
                let r = self.rank(GENERAL_WORDS);
                words.push(format!("g{r}"));
            }
        }
        words.join(" ")
    }

    pub fn label(&mut self) -> usize {
        self.rng.random_range(0..LABELS)
    }
}

pub fn label_id(label: usize) -> String {
    format!("label {label}")
}

/// An engine with one labelled example per label, then `texts` query texts learned online
/// (each linked to its true label, as a perfect classifier would), every other one with
/// confidence and the rest as tentative texts (on the WOS stream about half of the decisions
/// are confident), so the index holds both kinds a query walks.
pub fn engine(texts: usize, seed: u64) -> (Engine, Corpus) {
    engine_with_config(EngineConfig::default(), texts, seed)
}

/// [`engine`] under another configuration.
pub fn engine_with_config(config: EngineConfig, texts: usize, seed: u64) -> (Engine, Corpus) {
    let mut corpus = Corpus::new(seed);
    let mut engine = Engine::new(config);
    let labels: Vec<NewLabel> = (0..LABELS)
        .map(|l| NewLabel {
            id: label_id(l),
            name: None,
            description: None,
            examples: vec![corpus.text(l)],
        })
        .collect();
    if engine.apply_round(None, &labels).is_err() {
        unreachable!("synthetic labels are distinct");
    }
    for i in 0..texts {
        let label = corpus.label();
        let analysis = engine.analyzer().analyze(&corpus.text(label));
        engine.learn(&analysis, &label_id(label), i % 2 == 0);
    }
    (engine, corpus)
}

/// Texts learned online until the graph holds about `keywords` keyword nodes.
pub fn engine_with_keywords(keywords: usize, seed: u64) -> (Engine, Corpus) {
    let (mut engine, mut corpus) = engine(0, seed);
    let mut confident = true;
    while engine.graph().keyword_count() < keywords {
        let label = corpus.label();
        let analysis = engine.analyzer().analyze(&corpus.text(label));
        engine.learn(&analysis, &label_id(label), confident);
        confident = !confident;
    }
    (engine, corpus)
}
