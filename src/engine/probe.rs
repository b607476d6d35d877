//! The probe: a multinomial logistic regression over a text's sentence vector and its words
//! (TF-IDF over lower-cased words and word pairs, the [`VOCABULARY_CAP`] most frequent,
//! L2-normalised), fitted on the active labels' own
//! material — each labelled example, and each label's name as one more example. It is what a
//! practitioner fits in ten lines on a stock encoder, and a peer `gorag eval` runs beside
//! gorag's own strategies (docs/guide/eval.md, "The peers").
//!
//! Written here rather than taken from a crate: the features are half dense, half sparse, the
//! fit must give the same weights bit for bit on every replica (a fixed order of every sum, no
//! threads), and the labels can number thousands, which rules out a dense design matrix.
//! The objective is scikit-learn's (`C = 1`, the bias unpenalised), minimised by L-BFGS.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::index::DocId;
use super::terms::TermCounts;

mod lbfgs;

use lbfgs::{lbfgs, Problem};

/// Which engines fit a probe: those whose strategy reads one (`probe`, and the ranked
/// strategies with a first hop when the probe has a weight or one is fitted).
pub(super) fn reads_probe(config: &super::EngineConfig) -> bool {
    config.strategy == super::Strategy::Probe
        || (config.ranking.probe_weight.may_weigh()
            && config.strategy.evidence().is_some_and(|e| e.first_hop))
}

/// How much the probe's belief weighs in `ranked` and `hybrid`: fitted to each stream's own
/// examples (the default, [`super::probe_weight`]), or a number set by hand (0: no probe).
/// Written `"fitted"` or as a number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ProbeWeight {
    Fixed(f64),
    Fitted(Fitted),
}

/// The word `fitted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fitted {
    Fitted,
}

/// Read as a number or the word, with a message that says which (serde's untagged enums only
/// say that nothing matched).
impl<'de> Deserialize<'de> for ProbeWeight {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ProbeWeight;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"fitted\" or a number ≥ 0")
            }

            fn visit_f64<E: serde::de::Error>(self, weight: f64) -> Result<ProbeWeight, E> {
                Ok(ProbeWeight::Fixed(weight))
            }

            fn visit_i64<E: serde::de::Error>(self, weight: i64) -> Result<ProbeWeight, E> {
                Ok(ProbeWeight::Fixed(weight as f64))
            }

            fn visit_u64<E: serde::de::Error>(self, weight: u64) -> Result<ProbeWeight, E> {
                Ok(ProbeWeight::Fixed(weight as f64))
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<ProbeWeight, E> {
                match text {
                    "fitted" => Ok(ProbeWeight::FITTED),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl ProbeWeight {
    pub const FITTED: Self = Self::Fitted(Fitted::Fitted);

    /// Whether a probe may be read (fitted, or a weight above 0).
    pub fn may_weigh(self) -> bool {
        match self {
            Self::Fixed(weight) => weight > 0.0,
            Self::Fitted(_) => true,
        }
    }

    /// The weight set by hand, if it is.
    pub fn fixed(self) -> Option<f64> {
        match self {
            Self::Fixed(weight) => Some(weight),
            Self::Fitted(_) => None,
        }
    }
}

impl std::fmt::Display for ProbeWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Fixed(weight) => write!(f, "{weight}"),
            Self::Fitted(_) => f.write_str("fitted"),
        }
    }
}

impl std::str::FromStr for ProbeWeight {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "fitted" {
            return Ok(Self::FITTED);
        }
        match text.parse::<f64>() {
            Ok(weight) if weight.is_finite() && weight >= 0.0 => Ok(Self::Fixed(weight)),
            _ => Err(format!("`{text}`: `fitted` or a number ≥ 0")),
        }
    }
}

/// Labels (every one ever registered) past which the ranked strategies fit no probe: a fit's time grows with the
/// labels times the material, and its memory with the labels times the features
/// (docs/design/fitted-probe.md, "Cost").
pub const MAX_LABELS: usize = 500;

/// A fit's work at most, in multiply-adds per pass over its material (classes × Σ over the
/// samples of the vector's length plus the sample's distinct words: what one evaluation of the
/// objective costs; a fit makes up to about [`MAX_ITERATIONS`] of them, and a round five fits).
/// Past it no ranked strategy reads a probe: a round of 500 labels with the encoder on took
/// 22.6 s, nearly all of it fitting (docs/design/fitted-probe.md, "Cost"). The streams the
/// probe helped stay under it (HWU64 at five shots reaches about 5 million at its last round).
pub const MAX_FIT_WORK: usize = 8_000_000;

/// Word features kept at most: the terms found in the most samples. Long texts bring tens of
/// thousands of word pairs, most seen once; on the WOS tuning stream keeping 4,096 or 10,000
/// raised the probe's accuracy a little and cut its fitting time by 2.5 to 4 times and its
/// memory by 4.5 to 7 (docs/design/fitted-probe.md, "Cost").
pub const VOCABULARY_CAP: usize = 8_192;

/// Weights a fit holds at most (classes × features): fewer words are kept when there are many
/// classes, so a fit's memory (L-BFGS keeps 2 × [`lbfgs::MEMORY`] + 4 such vectors) stays under
/// about 200 MB.
pub const MAX_WEIGHTS: usize = 1_000_000;

/// One training text: its class (0..classes), its sentence vector (possibly absent) and its
/// words.
#[derive(Debug, Clone)]
pub struct Sample<'a> {
    pub class: usize,
    pub vector: Option<&'a [f32]>,
    pub terms: &'a TermCounts,
}

/// The words' side of the features: a vocabulary of the training texts' unigrams and bigrams
/// with their smoothed idf (`ln((1+n)/(1+df)) + 1`, scikit-learn's).
#[derive(Debug, Clone, Default)]
struct Vocabulary {
    ids: HashMap<String, u32>,
    idf: Vec<f64>,
}

/// A text's words as the probe reads them: lower-cased runs of two or more letters or digits,
/// and each pair of neighbours, counted — nothing stemmed and no stop word dropped ("what",
/// "how" and "set" tell one request from another).
pub fn word_counts(text: &str) -> TermCounts {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .collect();
    let mut counts: HashMap<String, u32> = HashMap::new();
    for word in &words {
        *counts.entry((*word).to_string()).or_default() += 1;
    }
    for pair in words.windows(2) {
        *counts
            .entry(format!("{} {}", pair[0], pair[1]))
            .or_default() += 1;
    }
    let mut counts: Vec<(String, u32)> = counts.into_iter().collect();
    counts.sort_unstable();
    TermCounts { counts }
}

/// A term of at most two words.
fn is_feature_term(term: &str) -> bool {
    term.bytes().filter(|&b| b == b' ').count() <= 1
}

/// The `cap` terms found in the most samples (ties: the first found), numbered in the order
/// they were found; all of them when there are no more.
pub(super) fn most_frequent(
    ids: HashMap<String, u32>,
    df: Vec<u32>,
    cap: usize,
) -> (HashMap<String, u32>, Vec<u32>) {
    if df.len() <= cap {
        return (ids, df);
    }
    let mut order: Vec<u32> = (0..df.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| df[b as usize].cmp(&df[a as usize]).then(a.cmp(&b)));
    let mut kept = vec![false; df.len()];
    for &id in &order[..cap] {
        kept[id as usize] = true;
    }
    let mut renumbered = vec![u32::MAX; df.len()];
    let mut kept_df = Vec::with_capacity(cap);
    for (id, &d) in df.iter().enumerate() {
        if kept[id] {
            renumbered[id] = kept_df.len() as u32;
            kept_df.push(d);
        }
    }
    let ids = ids
        .into_iter()
        .filter_map(|(term, id)| {
            let new = renumbered[id as usize];
            (new != u32::MAX).then_some((term, new))
        })
        .collect();
    (ids, kept_df)
}

impl Vocabulary {
    /// The samples' terms, the `cap` most frequent kept.
    fn of(samples: &[Sample<'_>], cap: usize) -> Self {
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut df: Vec<u32> = Vec::new();
        for sample in samples {
            for (term, _) in &sample.terms.counts {
                if !is_feature_term(term) {
                    continue;
                }
                let next = ids.len() as u32;
                let id = *ids.entry(term.clone()).or_insert(next);
                if id as usize == df.len() {
                    df.push(0);
                }
                df[id as usize] += 1;
            }
        }
        let (ids, df) = most_frequent(ids, df, cap);
        let n = samples.len() as f64;
        let idf = df
            .iter()
            .map(|&d| ((1.0 + n) / (1.0 + f64::from(d))).ln() + 1.0)
            .collect();
        Self { ids, idf }
    }

    /// A text's word features: known terms only, TF-IDF, unit length, by term id.
    fn features(&self, terms: &TermCounts) -> Vec<(u32, f64)> {
        let mut features: Vec<(u32, f64)> = terms
            .counts
            .iter()
            .filter(|(term, _)| is_feature_term(term))
            .filter_map(|(term, count)| {
                let id = *self.ids.get(term)?;
                Some((id, f64::from(*count) * self.idf[id as usize]))
            })
            .collect();
        features.sort_unstable_by_key(|&(id, _)| id);
        let norm = features.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
        if norm > 0.0 {
            for (_, w) in &mut features {
                *w /= norm;
            }
        }
        features
    }

    fn len(&self) -> usize {
        self.idf.len()
    }
}

/// Probes fitted without one fold of the examples each, and which fold each example is in:
/// an example's held-out scores read the probe that did not learn from it.
#[derive(Debug, Default)]
pub struct CrossFit {
    folds: Vec<Option<Probe>>,
    fold_of: HashMap<DocId, usize>,
}

impl CrossFit {
    /// Each fold's probe (None: nothing to fit), and each example's fold.
    pub fn new(folds: Vec<Option<Probe>>, fold_of: HashMap<DocId, usize>) -> Self {
        Self { folds, fold_of }
    }

    /// The probe fitted without `doc`'s fold (None: `doc` is no example of the fit, or its
    /// fold left nothing to fit): never one that learned `doc`.
    pub fn probe_without(&self, doc: DocId) -> Option<&Probe> {
        let fold = *self.fold_of.get(&doc)?;
        self.folds.get(fold)?.as_ref()
    }
}

/// A text as the model reads it.
struct Features<'a> {
    dense: Option<&'a [f32]>,
    sparse: Vec<(u32, f64)>,
}

/// The fitted model: per class, weights over [vector, words] and a bias.
#[derive(Debug, Clone)]
pub struct Probe {
    classes: usize,
    /// Length of the sentence vectors (0: fitted on words alone).
    dim: usize,
    vocabulary: Vocabulary,
    /// `classes × (dim + words + 1)`, row-major, the bias last in each row.
    weights: Vec<f64>,
}

impl Probe {
    /// Fit on `samples` of `classes` classes; `dim` is the sentence vectors' length (vectors of
    /// another length are read as absent). None without a sample or a class.
    pub fn fit(samples: &[Sample<'_>], classes: usize, dim: usize) -> Option<Self> {
        if samples.is_empty() || classes == 0 {
            return None;
        }
        // Within the weights' budget, the words give way to the vector.
        let words = (MAX_WEIGHTS / classes).saturating_sub(dim + 1);
        let vocabulary = Vocabulary::of(samples, words.min(VOCABULARY_CAP));
        let features: Vec<Features<'_>> = samples
            .iter()
            .map(|s| Features {
                dense: s.vector.filter(|v| v.len() == dim),
                sparse: vocabulary.features(s.terms),
            })
            .collect();
        let targets: Vec<usize> = samples.iter().map(|s| s.class).collect();
        let row = dim + vocabulary.len() + 1;
        let problem = Problem {
            features: &features,
            targets: &targets,
            classes,
            dim,
            row,
        };
        let weights = lbfgs(&problem, vec![0.0; classes * row]);
        Some(Self {
            classes,
            dim,
            vocabulary,
            weights,
        })
    }

    /// Each class's probability over the best class's (1 for the best; 0 for a class not
    /// `allowed`): with few examples a fit's probabilities crowd near uniform, yet their order
    /// is what it learned.
    pub fn relative_belief(
        &self,
        vector: Option<&[f32]>,
        terms: &TermCounts,
        allowed: impl Fn(usize) -> bool,
    ) -> Vec<f64> {
        let mut belief = self.probabilities(vector, terms, allowed);
        to_relative(&mut belief);
        belief
    }

    /// Each class's probability for a text (its vector, when it has one of the fitted length,
    /// and its terms), over the classes `allowed` says are open (the others read 0).
    pub fn probabilities(
        &self,
        vector: Option<&[f32]>,
        terms: &TermCounts,
        allowed: impl Fn(usize) -> bool,
    ) -> Vec<f64> {
        let features = Features {
            dense: vector.filter(|v| v.len() == self.dim),
            sparse: self.vocabulary.features(terms),
        };
        let row = self.dim + self.vocabulary.len() + 1;
        let mut logits: Vec<f64> = (0..self.classes)
            .map(|class| {
                logit(
                    &self.weights[class * row..(class + 1) * row],
                    &features,
                    self.dim,
                )
            })
            .collect();
        for (class, z) in logits.iter_mut().enumerate() {
            if !allowed(class) {
                *z = f64::NEG_INFINITY;
            }
        }
        softmax(&mut logits);
        logits
    }
}

/// One class's logit for a text: its weights' dot product with the features, plus the bias.
fn logit(weights: &[f64], features: &Features<'_>, dim: usize) -> f64 {
    let mut z = weights[weights.len() - 1];
    if let Some(dense) = features.dense {
        z += weights[..dim]
            .iter()
            .zip(dense)
            .map(|(w, &x)| w * f64::from(x))
            .sum::<f64>();
    }
    for &(id, x) in &features.sparse {
        z += weights[dim + id as usize] * x;
    }
    z
}

/// Divides probabilities by the highest (the best reads 1) and returns that highest: how
/// firmly the fit names its best class, which discovery reads as doubt when it is low. None
/// when no class was open.
pub(super) fn to_relative(belief: &mut [f64]) -> Option<f64> {
    let top = belief.iter().copied().fold(0.0, f64::max);
    if top > 0.0 {
        belief.iter_mut().for_each(|p| *p /= top);
    }
    (top > 0.0).then_some(top)
}

/// `z` replaced by its softmax, in place (entries of −∞ read 0; all −∞: all 0).
fn softmax(z: &mut [f64]) {
    let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        z.iter_mut().for_each(|x| *x = 0.0);
        return;
    }
    let mut sum = 0.0;
    for x in z.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    for x in z.iter_mut() {
        *x /= sum;
    }
}

#[cfg(test)]
mod tests;
