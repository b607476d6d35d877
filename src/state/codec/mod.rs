//! Every persisted format of the replicated state, and the one policy that governs them.
//!
//! - **The changelog record** (`changelog.rs`): what the changelog topic carries — label events
//!   as forwarded, learned texts — postcard behind a marker byte, numbered by
//!   [`CHANGELOG_VERSION`].
//! - **The snapshot** (`snapshot.rs`): the whole state as the store saves it.
//! - **The store** (`crate::store::sled_store`): sled's keys (snapshot, logged
//!   [`super::Update`]s, offsets), numbered by [`STORE_FORMAT`] in its `format` key.
//!
//! # Compatibility policy
//!
//! This build writes the newest version of each format and reads every version from the
//! oldest supported one on; the constants below are the bounds. A record or store outside them
//! is refused with a message that says what to do, never skipped silently (replicas would
//! diverge). Postcard writes a struct as its fields in order, with no names and no count, and
//! an enum variant by its place. So a variant may be appended (older data still reads), and
//! keeps its place for good (a retired one becomes a placeholder nothing decodes as); but a
//! field added to a persisted struct changes its layout — older data no longer decodes as the
//! new struct (postcard applies no `#[serde(default)]`) — so it needs a new version, or an
//! explicit decode of the older layout kept beside the new one.
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
//! state folder) and `tests/changelog_compat.rs` (a changelog).

mod changelog;
mod snapshot;

#[cfg(test)]
mod changelog_tests;

pub use changelog::{
    learn_records, Change, ChangeDecodeError, ChangeRecord, LabelOutcome, LearnedText, RejectStage,
    Retired,
};
pub use snapshot::Snapshot;

/// The changelog record version this build writes.
pub const CHANGELOG_VERSION: u32 = 9;
/// The oldest changelog record version this build reads: version 5 put the arrival score in
/// the discovery note; 6 (corrections), 7 (audited corrections), 8 (the `over_limit`
/// rejection reason) and 9 (corrections to none of the labels, the `no_match` pooling reason,
/// and learn records of texts that matched no label, whose label is empty) only appended enum
/// variants or gave a field a value it never had, so version 5's records read as they are.
pub const CHANGELOG_OLDEST_SUPPORTED: u32 = 5;

/// The state store format this build writes (the snapshot layout with confidence outcomes,
/// postcard updates in the log).
pub const STORE_FORMAT: u32 = 2;
/// The oldest state store format this build reads.
pub const STORE_FORMAT_OLDEST_SUPPORTED: u32 = 2;
