//! Why a snapshot cannot be read or written (its envelope's and its layout's reasons alike).

use thiserror::Error;

use super::SNAPSHOT_VERSION;

/// Why a snapshot cannot be read (or, for [`SnapshotError::Encode`], written).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SnapshotError {
    #[error("the snapshot is {0} bytes, too short for its envelope: it is torn or damaged")]
    Truncated(usize),
    #[error("the snapshot does not begin as gorag's snapshots do: it is damaged")]
    NotASnapshot,
    #[error(
        "the snapshot's checksum is {computed:08x} where {stored:08x} was written: it is torn \
         or damaged"
    )]
    Checksum { stored: u32, computed: u32 },
    #[error(
        "snapshot version {0} was written by a newer gorag (this build reads versions 2 to \
         {SNAPSHOT_VERSION}): upgrade this replica"
    )]
    TooNew(u32),
    #[error("snapshot version {0} is not one an envelope holds: the snapshot is damaged")]
    Unknown(u32),
    #[error(
        "the store format 2 snapshot cannot be read ({0}): it was written before 2026-11-26 \
         (older snapshot layouts are no longer read) or is damaged"
    )]
    Unversioned(String),
    #[error("snapshot version {version} cannot be decoded ({detail}): it is damaged")]
    Postcard { version: u32, detail: String },
    #[error("snapshot version {version} has {bytes} bytes after the state: it is damaged")]
    Trailing { version: u32, bytes: usize },
    #[error("the snapshot cannot be encoded: {0}")]
    Encode(String),
}
