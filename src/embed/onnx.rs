//! An ONNX model folder (`model.onnx`, e.g. all-MiniLM-L6-v2 with int8 weights) run by ONNX
//! Runtime through the `ort` crate, the runtime's library (`libonnxruntime.so`, in the same
//! folder) loaded when the model is: a build links nothing of it, and a machine without it runs
//! every other model. Pooling is the float model's: mean of the last hidden layer over the
//! text's tokens (at most [`super::MAX_TOKENS`], no padding), scaled to unit length.
//!
//! `Session::run` takes `&mut self`, so the model keeps one session per core, each on one thread
//! (intra- and inter-op), and a text takes whichever is free: texts encoded at once — a round's
//! examples, the service's concurrent texts — run side by side as with the other formats. A
//! session costs about 95 MB (the model's weights as the runtime lays them out). The sessions
//! are made one after the other here, on the loading thread: made on demand by the threads that
//! encode (tried), each left its own allocator arena behind and two cost 140 MB more than one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use thiserror::Error;
use tokenizers::Tokenizer;

use crate::engine::embedding::EncodeError;

/// The ONNX model's file in a model folder; its presence makes a folder an ONNX one.
pub const ONNX_FILE: &str = "model.onnx";

/// ONNX Runtime's library, in the model's folder.
pub const RUNTIME_FILE: &str = "libonnxruntime.so";

/// The files an ONNX model folder must hold.
pub const ONNX_FILES: [&str; 4] = ["config.json", ONNX_FILE, "tokenizer.json", RUNTIME_FILE];

/// The inputs a BERT export takes (`token_type_ids` only when the graph declares it).
const INPUT_IDS: &str = "input_ids";
const ATTENTION_MASK: &str = "attention_mask";
const TOKEN_TYPE_IDS: &str = "token_type_ids";

#[derive(Debug, Error)]
pub enum OnnxError {
    /// The runtime's library would not load (absent, another platform's, too old).
    #[error("ONNX Runtime's library {0} does not load: {1}")]
    Runtime(PathBuf, String),
    /// The runtime loaded but refused the model, or the model is not a BERT export.
    #[error("{0}")]
    Model(String),
}

/// An ONNX sentence encoder: a tokenizer and a pool of sessions over one model.
pub struct OnnxModel {
    sessions: Vec<Mutex<Session>>,
    /// Where the next text starts looking for a free session.
    next: AtomicUsize,
    tokenizer: Tokenizer,
    token_types: bool,
    dimension: usize,
    runtime: String,
}

impl OnnxModel {
    /// The model `model` (the bytes of `dir`'s [`ONNX_FILE`]) with `tokenizer` (padding off,
    /// truncation set), run by the library in `dir`, in `sessions` sessions (at least one).
    /// One text is encoded here, so a model that loads but cannot run fails now, not on the
    /// first text.
    pub fn load(
        dir: &Path,
        model: &[u8],
        tokenizer: Tokenizer,
        sessions: usize,
    ) -> Result<Self, OnnxError> {
        let library =
            std::path::absolute(dir.join(RUNTIME_FILE)).unwrap_or_else(|_| dir.join(RUNTIME_FILE));
        let environment = environment(&library)?;
        let runtime = ort::info().to_string();
        let sessions = (0..sessions.max(1))
            .map(|_| session(&environment, model).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        let declared = |name: &str| {
            let first = sessions[0].lock().unwrap_or_else(PoisonError::into_inner);
            first.inputs().iter().any(|input| input.name() == name)
        };
        if !declared(INPUT_IDS) || !declared(ATTENTION_MASK) {
            return Err(OnnxError::Model(format!(
                "{ONNX_FILE} takes no `{INPUT_IDS}` and `{ATTENTION_MASK}`: not a BERT export"
            )));
        }
        let mut model = Self {
            token_types: declared(TOKEN_TYPE_IDS),
            sessions,
            next: AtomicUsize::new(0),
            tokenizer,
            dimension: 0,
            runtime,
        };
        model.dimension = model
            .encode("a")
            .map_err(|e| OnnxError::Model(format!("{ONNX_FILE} cannot encode a text: {}", e.0)))?
            .len();
        Ok(model)
    }

    /// The length of every vector it gives.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// ONNX Runtime's build (version and commit), part of the fingerprint: another build's
    /// kernels may round differently.
    pub fn runtime(&self) -> &str {
        &self.runtime
    }

    /// How many sessions it runs texts on.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The text's unit vector.
    pub fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| EncodeError(e.to_string()))?;
        let tokens = encoding.get_ids().len();
        let ids: Vec<i64> = encoding.get_ids().iter().map(|&id| i64::from(id)).collect();
        let tensor = |values: Vec<i64>| {
            Tensor::from_array(([1, tokens], values))
                .map(SessionInputValue::from)
                .map_err(|e| EncodeError(e.to_string()))
        };
        let mut inputs = vec![
            (INPUT_IDS, tensor(ids)?),
            (ATTENTION_MASK, tensor(vec![1; tokens])?),
        ];
        if self.token_types {
            inputs.push((TOKEN_TYPE_IDS, tensor(vec![0; tokens])?));
        }
        let mut session = self.free_session();
        let outputs = session
            .run(inputs)
            .map_err(|e| EncodeError(e.to_string()))?;
        let (shape, hidden) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| EncodeError(e.to_string()))?;
        let width = match **shape {
            [1, n, width] if n as usize == tokens && width > 0 => width as usize,
            _ => {
                return Err(EncodeError(format!(
                    "the model's output has shape {shape:?}, not [1, {tokens}, width]"
                )))
            }
        };
        mean_unit(hidden, width)
    }

    /// A session no other text is using, else the next in turn (waited for).
    fn free_session(&self) -> MutexGuard<'_, Session> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let count = self.sessions.len();
        for offset in 0..count {
            match self.sessions[(start + offset) % count].try_lock() {
                Ok(session) => return session,
                // A session whose text panicked is still whole: ONNX Runtime keeps no state
                // between runs.
                Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => {}
            }
        }
        self.sessions[start % count]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The process's ONNX Runtime environment, made with `dir`'s library the first time: a folder
/// whose library does not load says so before anything else is read.
pub(super) fn runtime_of(dir: &Path) -> Result<Environment, OnnxError> {
    let library =
        std::path::absolute(dir.join(RUNTIME_FILE)).unwrap_or_else(|_| dir.join(RUNTIME_FILE));
    environment(&library)
}

/// The process's ONNX Runtime environment, made with the library at `library` the first time
/// (ONNX Runtime allows one environment a process, and `ort` loads one library: a later
/// folder's library is not read).
fn environment(library: &Path) -> Result<Environment, OnnxError> {
    static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);
    let mut kept = ENVIRONMENT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(environment) = kept.as_ref() {
        return Ok(environment.clone());
    }
    let refused = |reason: String| OnnxError::Runtime(library.to_path_buf(), reason);
    let built = std::panic::catch_unwind(|| {
        ort::init_from(library)
            .map_err(|e| e.to_string())?
            .with_name("gorag")
            .with_telemetry(false)
            .build()
            .map_err(|e| e.to_string())
    })
    .map_err(|_| refused("it panicked".into()))?
    .map_err(refused)?;
    *kept = Some(built.clone());
    Ok(built)
}

/// One session on one thread.
fn session(environment: &Environment, model: &[u8]) -> Result<Session, OnnxError> {
    let refused = |e: &dyn std::fmt::Display| {
        OnnxError::Model(format!("ONNX Runtime refuses {ONNX_FILE}: {e}"))
    };
    // Each step's error carries the builder back (large): read at once, one step at a time.
    let builder = Session::builder(environment).map_err(|e| refused(&e))?;
    let builder = builder
        .with_optimization_level(GraphOptimizationLevel::All)
        .map_err(|e| refused(&e))?;
    let builder = builder.with_intra_threads(1).map_err(|e| refused(&e))?;
    let mut builder = builder.with_inter_threads(1).map_err(|e| refused(&e))?;
    builder.commit_from_memory(model).map_err(|e| refused(&e))
}

/// The mean of the rows of `hidden` (rows of `width`), scaled to unit length.
fn mean_unit(hidden: &[f32], width: usize) -> Result<Vec<f32>, EncodeError> {
    let mut sum = vec![0f32; width];
    for row in hidden.chunks_exact(width) {
        for (total, x) in sum.iter_mut().zip(row) {
            *total += x;
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return Err(EncodeError("the model gave a zero vector".into()));
    }
    Ok(sum.into_iter().map(|x| x / norm).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_of_the_rows_is_scaled_to_unit_length() {
        let hidden = [1.0, 0.0, 3.0, 4.0];
        let v = mean_unit(&hidden, 2).unwrap_or_default();
        // mean (2, 2) → (1/√2, 1/√2)
        assert!((v[0] - 0.5f32.sqrt()).abs() < 1e-6 && (v[1] - v[0]).abs() < 1e-6);
        assert!(
            mean_unit(&[0.0, 0.0], 2).is_err(),
            "a zero vector is an error"
        );
        assert!(mean_unit(&[f32::NAN, 1.0], 2).is_err());
    }
}
