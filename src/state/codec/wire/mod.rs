//! The wire types: what the changelog record and the snapshot are on disk and on the topic,
//! field for field, down to the leaves — owned by the codec, not by the engine or discovery.
//!
//! The engine's and discovery's types are free to change; these are not. Every conversion
//! between the two destructures the engine's type without `..` and builds it field by field, so
//! a field added to, removed from or retyped in `src/engine/` or `src/discovery/` fails to
//! compile here, where the author must decide how the format holds it (most often: a new
//! version), instead of silently changing the bytes. Postcard writes structs by position and
//! enum variants by place, so:
//!
//! - a wire type of a version that has been written is **never changed** but for a variant
//!   appended, which the versions then share (nor renamed: the
//!   layout files of `tests/fixtures/formats/` name them); a new layout is new types, named for
//!   their version (`SnapshotV3`, `RecordV9`), with a conversion from the previous version's;
//! - a place that no version this build reads still uses stays as a unit variant
//!   (`Retired0`, …) that converts to an error, so later variants keep their numbers;
//! - maps are written as sequences of pairs (the same bytes in postcard), so a sample and its
//!   golden file are deterministic and the snapshot's are sorted.
//!
//! The golden files (`tests/fixtures/formats/`, `golden_tests.rs`) hold a sample of every
//! version as bytes and as a layout: a wire type changed without a new version fails there.
//!
//! - [`leaves`]: leaves both formats hold (a text's terms, a pooled text).
//! - [`update`]: the state's [`crate::state::Update`] — in changelog records and the store's
//!   log.
//! - [`record`]: the changelog record, [`record::VersionedRecord`].
//! - [`learn_view`]: the learn record written from borrowed texts (the hot path), byte for byte
//!   a [`record::RecordV9`].
//! - [`engine`]: the engine's persisted state (graph, statistics, labels, index, spread,
//!   outcomes), the snapshot's leaves.
//! - [`snapshot`]: the snapshot layouts ([`snapshot::SnapshotV2`], [`snapshot::SnapshotV3`]).

pub(crate) mod engine;
pub(crate) mod learn_view;
pub(crate) mod leaves;
pub(crate) mod record;
pub(crate) mod snapshot;
pub(crate) mod update;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
pub(crate) mod sample;

use thiserror::Error;

/// Why wire values do not make the engine's: a place nothing is written as any more.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("{0} is a retired place: no version this build reads writes it")]
    Retired(&'static str),
}
