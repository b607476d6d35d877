//! The pooled texts' meaning: each excerpt through the sentence encoder, at pass time. Vectors are
//! not kept in the pool or its notes: every replica holds the excerpts and encodes them itself,
//! so the changelog stays small and the vectors follow the encoder the service runs now.

use std::sync::Arc;

use super::{DiscoveryConfig, PooledText};
use crate::engine::embedding::TextEncoder;
use crate::engine::terms::TermCounts;
use crate::engine::{Engine, LabelMaterial};

/// How much `text`'s meaning weighs against its words in a pass: `meaning_weight_short` for a
/// short text (as the ranking calls it), `meaning_weight` for the others, within 0 and 1.
pub fn weight_of(text: &PooledText, config: &DiscoveryConfig, material: &LabelMaterial) -> f64 {
    weight(material.is_short(&text.terms), config)
}

/// Whether the meaning of a text of `terms` weighs in a pass (as the engine's ranking calls a
/// text short): only such a text is held for an open proposal ([`super::Holding`]).
pub fn weighs(terms: &TermCounts, engine: &Engine, config: &DiscoveryConfig) -> bool {
    let short = engine.config().ranking.is_short(terms.counts.len());
    weight(short, config) > 0.0
}

/// How much a text's meaning weighs: `meaning_weight_short` for a `short` one, else
/// `meaning_weight`, within 0 and 1. A text is held for an open proposal only where its meaning
/// weighs ([`super::Holding`]).
pub fn weight(short: bool, config: &DiscoveryConfig) -> f64 {
    let weight = if short {
        config.meaning_weight_short
    } else {
        config.meaning_weight
    };
    weight.clamp(0.0, 1.0)
}

/// The pooled texts' sentence vectors, and the point they are centred on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meaning {
    /// Each text's vector, in order: None where its meaning weighs nothing (it is not encoded)
    /// or the encoder failed on it or gave no number (it is grouped by its words alone; the
    /// pass counts these, [`failed`]); empty without an encoder.
    pub vectors: Vec<Option<Vec<f32>>>,
    /// The mean of the active labels' examples' vectors: subtracted from every text's, so that
    /// two texts read alike by what sets them apart from the known classes' material, not by
    /// what every text of the stream shares. Centred on the pool's own mean instead, a pool
    /// that is mostly one theme loses that theme (the service test of a theme of short queries
    /// split it into two proposals). None without examples, or when none encoded: the pool's
    /// own mean is used.
    pub centre: Option<Vec<f64>>,
    /// Each active label's examples' mean vector (uncentred), with its label position, in label
    /// order: what a text held for an open proposal must read closer to the proposal than to,
    /// and what a proposal is said to be closest to (`hold`).
    pub labels: Vec<(usize, Vec<f64>)>,
}

/// The texts' sentence vectors, and their centre from the active labels' examples in
/// `material` (see [`Meaning`]); empty without an encoder.
pub fn meaning_of(
    texts: &[&PooledText],
    encoder: Option<&Arc<dyn TextEncoder>>,
    config: &DiscoveryConfig,
    material: &LabelMaterial,
) -> Meaning {
    encoded(texts, encoder, material, |text| {
        weight_of(text, config, material) > 0.0
    })
}

/// Every text's sentence vector, whatever its meaning weighs in a pass, with the same centre
/// and the labels' means: what holding texts for open proposals compares by
/// ([`super::Holding`]), for long texts as for short.
pub fn meaning_for_holding(
    texts: &[&PooledText],
    encoder: Option<&Arc<dyn TextEncoder>>,
    material: &LabelMaterial,
) -> Meaning {
    encoded(texts, encoder, material, |_| true)
}

/// The vectors of the texts `wanted` picks (None for the others), the centre and the labels'
/// means.
fn encoded(
    texts: &[&PooledText],
    encoder: Option<&Arc<dyn TextEncoder>>,
    material: &LabelMaterial,
    wanted: impl Fn(&PooledText) -> bool,
) -> Meaning {
    let Some(encoder) = encoder else {
        return Meaning::default();
    };
    let encode = |text: &str| {
        encoder
            .encode(text)
            .ok()
            // A vector with a NaN would make every similarity NaN.
            .filter(|v| v.iter().all(|x| x.is_finite()))
    };
    let vectors: Vec<Option<Vec<f32>>> = texts
        .iter()
        .map(|text| wanted(text).then(|| encode(&text.excerpt)).flatten())
        .collect();
    if vectors.iter().all(Option::is_none) {
        return Meaning {
            vectors,
            ..Meaning::default()
        };
    }
    let mut by_label: std::collections::BTreeMap<usize, Vec<Vec<f32>>> = Default::default();
    for (label, text) in material.labelled_examples() {
        if let Some(vector) = encode(text) {
            by_label.entry(label).or_default().push(vector);
        }
    }
    let examples: Vec<Vec<f32>> = by_label.values().flatten().cloned().collect();
    Meaning {
        vectors,
        centre: mean(&examples),
        labels: by_label
            .iter()
            .filter_map(|(label, v)| Some((*label, mean(v)?)))
            .collect(),
    }
}

/// The mean of vectors of one length (None when there are none, or lengths differ).
fn mean(vectors: &[Vec<f32>]) -> Option<Vec<f64>> {
    let dims = vectors.first()?.len();
    if vectors.iter().any(|v| v.len() != dims) {
        return None;
    }
    let mut mean = vec![0.0f64; dims];
    for v in vectors {
        for (m, x) in mean.iter_mut().zip(v) {
            *m += f64::from(*x) / vectors.len() as f64;
        }
    }
    Some(mean)
}

/// Texts whose meaning would weigh but that have no vector (the encoder failed on them).
pub fn failed(
    texts: &[&PooledText],
    meaning: &Meaning,
    config: &DiscoveryConfig,
    material: &LabelMaterial,
) -> usize {
    if meaning.vectors.is_empty() {
        return 0;
    }
    texts
        .iter()
        .zip(&meaning.vectors)
        .filter(|(text, vector)| vector.is_none() && weight_of(text, config, material) > 0.0)
        .count()
}
