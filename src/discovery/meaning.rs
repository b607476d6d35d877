//! The pooled texts' meaning: each excerpt through the sentence encoder, at pass time. Vectors are
//! not kept in the pool or its notes: every replica holds the excerpts and encodes them itself,
//! so the changelog stays small and the vectors follow the encoder the service runs now.

use std::sync::Arc;

use super::{DiscoveryConfig, PooledText};
use crate::engine::embedding::TextEncoder;
use crate::engine::LabelMaterial;

/// How much `text`'s meaning weighs against its words in a pass: `meaning_weight_short` for a
/// short text (as the ranking calls it), `meaning_weight` for the others, within 0 and 1.
pub fn weight_of(text: &PooledText, config: &DiscoveryConfig, material: &LabelMaterial) -> f64 {
    let weight = if material.is_short(&text.terms) {
        config.meaning_weight_short
    } else {
        config.meaning_weight
    };
    weight.clamp(0.0, 1.0)
}

/// Each text's sentence vector, in order: None where its meaning weighs nothing (it is not
/// encoded) or the encoder failed on it or gave no number (it is grouped by its words alone;
/// the pass counts these, [`failed`]); empty without an encoder.
pub fn meaning_of(
    texts: &[&PooledText],
    encoder: Option<&Arc<dyn TextEncoder>>,
    config: &DiscoveryConfig,
    material: &LabelMaterial,
) -> Vec<Option<Vec<f32>>> {
    let Some(encoder) = encoder else {
        return Vec::new();
    };
    texts
        .iter()
        .map(|text| {
            (weight_of(text, config, material) > 0.0)
                .then(|| encoder.encode(&text.excerpt).ok())
                .flatten()
                // A vector with a NaN would make every similarity NaN.
                .filter(|v| v.iter().all(|x| x.is_finite()))
        })
        .collect()
}

/// Texts whose meaning would weigh but that have no vector (the encoder failed on them).
pub fn failed(
    texts: &[&PooledText],
    meaning: &[Option<Vec<f32>>],
    config: &DiscoveryConfig,
    material: &LabelMaterial,
) -> usize {
    if meaning.is_empty() {
        return 0;
    }
    texts
        .iter()
        .zip(meaning)
        .filter(|(text, vector)| vector.is_none() && weight_of(text, config, material) > 0.0)
        .count()
}
