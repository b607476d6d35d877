//! The snapshot's envelope (store format 3 on): what the bytes are and which layout, before
//! they are decoded, and a checksum after, so that a torn or damaged snapshot is refused,
//! never decoded into another state.
//!
//! ```text
//! "GSNP"  version (u32 LE)  postcard payload  crc32 (u32 LE) of everything before it
//! ```
//!
//! The version leads (as in Quickwit's versioned metadata) so the reader picks the layout
//! first; the checksum trails (as in tantivy's footer) so the writer computes it in one pass.
//! CRC-32 (IEEE, `crc32fast`, already under sled) catches torn writes and flipped bits at
//! memory speed; it is not a defence against a forger, who could write a state folder anyway.

use serde::Serialize;

use super::SnapshotError;

/// What a snapshot's bytes begin with.
const MAGIC: [u8; 4] = *b"GSNP";
/// The magic and the version.
const HEADER: usize = 8;
/// The checksum.
const FOOTER: usize = 4;

/// `value` of layout `version` in the envelope.
pub(crate) fn seal<T: Serialize>(version: u32, value: &T) -> Result<Vec<u8>, postcard::Error> {
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&version.to_le_bytes());
    let mut bytes = postcard::to_extend(value, header)?;
    let checksum = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&checksum.to_le_bytes());
    Ok(bytes)
}

/// The version and the payload of an envelope whose checksum holds.
pub(crate) fn open(bytes: &[u8]) -> Result<(u32, &[u8]), SnapshotError> {
    if bytes.len() < HEADER + FOOTER {
        return Err(SnapshotError::Truncated(bytes.len()));
    }
    let (sealed, footer) = bytes.split_at(bytes.len() - FOOTER);
    let (header, payload) = sealed.split_at(HEADER);
    if header[..4] != MAGIC {
        return Err(SnapshotError::NotASnapshot);
    }
    let stored = u32::from_le_bytes([footer[0], footer[1], footer[2], footer[3]]);
    let computed = crc32fast::hash(sealed);
    if stored != computed {
        return Err(SnapshotError::Checksum { stored, computed });
    }
    let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    Ok((version, payload))
}
