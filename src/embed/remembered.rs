//! The labels' vectors kept across restarts. Every start would encode each label's name and
//! examples again (the engine keeps vectors as derived state, never in its snapshot): ≈ 0.1 s
//! each, ≈ 1 min for WOS's 798 names and examples at 5-shot even on both cores. The state
//! store keeps them instead, keyed by the sha256 of the text, for one model (and one way of
//! encoding, [`super::SentenceModel::fingerprint`]) at a time; a restart reads them back, then, once
//! caught up with the log, drops the vectors no label's material asked for (retired labels'
//! examples). Texts to classify are encoded as they come and never kept.
//!
//! The store is a cache: when it cannot be read or written, the text is encoded and the
//! service goes on (with a warning), since the vector is the same either way.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::engine::embedding::{EncodeError, TextEncoder};

/// Why a kept vector could not be read or written: the store's own error (`store::StoreError`
/// for the state store's), carried opaquely since the encoder only warns and encodes again.
pub type KeptVectorError = Box<dyn std::error::Error + Send + Sync>;

/// Where sentence vectors are kept across restarts: the embedding signal's vectors of label
/// names and examples, which every start would otherwise encode again
/// (docs/design/embedding-signal.md, "The embedding signal"). Keys are digests of the text; a
/// store holds the vectors of one model only. The state store implements it
/// (`store::SledVectors`).
pub trait VectorStore: Send + Sync {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<f32>>, KeptVectorError>;
    fn put(&self, key: &[u8], vector: &[f32]) -> Result<(), KeptVectorError>;
    /// Drop every vector whose key `keep` refuses; how many were dropped.
    fn retain(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<usize, KeptVectorError>;
    /// Whether what is put can be got back (false for [`NoVectorStore`]).
    fn keeps(&self) -> bool {
        true
    }
}

/// A store that keeps nothing: every start encodes again (when the state's own cannot be
/// opened).
pub struct NoVectorStore;

impl VectorStore for NoVectorStore {
    fn get(&self, _: &[u8]) -> Result<Option<Vec<f32>>, KeptVectorError> {
        Ok(None)
    }
    fn put(&self, _: &[u8], _: &[f32]) -> Result<(), KeptVectorError> {
        Ok(())
    }
    fn retain(&self, _: &dyn Fn(&[u8]) -> bool) -> Result<usize, KeptVectorError> {
        Ok(0)
    }
    fn keeps(&self) -> bool {
        false
    }
}

pub struct RememberingEncoder<E> {
    inner: E,
    store: Box<dyn VectorStore>,
    /// The length of the inner encoder's vectors: a kept vector of another length is not read.
    dimension: usize,
    /// Keys of the material asked for since this encoder was made.
    asked: Mutex<HashSet<Vec<u8>>>,
    read_back: AtomicUsize,
    encoded: AtomicUsize,
}

impl<E: TextEncoder> RememberingEncoder<E> {
    pub fn new(inner: E, store: Box<dyn VectorStore>, dimension: usize) -> Self {
        Self {
            inner,
            store,
            dimension,
            asked: Mutex::default(),
            read_back: AtomicUsize::new(0),
            encoded: AtomicUsize::new(0),
        }
    }

    /// Drop the kept vectors of material nobody asked for since this encoder was made: called
    /// once the engine has asked for every label's material (after a start's first
    /// catch-up), it leaves exactly the live labels' vectors. How many were dropped.
    pub fn forget_unasked(&self) -> Result<usize, KeptVectorError> {
        let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        self.store.retain(&|key| asked.contains(key))
    }

    /// Label material so far: (vectors read back from the store, texts encoded).
    pub fn material_counts(&self) -> (usize, usize) {
        (
            self.read_back.load(Ordering::Relaxed),
            self.encoded.load(Ordering::Relaxed),
        )
    }
}

impl<E: TextEncoder> TextEncoder for RememberingEncoder<E> {
    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        self.inner.encode(text)
    }

    fn keeps_material(&self) -> bool {
        self.store.keeps()
    }

    fn unrelated_cosine(&self) -> f64 {
        self.inner.unrelated_cosine()
    }

    fn encode_material(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        let key = Sha256::digest(text.as_bytes());
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_vec());
        match self.store.get(&key) {
            Ok(Some(vector)) if vector.len() == self.dimension => {
                self.read_back.fetch_add(1, Ordering::Relaxed);
                return Ok(vector);
            }
            Ok(Some(vector)) => tracing::warn!(
                length = vector.len(),
                expected = self.dimension,
                "a kept sentence vector of the wrong length; encoding again"
            ),
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "reading a kept sentence vector; encoding again"),
        }
        let vector = self.inner.encode_material(text)?;
        self.encoded.fetch_add(1, Ordering::Relaxed);
        if let Err(error) = self.store.put(&key, &vector) {
            tracing::warn!(%error, "keeping a sentence vector; it will be encoded again next start");
        }
        Ok(vector)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Counts what it is asked to encode.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl TextEncoder for &Counting {
        fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(vec![text.len() as f32, 1.0])
        }
    }

    #[derive(Clone, Default)]
    struct MapStore(Arc<Mutex<HashMap<Vec<u8>, Vec<f32>>>>);

    impl VectorStore for MapStore {
        fn get(&self, key: &[u8]) -> Result<Option<Vec<f32>>, KeptVectorError> {
            Ok(self.0.lock().unwrap().get(key).cloned())
        }
        fn put(&self, key: &[u8], vector: &[f32]) -> Result<(), KeptVectorError> {
            self.0.lock().unwrap().insert(key.to_vec(), vector.to_vec());
            Ok(())
        }
        fn retain(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<usize, KeptVectorError> {
            let mut map = self.0.lock().unwrap();
            let before = map.len();
            map.retain(|key, _| keep(key));
            Ok(before - map.len())
        }
    }

    struct BrokenStore;

    impl VectorStore for BrokenStore {
        fn get(&self, key: &[u8]) -> Result<Option<Vec<f32>>, KeptVectorError> {
            Err(format!("{key:?} is broken").into())
        }
        fn put(&self, key: &[u8], _: &[f32]) -> Result<(), KeptVectorError> {
            self.get(key).map(|_| ())
        }
        fn retain(&self, _: &dyn Fn(&[u8]) -> bool) -> Result<usize, KeptVectorError> {
            self.get(b"").map(|_| 0)
        }
    }

    #[test]
    fn material_is_encoded_once_across_starts_and_queries_every_time() {
        let counting = Counting::default();
        let store = MapStore::default();
        let first = RememberingEncoder::new(&counting, Box::new(store.clone()), 2);
        let example = first.encode_material("an example").unwrap();
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
        // The next start (a new encoder over the same store) reads the vector back.
        let second = RememberingEncoder::new(&counting, Box::new(store.clone()), 2);
        assert_eq!(second.encode_material("an example").unwrap(), example);
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
        assert_eq!(first.material_counts(), (0, 1));
        assert_eq!(second.material_counts(), (1, 0));
        // Queries are encoded every time and never kept.
        second.encode("a query").unwrap();
        second.encode("a query").unwrap();
        assert_eq!(counting.0.load(Ordering::SeqCst), 3);
        assert_eq!(store.0.lock().unwrap().len(), 1);
        // Only a store that keeps makes encoding material ahead worth it.
        assert!(second.keeps_material());
        let forgetful = RememberingEncoder::new(&counting, Box::new(NoVectorStore), 2);
        assert!(!forgetful.keeps_material());
    }

    #[test]
    fn what_no_label_asked_for_is_forgotten_and_a_vector_of_the_wrong_length_is_not_read() {
        let counting = Counting::default();
        let store = MapStore::default();
        let first = RememberingEncoder::new(&counting, Box::new(store.clone()), 2);
        first.encode_material("a retired label's example").unwrap();
        first.encode_material("a live example").unwrap();
        // The next start asks for the live material only.
        let second = RememberingEncoder::new(&counting, Box::new(store.clone()), 2);
        second.encode_material("a live example").unwrap();
        assert_eq!(second.forget_unasked().unwrap(), 1);
        assert_eq!(store.0.lock().unwrap().len(), 1);
        // A kept vector of another length (a corrupt entry) is encoded again and replaced.
        let key = Sha256::digest(b"a live example").to_vec();
        store
            .0
            .lock()
            .unwrap()
            .insert(key.clone(), vec![1.0, 2.0, 3.0]);
        let third = RememberingEncoder::new(&counting, Box::new(store.clone()), 2);
        assert_eq!(third.encode_material("a live example").unwrap().len(), 2);
        assert_eq!(third.material_counts(), (0, 1));
        assert_eq!(store.0.lock().unwrap()[&key].len(), 2);
    }

    #[test]
    fn a_broken_store_costs_an_encoding_not_a_failure() {
        let counting = Counting::default();
        let encoder = RememberingEncoder::new(&counting, Box::new(BrokenStore), 2);
        assert_eq!(
            encoder.encode_material("text").unwrap(),
            vec![4.0, 1.0],
            "encoded all the same"
        );
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
    }
}
