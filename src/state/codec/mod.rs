//! Every persisted format of the replicated state, and the one policy that governs them.
//!
//! - **The changelog record** (`changelog.rs`): what the changelog topic carries — label events
//!   as forwarded, learned texts — postcard behind a marker byte, numbered by
//!   [`CHANGELOG_VERSION`] in its first field.
//! - **The snapshot** (`snapshot.rs`): the whole state as the store saves it, in an envelope
//!   (`envelope.rs`: a header with its version, a CRC-32 footer) numbered by
//!   [`SNAPSHOT_VERSION`].
//! - **The store** (`crate::store::sled_store`): sled's keys (snapshot, logged
//!   [`super::Update`]s as `log.rs` writes them, offsets), numbered by [`STORE_FORMAT`] in its
//!   `format` key.
//!
//! What is written is the codec's own **wire types** (`wire/`), one per layout and version,
//! converted from and to the engine's and discovery's types; those derive serde for other
//! uses, but no format writes them directly, so a change in `src/engine/` fails to compile in
//! `wire/` rather than silently change the bytes.
//!
//! # Compatibility policy
//!
//! This build writes the newest version of each format and reads every version from the
//! oldest supported one on; the constants below are the bounds. A record or store outside them
//! is refused with a message that says what to do, never skipped silently (replicas would
//! diverge). Postcard writes a struct as its fields in order, with no names and no count, and
//! an enum variant by its place. So a variant may be appended (older data still reads), and
//! keeps its place for good (a retired one becomes a unit placeholder that converts to an
//! error); a field added to a persisted struct changes its layout. Either way the version is
//! raised (an older build then refuses the newer data by its number rather than misreads it),
//! and a changed layout is new wire types beside the old ones, which stay to read older data.
//! The golden files (`tests/fixtures/formats/`, checked by `wire/golden_tests.rs`) hold each
//! version's sample as bytes and as a layout: a wire type changed without a new version fails
//! there. docs/design/formats.md says how to add a version.
//!
//! Raising an oldest-supported bound drops formats; it is said in the release notes with how
//! to rebuild:
//! - **a state folder** (`state.dir`): delete it; the replica rebuilds its state from the
//!   changelog topic, which is kept for ever.
//! - **a changelog topic** older than [`CHANGELOG_OLDEST_SUPPORTED`]: stop every replica,
//!   delete the changelog topic and every `state.dir`, reset the texts group's offsets to the
//!   earliest (or publish the texts again), and start: the service forwards the labels topic
//!   (kept for ever) into a new changelog and learns the texts again.
//!
//! Dropped before the first release (2026-11-27, as no deployment needs them): changelog
//! versions 1 to 4 (JSON records, and learn records before the arrival score) and the snapshot
//! layouts written before confidence outcomes (before 2026-11-26). The snapshot layouts were
//! dropped within store format 2 (the format number does not tell them apart): such a store
//! is refused when its snapshot fails to decode, with the same advice.
//!
//! Compatibility is tested on files the previous build wrote: `tests/state_compat.rs` (a
//! state folder) and `tests/changelog_compat.rs` (a changelog); and on the golden files.

mod changelog;
mod envelope;
mod log;
mod snapshot;
mod snapshot_error;
pub(crate) mod wire;

#[cfg(test)]
mod changelog_tests;
#[cfg(test)]
mod snapshot_tests;

pub use changelog::{
    learn_records, Change, ChangeDecodeError, ChangeRecord, LabelOutcome, LearnedText, RejectStage,
};
pub use log::{decode_logged, encode_logged, LogDecodeError};
pub use snapshot::Snapshot;
pub use snapshot_error::SnapshotError;
pub use wire::WireError;

/// The changelog record version this build writes.
pub const CHANGELOG_VERSION: u32 = 10;
/// The oldest changelog record version this build reads: version 5 put the arrival score in
/// the discovery note; 6 (corrections), 7 (audited corrections), 8 (the `over_limit`
/// rejection reason), 9 (corrections to none of the labels, the `no_match` pooling reason,
/// and learn records of texts that matched no label, whose label is empty) and 10 (the `doubt`
/// pooling reason) only appended enum variants or gave a field a value it never had, so
/// version 5's records read as they are (one layout, `wire::record::RecordV9`).
pub const CHANGELOG_OLDEST_SUPPORTED: u32 = 5;

/// The state store format this build writes: 3, the snapshot in its envelope (postcard
/// updates in the log, as in 2). A format 2 store is read as it is and becomes format 3 when
/// its next snapshot is written.
pub const STORE_FORMAT: u32 = 3;
/// The oldest state store format this build reads: 2, the bare snapshot layout with confidence
/// outcomes.
pub const STORE_FORMAT_OLDEST_SUPPORTED: u32 = 2;
/// The snapshot layout this build writes, the version in its envelope: 3 came with store format
/// 3, 4 (the probe's fitted weight) and 5 (the `doubt` pooling reason appended: 4's layout)
/// within it; a later store format may keep a layout.
pub const SNAPSHOT_VERSION: u32 = 5;
