//! The replicated state as the store persists it: held in memory as the newest layout
//! ([`SnapshotV4`]), written in the envelope (`envelope.rs`), read from every store format this
//! build supports (the policy: `mod.rs`).

use serde::de::DeserializeOwned;

use super::envelope;
use super::wire::snapshot::{SnapshotV3, SnapshotV4, VersionedSnapshot};
use super::SnapshotError;
use super::SNAPSHOT_VERSION;
use crate::discovery::Pool;
use crate::engine::saved::EngineState;

/// The engine's state and the discovery pool, ready to write (converted once, when taken).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot(SnapshotV4);

impl Snapshot {
    pub fn new(engine: EngineState, pool: Pool) -> Self {
        Self(SnapshotV4::new(engine, pool))
    }

    pub fn into_parts(self) -> (EngineState, Pool) {
        self.0.into_parts()
    }

    /// The snapshot as this build writes it: the newest layout in the envelope.
    pub fn encode(&self) -> Result<Vec<u8>, SnapshotError> {
        envelope::seal(SNAPSHOT_VERSION, &self.0).map_err(|e| SnapshotError::Encode(e.to_string()))
    }

    /// The snapshot a store of `store_format` holds in `bytes` (store format 2 wrote it bare).
    pub fn decode(bytes: &[u8], store_format: u32) -> Result<Self, SnapshotError> {
        Ok(Self(decode_versioned(bytes, store_format)?.into_newest()))
    }

    #[cfg(test)]
    pub(crate) fn wire(&self) -> &SnapshotV4 {
        &self.0
    }
}

impl From<SnapshotV4> for Snapshot {
    fn from(wire: SnapshotV4) -> Self {
        Self(wire)
    }
}

// A new snapshot version is a new arm below: raise this with it.
const _: () = assert!(SNAPSHOT_VERSION == 5);

/// The layout `bytes` hold, by the store's format and then the envelope's version.
pub(crate) fn decode_versioned(
    bytes: &[u8],
    store_format: u32,
) -> Result<VersionedSnapshot, SnapshotError> {
    if store_format < 3 {
        // Bare postcard, as format 2 wrote it (extra bytes were never checked: not now either).
        return postcard::from_bytes(bytes)
            .map(VersionedSnapshot::V2)
            .map_err(|e| SnapshotError::Unversioned(e.to_string()));
    }
    let (version, payload) = envelope::open(bytes)?;
    match version {
        3 => whole::<SnapshotV3>(version, payload).map(VersionedSnapshot::V3),
        // 5 only appended a pooling reason: 4's layout reads it.
        4 | 5 => whole(version, payload).map(VersionedSnapshot::V4),
        newer if newer > SNAPSHOT_VERSION => Err(SnapshotError::TooNew(newer)),
        other => Err(SnapshotError::Unknown(other)),
    }
}

/// `payload` decoded as `T`, every byte of it.
fn whole<T: DeserializeOwned>(version: u32, payload: &[u8]) -> Result<T, SnapshotError> {
    let (value, rest) =
        postcard::take_from_bytes::<T>(payload).map_err(|e| SnapshotError::Postcard {
            version,
            detail: e.to_string(),
        })?;
    if !rest.is_empty() {
        return Err(SnapshotError::Trailing {
            version,
            bytes: rest.len(),
        });
    }
    Ok(value)
}
