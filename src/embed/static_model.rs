//! A static sentence encoder (model2vec's format, e.g. MinishLab's potion-base-8M): one learned
//! vector per token, a text's vector is the mean of its tokens' vectors, scaled to unit length.
//! No network of layers runs, so a 200-word text costs well under a millisecond.
//!
//! The folder holds `config.json` (`"model_type": "model2vec"`), `model.safetensors` (one F32
//! tensor `embeddings`, a row per token id) and `tokenizer.json`. Encoding follows model2vec's
//! own: tokens without special tokens, the unknown token left out, at most [`MAX_TOKENS`].
//! Written here, on the `tokenizers` and `safetensors` crates gorag already builds, rather than
//! with the `model2vec-rs` crate: that one pins older releases of both (two copies of each in
//! the build) and a newer Rust than gorag's minimum, for a mean of table rows.

use safetensors::{Dtype, SafeTensors};
use thiserror::Error;
use tokenizers::Tokenizer;

use crate::engine::embedding::EncodeError;

/// Tokens read of a text (model2vec's default).
pub const MAX_TOKENS: usize = 512;

/// The tensor of token vectors in `model.safetensors`.
const EMBEDDINGS: &str = "embeddings";

/// Why a static model's files cannot be read.
#[derive(Debug, Error)]
pub enum StaticModelError {
    #[error("model.safetensors: {0}")]
    Weights(String),
    #[error("tokenizer.json: {0}")]
    Tokenizer(String),
    #[error("tokenizer.json has {tokens} tokens but model.safetensors only {rows} vectors")]
    VocabularyMismatch { tokens: usize, rows: usize },
}

pub struct StaticModel {
    tokenizer: Tokenizer,
    /// Row-major: token id × dimension.
    vectors: Vec<f32>,
    dimension: usize,
    unknown: Option<u32>,
}

impl StaticModel {
    /// From the bytes of `model.safetensors` and `tokenizer.json`.
    pub fn from_bytes(weights: &[u8], tokenizer: &[u8]) -> Result<Self, StaticModelError> {
        let weights_error = |e: &dyn std::fmt::Display| StaticModelError::Weights(e.to_string());
        let tensors = SafeTensors::deserialize(weights).map_err(|e| weights_error(&e))?;
        let tensor = tensors.tensor(EMBEDDINGS).map_err(|e| weights_error(&e))?;
        if tensor.dtype() != Dtype::F32 {
            return Err(weights_error(&format!(
                "`{EMBEDDINGS}` is {:?}; only F32 is read",
                tensor.dtype()
            )));
        }
        let [rows, dimension] = tensor.shape() else {
            return Err(weights_error(&format!(
                "`{EMBEDDINGS}` has shape {:?}, not tokens × dimension",
                tensor.shape()
            )));
        };
        let (rows, dimension) = (*rows, *dimension);
        let vectors: Vec<f32> = tensor
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if dimension == 0 || vectors.len() != rows * dimension {
            return Err(weights_error(&format!("`{EMBEDDINGS}` is truncated")));
        }
        let tokenizer_error =
            |e: &dyn std::fmt::Display| StaticModelError::Tokenizer(e.to_string());
        // The unknown token is the tokenizer model's own (`model.unk_token`), as model2vec reads it.
        let unknown_token = serde_json::from_slice::<serde_json::Value>(tokenizer)
            .map_err(|e| tokenizer_error(&e))?["model"]["unk_token"]
            .as_str()
            .map(str::to_string);
        let mut tokenizer = Tokenizer::from_bytes(tokenizer).map_err(|e| tokenizer_error(&e))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| tokenizer_error(&e))?;
        let tokens = tokenizer.get_vocab_size(true);
        if tokens > rows {
            return Err(StaticModelError::VocabularyMismatch { tokens, rows });
        }
        let unknown = unknown_token.and_then(|token| tokenizer.token_to_id(&token));
        Ok(Self {
            tokenizer,
            vectors,
            dimension,
            unknown,
        })
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    pub fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        let encoding = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| EncodeError(e.to_string()))?;
        let mut sum = vec![0.0f32; self.dimension];
        let mut tokens = 0usize;
        let ids = encoding
            .get_ids()
            .iter()
            .filter(|&&id| Some(id) != self.unknown);
        for &id in ids.take(MAX_TOKENS) {
            let start = id as usize * self.dimension;
            let Some(row) = self.vectors.get(start..start + self.dimension) else {
                continue;
            };
            for (total, value) in sum.iter_mut().zip(row) {
                *total += value;
            }
            tokens += 1;
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        if tokens == 0 || norm == 0.0 || !norm.is_finite() {
            return Err(EncodeError("no token of the text has a vector".into()));
        }
        // The mean's direction is the sum's: scaling to unit length is all that is left.
        Ok(sum.into_iter().map(|x| x / norm).collect())
    }

    /// Whether a model folder's `config.json` names this format.
    pub fn is_named_by(config: &serde_json::Value) -> bool {
        config["model_type"] == "model2vec"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A four-token vocabulary and its vectors, written as the files would hold them.
    fn model() -> StaticModel {
        let vectors: [[f32; 2]; 4] = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]];
        let bytes: Vec<u8> = vectors
            .iter()
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let view = safetensors::tensor::TensorView::new(Dtype::F32, vec![4, 2], &bytes).unwrap();
        let weights = safetensors::serialize([(EMBEDDINGS, view)], None).unwrap();
        let tokenizer = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
            "decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0,"east":1,"north":2,
            "northeast":3},"unk_token":"[UNK]"}}"#;
        StaticModel::from_bytes(&weights, tokenizer.as_bytes()).unwrap()
    }

    #[test]
    fn a_text_is_the_unit_mean_of_its_known_tokens() {
        let model = model();
        let v = model.encode("east north unheard-of").unwrap();
        let half = std::f32::consts::FRAC_1_SQRT_2;
        assert!(
            (v[0] - half).abs() < 1e-6 && (v[1] - half).abs() < 1e-6,
            "{v:?}"
        );
        assert_eq!(
            model.encode("northeast").unwrap(),
            model.encode("east north").unwrap()
        );
    }

    #[test]
    fn a_text_without_a_known_token_is_an_error_not_a_zero_vector() {
        assert!(model().encode("nothing here").is_err());
        assert!(model().encode("").is_err());
    }

    #[test]
    fn bad_weights_are_refused_with_a_reason() {
        let error = StaticModel::from_bytes(b"not a safetensors file", b"{}").err();
        assert!(
            matches!(error, Some(StaticModelError::Weights(_))),
            "{error:?}"
        );
    }
}
