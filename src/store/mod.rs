//! Where the service keeps its state between runs, behind a small trait so sled can be
//! replaced.
//!
//! The state is a snapshot of the engine plus a log of the [`Update`]s applied since, and the
//! input offsets those updates came from. Each update is written in the same atomic batch as
//! the offsets that produced it, so after a crash the state and the offsets agree: nothing is
//! applied twice and nothing is skipped. Restoring = snapshot + replay of the log.

mod ledger;
mod memory;
mod offsets;
mod sled_store;

use thiserror::Error;

use crate::state::codec::SnapshotError;
use crate::state::{Snapshot, Update};

pub use ledger::{Mark, TextLedger};
pub use memory::MemoryStore;
pub use offsets::Offsets;
pub use sled_store::{SledStore, SledVectors};

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("state directory {path} is in use by another process (sled allows one per database): {source}")]
    Locked { path: String, source: sled::Error },
    #[error("state store: {0}")]
    Sled(#[from] sled::Error),
    #[error("state store record {key} is corrupt: {detail}")]
    Corrupt { key: String, detail: String },
    #[error(
        "state store format {found} was written by an incompatible gorag (this build reads \
         formats {oldest} to {newest})"
    )]
    Format {
        found: u32,
        oldest: u32,
        newest: u32,
    },
    #[error("the state store's snapshot cannot be read: {0}")]
    Snapshot(#[from] SnapshotError),
}

/// What a store gives back on start.
#[derive(Debug, Default)]
pub struct Saved {
    pub snapshot: Option<Snapshot>,
    /// Updates applied after the snapshot, in order.
    pub log: Vec<Update>,
    pub offsets: Offsets,
}

pub trait StateStore: Send {
    fn load(&self) -> Result<Saved, StoreError>;
    /// Atomically append `updates` (in order) to the log and set `offsets`.
    fn record(&mut self, updates: &[Update], offsets: &Offsets) -> Result<(), StoreError>;
    /// Atomically replace the snapshot with `state` and drop the log entries it covers.
    fn snapshot(&mut self, state: &Snapshot) -> Result<(), StoreError>;
    /// Updates logged since the last snapshot.
    fn log_len(&self) -> u64;
    /// Make everything recorded so far durable.
    fn flush(&self) -> Result<(), StoreError>;
    /// This instance's id, made up on first use and kept.
    fn instance_id(&mut self) -> Result<String, StoreError>;
}
