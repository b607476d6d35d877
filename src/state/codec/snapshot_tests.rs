//! The snapshot's envelope: a torn, damaged or foreign snapshot is refused with what it is,
//! never decoded into another state.

use super::envelope;
use super::snapshot::decode_versioned;
use super::wire::sample;
use super::{Snapshot, SnapshotError, SNAPSHOT_VERSION, STORE_FORMAT};

fn sealed() -> Vec<u8> {
    envelope::seal(SNAPSHOT_VERSION, &sample::snapshot_v5()[0]).unwrap()
}

/// An envelope of `version` around `payload`, with a checksum that holds.
fn envelope_of(version: u32, payload: &[u8]) -> Vec<u8> {
    let mut bytes = b"GSNP".to_vec();
    bytes.extend_from_slice(&version.to_le_bytes());
    bytes.extend_from_slice(payload);
    let checksum = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&checksum.to_le_bytes());
    bytes
}

#[test]
fn a_snapshot_reads_back_in_its_envelope() {
    let bytes = sealed();
    assert_eq!(&bytes[..8], b"GSNP\x05\x00\x00\x00");
    let snapshot = Snapshot::decode(&bytes, STORE_FORMAT).unwrap();
    assert_eq!(snapshot.wire(), &sample::snapshot_v5()[0]);
    assert_eq!(snapshot.encode().unwrap(), bytes);
}

#[test]
fn torn_and_damaged_snapshots_are_refused() {
    let bytes = sealed();
    // Torn: any prefix.
    for cut in [0, 5, 11, bytes.len() / 2, bytes.len() - 1] {
        let error = Snapshot::decode(&bytes[..cut], STORE_FORMAT).unwrap_err();
        assert!(
            matches!(
                error,
                SnapshotError::Truncated(_) | SnapshotError::Checksum { .. }
            ),
            "{cut}: {error}"
        );
        assert!(error.to_string().contains("torn"), "{error}");
    }
    // One flipped bit anywhere: in the header, the state or the checksum.
    for at in [6, 20, bytes.len() / 2, bytes.len() - 2] {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        let error = Snapshot::decode(&damaged, STORE_FORMAT).unwrap_err();
        assert!(
            matches!(error, SnapshotError::Checksum { .. }),
            "{at}: {error}"
        );
    }
    let mut foreign = bytes.clone();
    foreign[..4].copy_from_slice(b"JUNK");
    assert_eq!(
        Snapshot::decode(&foreign, STORE_FORMAT).unwrap_err(),
        SnapshotError::NotASnapshot
    );
}

#[test]
fn versions_outside_this_build_s_are_refused_by_their_number() {
    let payload = postcard::to_stdvec(&sample::snapshot_v4()[0]).unwrap();
    let newer = Snapshot::decode(&envelope_of(6, &payload), STORE_FORMAT).unwrap_err();
    assert_eq!(newer, SnapshotError::TooNew(6));
    assert!(newer.to_string().contains("upgrade"), "{newer}");
    assert_eq!(
        Snapshot::decode(&envelope_of(2, &payload), STORE_FORMAT).unwrap_err(),
        SnapshotError::Unknown(2)
    );
    // A checksum that holds over a state that does not decode, or has bytes after it.
    let error = Snapshot::decode(&envelope_of(4, &payload[..payload.len() / 2]), 3).unwrap_err();
    assert!(
        matches!(error, SnapshotError::Postcard { version: 4, .. }),
        "{error}"
    );
    let mut longer = payload.clone();
    longer.push(0);
    assert_eq!(
        Snapshot::decode(&envelope_of(4, &longer), 3).unwrap_err(),
        SnapshotError::Trailing {
            version: 4,
            bytes: 1
        }
    );
}

#[test]
fn store_format_2_held_the_snapshot_bare() {
    let bare = postcard::to_stdvec(&sample::snapshot_v2()).unwrap();
    assert!(decode_versioned(&bare, 2).is_ok());
    // The same bytes in a format 3 store are not an envelope.
    assert_eq!(
        decode_versioned(&bare, 3).unwrap_err(),
        SnapshotError::NotASnapshot
    );
    let error = Snapshot::decode(&bare[..bare.len() / 2], 2).unwrap_err();
    assert!(matches!(error, SnapshotError::Unversioned(_)), "{error}");
    assert!(error.to_string().contains("before 2026-11-26"), "{error}");
}
