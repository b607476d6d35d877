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
//! diverge). Postcard writes structs as their fields in order and enum variants by their
//! place, so a field is only ever added last (older data is then its prefix, read with a
//! default) and a variant keeps its place for good (a retired one becomes a placeholder
//! nothing decodes as).
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
//! versions 1 to 5 (JSON records, and learn records before corrections) and the snapshot
//! layouts written before confidence outcomes (before 2026-11-26).
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
pub const CHANGELOG_VERSION: u32 = 7;
/// The oldest changelog record version this build reads: 6 added corrections (version 7,
/// audited corrections, laid its records out the same way).
pub const CHANGELOG_OLDEST_SUPPORTED: u32 = 6;

/// The state store format this build writes (the snapshot layout with confidence outcomes,
/// postcard updates in the log).
pub const STORE_FORMAT: u32 = 2;
/// The oldest state store format this build reads.
pub const STORE_FORMAT_OLDEST_SUPPORTED: u32 = 2;
