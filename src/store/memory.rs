//! A [`StateStore`] in memory: the same contract as sled's, nothing on disk. For tests of what
//! sits on a store (the replica), and for a service that rebuilds from the changelog on every
//! start anyway.

use super::{Offsets, Saved, StateStore, StoreError};
use crate::state::Snapshot;
use crate::state::Update;

#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    snapshot: Option<Snapshot>,
    log: Vec<Update>,
    offsets: Offsets,
    instance: Option<String>,
}

impl StateStore for MemoryStore {
    fn load(&self) -> Result<Saved, StoreError> {
        Ok(Saved {
            snapshot: self.snapshot.clone(),
            log: self.log.clone(),
            offsets: self.offsets.clone(),
        })
    }

    fn record(&mut self, updates: &[Update], offsets: &Offsets) -> Result<(), StoreError> {
        self.log.extend_from_slice(updates);
        self.offsets.update(offsets);
        Ok(())
    }

    fn snapshot(&mut self, state: &Snapshot) -> Result<(), StoreError> {
        self.snapshot = Some(state.clone());
        self.log.clear();
        Ok(())
    }

    fn log_len(&self) -> u64 {
        self.log.len() as u64
    }

    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn instance_id(&mut self) -> Result<String, StoreError> {
        Ok(self
            .instance
            .get_or_insert_with(|| format!("memory-{}", std::process::id()))
            .clone())
    }
}
