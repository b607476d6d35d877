//! The pooled texts' meaning: each excerpt through the sentence encoder, at pass time. Vectors are
//! not kept in the pool or its notes: every replica holds the excerpts and encodes them itself,
//! so the changelog stays small and the vectors follow the encoder the service runs now.

use std::sync::Arc;

use super::PooledText;
use crate::engine::embedding::TextEncoder;

/// Each text's sentence vector, in order: None where the encoder failed on it (that text is
/// grouped by its words alone); empty without an encoder.
pub fn meaning_of(
    texts: &[&PooledText],
    encoder: Option<&Arc<dyn TextEncoder>>,
) -> Vec<Option<Vec<f32>>> {
    let Some(encoder) = encoder else {
        return Vec::new();
    };
    texts
        .iter()
        .map(|text| encoder.encode(&text.excerpt).ok())
        .collect()
}
