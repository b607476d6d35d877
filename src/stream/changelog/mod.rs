//! The changelog topic: the one ordered log of every change to the graph, shared by all
//! replicas.
//!
//! Label events (as forwarded from the labels topic, with their LLM-written descriptions) and
//! online-indexing steps are appended here; every instance — including the one that wrote a
//! record — changes its engine only by applying this log, in order. Equal logs make equal
//! graphs, so replicas converge. Records are an internal format, versioned, not a public
//! contract like `schemas/`: this build writes version 7, postcard behind a one-byte marker
//! (a tenth of JSON's encode and decode time on learn records, which are most of the log):
//! learn records whose texts may carry a discovery note with the text's terms and its arrival
//! score; version 6 added corrections (`Update::Correct`) and the `needs_review` pooling
//! reason, version 7 audited corrections (`Update::Audit`). It reads versions 1 (JSON) to 6
//! too.
//! An older build cannot read what this one writes: upgrade every replica together.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::discovery::PoolNote;
use crate::engine::Analysis;
use crate::events::decode::Reason;
use crate::state::Update;

mod legacy;

use legacy::learned_with_confidence;
pub use legacy::{LearnedTextV2, LearnedTextV3, LearnedTextV4, OldLearnedText};

pub const CHANGE_VERSION: u32 = 7;
/// Postcard's number for [`Change::Learned`] (its place in the enum).
const LEARNED_VARIANT: u32 = 5;
/// First byte of a postcard record (a JSON record starts with `{`).
const POSTCARD_MARKER: u8 = 0xC2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeRecord {
    pub version: u32,
    /// The instance that wrote it: it alone dead-letters a label event the log refuses.
    pub origin: String,
    pub change: Change,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Online indexing of the texts one instance finished together, as version 2 wrote it
    /// (read, never written; postcard numbers variants, so it keeps its place).
    Learns { texts: Vec<LearnedTextV2> },
    /// A labels-topic record. Several instances may forward the same one; the first in the log
    /// counts, later copies (offset already applied) are skipped.
    Label {
        offset: i64,
        key: Option<Vec<u8>>,
        payload: Vec<u8>,
        outcome: LabelOutcome,
    },
    /// Online indexing of one text, as earlier builds wrote it (read, never written).
    Learn {
        partition: i32,
        offset: i64,
        analysis: Analysis,
        label: String,
        /// Decided by the writer (see `Engine::is_confident`); records from before it existed
        /// learned everything.
        #[serde(default = "learned_with_confidence")]
        confident: bool,
    },
    /// Online indexing of the texts one instance finished together, as version 3 wrote it
    /// (notes without the text's terms; read, never written).
    LearnedV3 { texts: Vec<LearnedTextV3> },
    /// Online indexing of the texts one instance finished together, as version 4 wrote it
    /// (notes without the arrival score; read, never written).
    LearnedV4 { texts: Vec<LearnedTextV4> },
    /// Online indexing of the texts one instance finished together, in finishing order (offset
    /// order per partition), with their discovery notes. What this build writes
    /// ([`learn_records`] writes it from borrowed texts as variant [`LEARNED_VARIANT`]).
    Learned { texts: Vec<LearnedText> },
}

/// Online indexing of the text at (partition, offset) of the texts topic. A text re-read after
/// a crash or rebalance may be learned again by someone; only the first counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedText {
    pub partition: i32,
    pub offset: i64,
    pub analysis: Analysis,
    pub label: String,
    /// Decided by the writer (see `Engine::is_confident`).
    pub confident: bool,
    /// Set when the writer judged the text poorly explained by the active labels: every
    /// replica then pools it, identically.
    pub note: Option<PoolNote>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// A learn record as written, over borrowed texts: the same bytes as a [`ChangeRecord`] holding
/// [`Change::Learned`].
#[derive(Serialize)]
struct LearnsRecord<'a> {
    version: u32,
    origin: &'a str,
    change: LearnedChange<'a>,
}

/// [`Change::Learned`] over borrowed texts.
struct LearnedChange<'a> {
    texts: &'a [LearnedText],
}

impl Serialize for LearnedChange<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStructVariant;
        let mut variant =
            serializer.serialize_struct_variant("Change", LEARNED_VARIANT, "learned", 1)?;
        variant.serialize_field("texts", self.texts)?;
        variant.end()
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
    let record = LearnsRecord {
        version: CHANGE_VERSION,
        origin,
        change: LearnedChange { texts },
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

/// `record` as postcard behind the marker byte.
fn with_marker<T: Serialize>(record: &T) -> Vec<u8> {
    // Plain data in memory: serialising cannot fail.
    postcard::to_extend(record, vec![POSTCARD_MARKER]).unwrap_or_default()
}

/// Why a changelog record cannot be read (with the decoder's words, where it has some).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ChangeDecodeError {
    #[error("not a changelog record")]
    NotARecord,
    #[error("postcard: {0}")]
    Postcard(String),
    #[error("JSON: {0}")]
    Json(String),
    #[error("changelog record version {0}; this build reads 1 to {CHANGE_VERSION}")]
    Version(u32),
}

impl ChangeRecord {
    pub fn encode(&self) -> Vec<u8> {
        with_marker(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, ChangeDecodeError> {
        let record: Self = match bytes.first() {
            Some(&POSTCARD_MARKER) => postcard::from_bytes(&bytes[1..])
                .map_err(|e| ChangeDecodeError::Postcard(e.to_string()))?,
            Some(b'{') => {
                serde_json::from_slice(bytes).map_err(|e| ChangeDecodeError::Json(e.to_string()))?
            }
            _ => return Err(ChangeDecodeError::NotARecord),
        };
        if !(1..=CHANGE_VERSION).contains(&record.version) {
            return Err(ChangeDecodeError::Version(record.version));
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests;
