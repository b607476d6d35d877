//! The sled implementation of [`StateStore`]: one tree, keys by prefix.
//!
//! - `format` → u32 (big-endian): the store format ([`STORE_FORMAT`]; a format 2 store becomes 3
//!   in the batch that writes its first snapshot of this build)
//! - `snapshot` → [`Snapshot::encode`] (format 2: the bare layout, read by [`Snapshot::decode`])
//! - `log/<seq u64 BE>` → [`encode_logged`]([`Update`])
//! - `offset/<topic>\0<partition i32 BE>` → i64 BE, the next offset to read
//!
//! and, with the embedding signal, a tree of its own ([`SledVectors`]): `model` → the model's
//! fingerprint, `<sha256 of a text>` → its vector (f32 little-endian).
//!
//! sled is beta software and allows one process per database; see docs/guide/serve.md, "State".

use std::path::Path;

use sled::{Batch, Db, IVec};

use super::{Offsets, Saved, StateStore, StoreError};
use crate::embed::{KeptVectorError, VectorStore};
use crate::position::Position;
use crate::state::codec::{
    decode_logged, encode_logged, STORE_FORMAT, STORE_FORMAT_OLDEST_SUPPORTED,
};
use crate::state::Snapshot;
use crate::state::Update;

const FORMAT_KEY: &[u8] = b"format";
const SNAPSHOT_KEY: &[u8] = b"snapshot";
const LOG_PREFIX: &[u8] = b"log/";
const OFFSET_PREFIX: &[u8] = b"offset/";
const INSTANCE_KEY: &[u8] = b"instance";
const VECTORS_TREE: &[u8] = b"embedding_vectors";
const VECTORS_MODEL_KEY: &[u8] = b"model";

pub struct SledStore {
    db: Db,
    /// The store's format, as its `format` key says.
    format: u32,
    next_seq: u64,
    log_len: u64,
}

fn log_key(seq: u64) -> Vec<u8> {
    let mut key = LOG_PREFIX.to_vec();
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

fn offset_key(topic: &str, partition: i32) -> Vec<u8> {
    let mut key = OFFSET_PREFIX.to_vec();
    key.extend_from_slice(topic.as_bytes());
    key.push(0);
    key.extend_from_slice(&partition.to_be_bytes());
    key
}

fn corrupt(key: &[u8], detail: impl ToString) -> StoreError {
    StoreError::Corrupt {
        key: String::from_utf8_lossy(key).into_owned(),
        detail: detail.to_string(),
    }
}

fn be_bytes<const N: usize>(key: &[u8], value: &[u8]) -> Result<[u8; N], StoreError> {
    value
        .try_into()
        .map_err(|_| corrupt(key, format!("expected {N} bytes, found {}", value.len())))
}

/// sled's page cache when the caller does not say (sled's own default is 1 GiB).
pub const DEFAULT_CACHE_BYTES: u64 = 64 * 1024 * 1024;

impl SledStore {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with_cache(path, DEFAULT_CACHE_BYTES)
    }

    /// Open with a page cache of `cache_bytes`.
    pub fn open_with_cache(path: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(cache_bytes)
            .open()
            .map_err(|source| {
            let locked = matches!(&source, sled::Error::Io(e) if e.kind() == std::io::ErrorKind::WouldBlock)
                || source.to_string().contains("lock");
            if locked {
                StoreError::Locked {
                    path: path.display().to_string(),
                    source,
                }
            } else {
                StoreError::Sled(source)
            }
        })?;
        let format = match db.get(FORMAT_KEY)? {
            None => {
                db.insert(FORMAT_KEY, &STORE_FORMAT.to_be_bytes())?;
                STORE_FORMAT
            }
            Some(value) => {
                let found = u32::from_be_bytes(be_bytes(FORMAT_KEY, &value)?);
                if !(STORE_FORMAT_OLDEST_SUPPORTED..=STORE_FORMAT).contains(&found) {
                    return Err(StoreError::Format {
                        found,
                        oldest: STORE_FORMAT_OLDEST_SUPPORTED,
                        newest: STORE_FORMAT,
                    });
                }
                found
            }
        };
        let mut next_seq = 0;
        let mut log_len = 0;
        for entry in db.scan_prefix(LOG_PREFIX).keys() {
            let key = entry?;
            let seq = u64::from_be_bytes(be_bytes(&key, &key[LOG_PREFIX.len()..])?);
            next_seq = seq + 1;
            log_len += 1;
        }
        Ok(Self {
            db,
            format,
            next_seq,
            log_len,
        })
    }

    /// A flush callable from another thread (the consumer's rebalance callback).
    pub fn flush_handle(&self) -> std::sync::Arc<dyn Fn() -> Result<(), StoreError> + Send + Sync> {
        let db = self.db.clone();
        std::sync::Arc::new(move || db.flush().map(|_| ()).map_err(StoreError::from))
    }

    /// What this (classify) state did with each text id.
    pub fn text_ledger(&self) -> Result<super::TextLedger, StoreError> {
        super::TextLedger::in_tree(&self.db)
    }

    /// The vectors kept for the model `fingerprint`; those of any other model are dropped (a
    /// new model is a new cache, and the tree never holds two).
    pub fn vectors(&self, fingerprint: &str) -> Result<SledVectors, StoreError> {
        let tree = self.db.open_tree(VECTORS_TREE)?;
        if tree.get(VECTORS_MODEL_KEY)?.as_deref() != Some(fingerprint.as_bytes()) {
            tree.clear()?;
            tree.insert(VECTORS_MODEL_KEY, fingerprint.as_bytes())?;
        }
        Ok(SledVectors { tree })
    }

    fn log_keys(&self) -> Result<Vec<IVec>, StoreError> {
        self.db
            .scan_prefix(LOG_PREFIX)
            .keys()
            .map(|k| k.map_err(StoreError::from))
            .collect()
    }
}

/// One model's sentence vectors in the state database ([`SledStore::vectors`]).
pub struct SledVectors {
    tree: sled::Tree,
}

impl VectorStore for SledVectors {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<f32>>, KeptVectorError> {
        let Some(bytes) = self.tree.get(key)? else {
            return Ok(None);
        };
        if bytes.is_empty() || bytes.len() % 4 != 0 {
            return Err(corrupt(key, format!("a vector of {} bytes", bytes.len())).into());
        }
        Ok(Some(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ))
    }

    fn put(&self, key: &[u8], vector: &[f32]) -> Result<(), KeptVectorError> {
        let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.tree.insert(key, bytes)?;
        Ok(())
    }

    fn retain(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<usize, KeptVectorError> {
        let mut dropped = Batch::default();
        let mut count = 0;
        for key in self.tree.iter().keys() {
            let key = key?;
            if key.as_ref() != VECTORS_MODEL_KEY && !keep(&key) {
                dropped.remove(key);
                count += 1;
            }
        }
        self.tree.apply_batch(dropped)?;
        Ok(count)
    }
}

impl StateStore for SledStore {
    fn load(&self) -> Result<Saved, StoreError> {
        let snapshot = match self.db.get(SNAPSHOT_KEY)? {
            Some(bytes) => Some(Snapshot::decode(&bytes, self.format)?),
            None => None,
        };
        let mut log = Vec::new();
        for entry in self.db.scan_prefix(LOG_PREFIX) {
            let (key, value) = entry?;
            log.push(decode_logged(&value).map_err(|e| corrupt(&key, e))?);
        }
        let mut offsets = Offsets::new();
        for entry in self.db.scan_prefix(OFFSET_PREFIX) {
            let (key, value) = entry?;
            let rest = &key[OFFSET_PREFIX.len()..];
            // <topic> 0 <4 partition bytes>
            let split = rest
                .len()
                .checked_sub(5)
                .filter(|&at| rest[at] == 0)
                .ok_or_else(|| corrupt(&key, "no topic separator"))?;
            let topic = std::str::from_utf8(&rest[..split]).map_err(|e| corrupt(&key, e))?;
            let partition = i32::from_be_bytes(be_bytes(&key, &rest[split + 1..])?);
            let offset = i64::from_be_bytes(be_bytes(&key, &value)?);
            offsets.set_next(topic, Position::new(partition, offset));
        }
        Ok(Saved {
            snapshot,
            log,
            offsets,
        })
    }

    fn record(&mut self, updates: &[Update], offsets: &Offsets) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        for (seq, update) in (self.next_seq..).zip(updates) {
            let bytes = encode_logged(update).map_err(|e| corrupt(LOG_PREFIX, e))?;
            batch.insert(log_key(seq), bytes);
        }
        for (topic, next) in offsets.iter() {
            batch.insert(
                offset_key(topic, next.partition),
                &next.offset.to_be_bytes(),
            );
        }
        self.db.apply_batch(batch)?;
        self.next_seq += updates.len() as u64;
        self.log_len += updates.len() as u64;
        Ok(())
    }

    fn snapshot(&mut self, state: &Snapshot) -> Result<(), StoreError> {
        let bytes = state.encode().map_err(|e| corrupt(SNAPSHOT_KEY, e))?;
        let mut batch = Batch::default();
        batch.insert(SNAPSHOT_KEY, bytes);
        if self.format != STORE_FORMAT {
            // The log's layout is the same in both: the snapshot alone makes it this format.
            batch.insert(FORMAT_KEY, &STORE_FORMAT.to_be_bytes());
        }
        for key in self.log_keys()? {
            batch.remove(key);
        }
        self.db.apply_batch(batch)?;
        self.format = STORE_FORMAT;
        self.log_len = 0;
        Ok(())
    }

    fn log_len(&self) -> u64 {
        self.log_len
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }

    fn instance_id(&mut self) -> Result<String, StoreError> {
        if let Some(id) = self.db.get(INSTANCE_KEY)? {
            return Ok(String::from_utf8_lossy(&id).into_owned());
        }
        let id = format!("{:016x}", rand::random::<u64>());
        self.db.insert(INSTANCE_KEY, id.as_bytes())?;
        self.db.flush()?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineConfig, NewLabel};
    use crate::state::codec::wire::sample;
    use crate::state::State;

    fn round(id: &str) -> Update {
        Update::Round {
            round: id.to_string(),
            labels: vec![NewLabel {
                id: format!("label-{id}"),
                name: None,
                description: None,
                examples: vec![format!("an example about {id} topics")],
            }],
        }
    }

    fn offsets(offset: i64) -> Offsets {
        let mut offsets = Offsets::new();
        offsets.set_next("texts", Position::new(0, offset));
        offsets
    }

    #[test]
    fn log_snapshot_and_offsets_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = State::new(Engine::new(EngineConfig::default()), 100);
        {
            let mut store = SledStore::open(dir.path()).unwrap();
            store.record(&[round("a")], &offsets(1)).unwrap();
            engine.apply(&round("a")).unwrap();
            store.snapshot(&engine.to_snapshot()).unwrap();
            store.record(&[round("b")], &offsets(2)).unwrap();
            store.record(&[], &offsets(3)).unwrap();
            assert_eq!(store.log_len(), 1);
            store.flush().unwrap();
        }
        let store = reopen(dir.path());
        let saved = store.load().unwrap();
        assert_eq!(saved.snapshot.as_ref(), Some(&engine.to_snapshot()));
        assert_eq!(saved.log, vec![round("b")]);
        assert_eq!(saved.offsets, offsets(3));
        assert_eq!(store.log_len(), 1);
    }

    fn reopen(path: &Path) -> SledStore {
        loop {
            // sled releases its lock a moment after the Db is dropped.
            match SledStore::open(path) {
                Ok(store) => break store,
                Err(StoreError::Locked { .. }) => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Err(other) => panic!("{other}"),
            }
        }
    }

    /// A format 2 store (its snapshot bare) is read as it is, and becomes format 3 in the batch
    /// that writes its next snapshot.
    #[test]
    fn a_format_2_store_becomes_format_3_with_its_next_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = sled::open(dir.path()).unwrap();
            db.insert(FORMAT_KEY, &2u32.to_be_bytes()).unwrap();
            let bare = postcard::to_stdvec(&sample::snapshot_v2()).unwrap();
            db.insert(SNAPSHOT_KEY, bare).unwrap();
            db.flush().unwrap();
        }
        let format = |store: &SledStore| store.db.get(FORMAT_KEY).unwrap().unwrap().to_vec();
        let snapshot = {
            let mut store = reopen(dir.path());
            let snapshot = store.load().unwrap().snapshot.unwrap();
            store.record(&[round("a")], &offsets(1)).unwrap();
            assert_eq!(
                format(&store),
                2u32.to_be_bytes(),
                "logging keeps the format"
            );
            store.snapshot(&snapshot).unwrap();
            assert_eq!(format(&store), 3u32.to_be_bytes());
            store.flush().unwrap();
            snapshot
        };
        let store = reopen(dir.path());
        let saved = store.load().unwrap();
        assert_eq!(saved.snapshot, Some(snapshot));
        assert!(saved.log.is_empty());
    }

    #[test]
    fn vectors_survive_reopen_for_their_model_only() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = SledStore::open(dir.path()).unwrap();
            let vectors = store.vectors("model-a").unwrap();
            vectors.put(b"k1", &[0.5, -0.25, 1.0]).unwrap();
            assert_eq!(vectors.get(b"k2").unwrap(), None);
            store.flush().unwrap();
        }
        let store = reopen(dir.path());
        let kept = store.vectors("model-a").unwrap();
        assert_eq!(kept.get(b"k1").unwrap(), Some(vec![0.5, -0.25, 1.0]));
        kept.put(b"k2", &[1.0]).unwrap();
        assert_eq!(kept.retain(&|key| key == b"k1").unwrap(), 1);
        assert_eq!(kept.get(b"k2").unwrap(), None);
        assert!(
            kept.get(b"k1").unwrap().is_some(),
            "kept, and the model key with it"
        );
        drop(kept);
        assert!(store
            .vectors("model-a")
            .unwrap()
            .get(b"k1")
            .unwrap()
            .is_some());
        // Another model's cache starts empty, and the first model's vectors are gone for good.
        assert_eq!(store.vectors("model-b").unwrap().get(b"k1").unwrap(), None);
        assert_eq!(store.vectors("model-a").unwrap().get(b"k1").unwrap(), None);
        // The snapshot and log keys live in the default tree, untouched.
        assert!(store.load().unwrap().snapshot.is_none());
    }

    #[test]
    fn a_vector_of_broken_length_is_an_error_not_a_vector() {
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::open(dir.path()).unwrap();
        let vectors = store.vectors("m").unwrap();
        vectors.tree.insert(b"k", &[1u8, 2, 3][..]).unwrap();
        let error = vectors.get(b"k").unwrap_err();
        assert!(
            matches!(
                error.downcast_ref::<StoreError>(),
                Some(StoreError::Corrupt { .. })
            ),
            "{error}"
        );
    }
}
