//! The changelog topic's record: the one ordered log of every change to the replicated state,
//! shared by all replicas.
//!
//! Label events (as forwarded from the labels topic, with their LLM-written descriptions) and
//! online-indexing steps are appended to it; every instance — including the one that wrote a
//! record — changes its state only by applying this log, in order. Equal logs make equal
//! states, so replicas converge. Records are an internal format, versioned (see the policy in
//! `mod.rs`), not a public contract like `schemas/`: postcard behind a one-byte marker (a tenth
//! of JSON's encode and decode time on learn records, which are most of the log). Version 5 put
//! the writer's arrival score in the discovery note, 6 added corrections (`Update::Correct`) and the `needs_review` pooling reason, version 7
//! audited corrections (`Update::Audit`), version 8 the `over_limit` rejection reason (a label
//! event past a bound, `crate::bounds`), version 9 corrections to none of the labels
//! (`Update::CorrectNone`, `Update::AuditNone`), the `no_match` pooling reason and learn records
//! of texts that matched no label (an empty label), version 10 the `doubt` pooling reason. An
//! older build cannot read what this one writes:
//! upgrade every replica together.

use serde::Deserialize;
use thiserror::Error;

use super::wire::learn_view::{LearnedChangeRef, LearnsRecordRef};
use super::wire::record::{RecordV9, VersionedRecord};
use super::wire::WireError;
use super::{CHANGELOG_OLDEST_SUPPORTED, CHANGELOG_VERSION};
use crate::discovery::PoolNote;
use crate::engine::Analysis;
use crate::events::decode::Reason;
use crate::position::Position;
use crate::state::Update;

/// First byte of a postcard record (a JSON record starts with `{`).
pub(super) const POSTCARD_MARKER: u8 = 0xC2;

/// A record as the service handles it; written and read through its wire layout
/// ([`VersionedRecord`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRecord {
    pub version: u32,
    /// The instance that wrote it: it alone dead-letters a label event the log refuses.
    pub origin: String,
    pub change: Change,
}

/// What a record changes. Its layout, with the places of retired record kinds, is the wire's
/// (`wire::record::ChangeV9`): a retired place decodes as an error there, never as a change.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A labels-topic record. Several instances may forward the same one; the first in the log
    /// counts, later copies (offset already applied) are skipped.
    Label {
        offset: i64,
        key: Option<Vec<u8>>,
        payload: Vec<u8>,
        outcome: LabelOutcome,
    },
    /// Online indexing of the texts one instance finished together, in finishing order (offset
    /// order per partition), with their discovery notes ([`learn_records`] writes it from
    /// borrowed texts).
    Learned { texts: Vec<LearnedText> },
}

/// Online indexing of the text at `position` of the texts topic. A text re-read after a crash
/// or rebalance may be learned again by someone; only the first counts.
#[derive(Debug, Clone, PartialEq)]
pub struct LearnedText {
    pub position: Position,
    pub analysis: Analysis,
    /// The label it is learned under; empty (`engine::NO_LABEL`, version 9) when it matched no
    /// label: it then joins the keyword statistics only.
    pub label: String,
    /// Decided by the writer (its `Verdict`, `Decisions::verdict`).
    pub confident: bool,
    /// Set when the writer judged the text poorly explained by the active labels: every
    /// replica then pools it, identically.
    pub note: Option<PoolNote>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LabelOutcome {
    Apply(Update),
    /// Refused before it reached the engine (undecodable, or an invalid round).
    Reject {
        stage: RejectStage,
        reason: Reason,
        message: String,
    },
}

/// Where a label event was refused (the dead letter's `gorag.stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectStage {
    Decode,
    Apply,
}

impl RejectStage {
    pub fn as_str(self) -> &'static str {
        match self {
            RejectStage::Decode => "decode",
            RejectStage::Apply => "apply",
        }
    }
}

/// The learn records for `texts` (in finishing order), as few as fit under `limit` encoded
/// bytes each: (payload, how many of the texts it holds, in order). A text that alone is over
/// `limit` gets a record of its own (the broker may refuse it: then only that text is not
/// learned).
pub fn learn_records(
    origin: &str,
    texts: &[LearnedText],
    limit: usize,
) -> Result<Vec<(Vec<u8>, usize)>, postcard::Error> {
    let mut records = Vec::new();
    split_learns(origin, texts, limit, &mut records)?;
    Ok(records)
}

fn split_learns(
    origin: &str,
    texts: &[LearnedText],
    limit: usize,
    out: &mut Vec<(Vec<u8>, usize)>,
) -> Result<(), postcard::Error> {
    if texts.is_empty() {
        return Ok(());
    }
    // The same bytes as a `RecordV9` of these texts, without copying them into one.
    let record = LearnsRecordRef {
        version: CHANGELOG_VERSION,
        origin,
        change: LearnedChangeRef { texts },
    };
    let payload = postcard::to_extend(&record, vec![POSTCARD_MARKER])?;
    if payload.len() <= limit || texts.len() == 1 {
        out.push((payload, texts.len()));
        return Ok(());
    }
    let (first, second) = texts.split_at(texts.len() / 2);
    split_learns(origin, first, limit, out)?;
    split_learns(origin, second, limit, out)
}

/// Why a changelog record cannot be read (with the decoder's words, where it has some).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ChangeDecodeError {
    #[error("not a changelog record")]
    NotARecord,
    #[error("postcard: {0}")]
    Postcard(String),
    #[error(
        "changelog record version {0} was written by a build older than this one reads \
         (versions {CHANGELOG_OLDEST_SUPPORTED} to {CHANGELOG_VERSION}), so this changelog cannot \
         be replayed: stop every replica, delete the changelog topic and every state.dir, reset \
         the texts group's offsets to the earliest (or publish the texts again) and start — the \
         labels topic is forwarded into a new changelog and the texts are learned again \
         (docs/design/formats.md)"
    )]
    TooOld(u32),
    #[error(
        "changelog record version {0} was written by a newer gorag (this build reads versions \
         {CHANGELOG_OLDEST_SUPPORTED} to {CHANGELOG_VERSION}): upgrade this replica — every \
         replica runs the same build"
    )]
    TooNew(u32),
    #[error("{0}: the record is damaged")]
    Wire(#[from] WireError),
}

impl ChangeDecodeError {
    /// Whether the record is one of another build's versions (not damaged): replaying on
    /// would make this replica's state differ from the others'.
    pub fn is_version(&self) -> bool {
        matches!(self, Self::TooOld(_) | Self::TooNew(_))
    }
}

/// What marks a JSON changelog record (version 1 wrote JSON): its version, and the fields
/// every record has.
#[derive(Deserialize)]
struct JsonRecord {
    version: u32,
    #[allow(dead_code)] // read only to tell a record from other JSON
    origin: String,
    #[allow(dead_code)]
    change: serde_json::Value,
}

impl ChangeRecord {
    /// The record as postcard behind the marker byte, in the layout of its version's
    /// ([`RecordV9`]: this build writes no other).
    pub fn encode(&self) -> Vec<u8> {
        // Plain data in memory: serialising cannot fail.
        postcard::to_extend(&RecordV9::from(self.clone()), vec![POSTCARD_MARKER])
            .unwrap_or_default()
    }

    /// A record of a version this build reads, or why not. The version (the first field) is
    /// checked before the rest is decoded — but only called another build's when what follows
    /// it reads as a record's (its origin), so that anything else written to the topic by
    /// mistake is an unreadable record, not a reason to rebuild.
    pub fn decode(bytes: &[u8]) -> Result<Self, ChangeDecodeError> {
        let postcard_error = |e: postcard::Error| ChangeDecodeError::Postcard(e.to_string());
        let body = match bytes.split_first() {
            Some((&POSTCARD_MARKER, body)) => body,
            Some((b'{', _)) => {
                return match serde_json::from_slice::<JsonRecord>(bytes) {
                    Ok(json) if (1..CHANGELOG_OLDEST_SUPPORTED).contains(&json.version) => {
                        Err(ChangeDecodeError::TooOld(json.version))
                    }
                    _ => Err(ChangeDecodeError::NotARecord),
                }
            }
            _ => return Err(ChangeDecodeError::NotARecord),
        };
        let (version, rest) = postcard::take_from_bytes::<u32>(body).map_err(postcard_error)?;
        let versioned = version >= 1 && postcard::take_from_bytes::<String>(rest).is_ok();
        if versioned && version < CHANGELOG_OLDEST_SUPPORTED {
            return Err(ChangeDecodeError::TooOld(version));
        }
        if versioned && version > CHANGELOG_VERSION {
            return Err(ChangeDecodeError::TooNew(version));
        }
        // Versions outside the supported ones that did not read as records: not records.
        let record = VersionedRecord::decode(version, body)
            .ok_or(ChangeDecodeError::NotARecord)?
            .map_err(postcard_error)?;
        Ok(record.try_into()?)
    }
}
