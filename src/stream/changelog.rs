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

use crate::discovery::{OldNote, PoolNote, PoolNoteV3, PoolNoteV4};
use crate::engine::Analysis;
use crate::events::decode::Reason;
use crate::state::Update;

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

/// A learned text as versions 3 and 4 wrote it: the same fields, an older note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OldLearnedText<N> {
    pub partition: i32,
    pub offset: i64,
    pub analysis: Analysis,
    pub label: String,
    pub confident: bool,
    pub note: Option<N>,
}

/// Version 3: its note without the text's terms.
pub type LearnedTextV3 = OldLearnedText<PoolNoteV3>;
/// Version 4: its note without the arrival score.
pub type LearnedTextV4 = OldLearnedText<PoolNoteV4>;

impl<N: OldNote> From<OldLearnedText<N>> for LearnedText {
    fn from(old: OldLearnedText<N>) -> Self {
        let note = old.note.map(|note| note.upgrade(&old.analysis));
        Self {
            partition: old.partition,
            offset: old.offset,
            analysis: old.analysis,
            label: old.label,
            confident: old.confident,
            note,
        }
    }
}

/// A learned text as version 2 wrote it (no discovery note).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedTextV2 {
    pub partition: i32,
    pub offset: i64,
    pub analysis: Analysis,
    pub label: String,
    pub confident: bool,
}

impl From<LearnedTextV2> for LearnedText {
    fn from(old: LearnedTextV2) -> Self {
        Self {
            partition: old.partition,
            offset: old.offset,
            analysis: old.analysis,
            label: old.label,
            confident: old.confident,
            note: None,
        }
    }
}

fn learned_with_confidence() -> bool {
    true
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
mod tests {
    use super::*;
    use crate::discovery::Unexplained;
    use crate::engine::correct::CorrectionKind;
    use crate::engine::terms::TermCounts;
    use crate::engine::{Engine, EngineConfig, NewLabel};
    use crate::state::State;

    #[test]
    fn learns_are_batched_under_the_size_limit_in_order() {
        let mut engine = State::new(Engine::new(EngineConfig::default()), 100);
        engine
            .apply(&Update::Round {
                round: "r1".into(),
                labels: vec![NewLabel {
                    id: "a".into(),
                    name: None,
                    description: None,
                    examples: vec!["alpha decay emits helium nuclei".into()],
                }],
            })
            .unwrap();
        let texts: Vec<LearnedText> = (0..8)
            .map(|offset| LearnedText {
                partition: 0,
                offset,
                analysis: engine
                    .engine()
                    .analyze("helium nuclei and alpha decay in physics labs"),
                label: "a".into(),
                confident: offset % 2 == 0,
                note: (offset == 3).then(|| {
                    PoolNote::new(
                        "t3",
                        "a text",
                        &TermCounts::of("a text"),
                        Unexplained::WeakScore,
                        Some(0.04),
                    )
                }),
            })
            .collect();
        let whole = learn_records("me", &texts, usize::MAX).unwrap();
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].1, 8);
        let decoded = ChangeRecord::decode(&whole[0].0).unwrap();
        assert_eq!(decoded.origin, "me");
        assert_eq!(
            decoded.change,
            Change::Learned {
                texts: texts.clone()
            }
        );

        let limit = whole[0].0.len() / 3;
        let split = learn_records("me", &texts, limit).unwrap();
        assert!(split.len() >= 3, "{}", split.len());
        assert!(split.iter().all(|(payload, _)| payload.len() <= limit));
        let mut again = Vec::new();
        for (payload, count) in &split {
            match ChangeRecord::decode(payload).unwrap().change {
                Change::Learned { texts } => {
                    assert_eq!(texts.len(), *count);
                    again.extend(texts);
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(again, texts, "every text once, in order");
        // A text over the limit alone still gets its record.
        assert_eq!(learn_records("me", &texts[..1], 10).unwrap().len(), 1);
        assert!(learn_records("me", &[], 10).unwrap().is_empty());
    }

    #[test]
    fn records_round_trip_and_replay_to_the_same_engine() {
        let round = Update::Round {
            round: "r1".into(),
            labels: vec![NewLabel {
                id: "a".into(),
                name: Some("alpha".into()),
                description: Some("about alpha particles".into()),
                examples: vec!["alpha decay emits helium nuclei".into()],
            }],
        };
        let mut writer = State::new(Engine::new(EngineConfig::default()), 100);
        writer.apply(&round).unwrap();
        let analysis = writer
            .engine()
            .analyze("helium nuclei and alpha decay in physics labs");
        let records = [
            ChangeRecord {
                version: CHANGE_VERSION,
                origin: "i1".into(),
                change: Change::Label {
                    offset: 0,
                    key: Some(b"r1".to_vec()),
                    payload: b"{}".to_vec(),
                    outcome: LabelOutcome::Apply(round),
                },
            },
            ChangeRecord {
                version: CHANGE_VERSION,
                origin: "i2".into(),
                change: Change::Learn {
                    partition: 0,
                    offset: 7,
                    analysis,
                    label: "a".into(),
                    confident: true,
                },
            },
        ];
        // Two replicas decode the same bytes and apply them in the same order.
        let mut replicas = [
            State::new(Engine::new(EngineConfig::default()), 100),
            State::new(Engine::new(EngineConfig::default()), 100),
        ];
        for record in &records {
            let bytes = record.encode();
            for replica in &mut replicas {
                let decoded = ChangeRecord::decode(&bytes).unwrap();
                let update = match decoded.change {
                    Change::Label {
                        outcome: LabelOutcome::Apply(update),
                        ..
                    } => update,
                    Change::Learn {
                        analysis,
                        label,
                        confident,
                        ..
                    } => Update::Learn {
                        analysis,
                        label,
                        confident,
                    },
                    other => panic!("{other:?}"),
                };
                replica.apply(&update).unwrap();
            }
        }
        assert_eq!(replicas[0].digest(), replicas[1].digest());
        assert!(ChangeRecord::decode(b"{\"version\":2}").is_err());
    }

    #[test]
    fn corrections_and_audits_keep_their_postcard_numbers_and_round_trip() {
        // Version 6 wrote `Correct` as variant 6; version 7 appended `Audit` as 7.
        let correction = |kind| {
            Update::correction(
                "t-1".into(),
                "a".into(),
                "alpha decay emits helium nuclei".into(),
                kind,
            )
        };
        for (kind, number) in [(CorrectionKind::Review, 6u8), (CorrectionKind::Audit, 7)] {
            let update = correction(kind);
            let bytes = postcard::to_stdvec(&update).unwrap();
            assert_eq!(bytes[0], number, "{update:?}");
            let record = ChangeRecord {
                version: CHANGE_VERSION,
                origin: "i1".into(),
                change: Change::Label {
                    offset: 3,
                    key: Some(b"t-1".to_vec()),
                    payload: b"{}".to_vec(),
                    outcome: LabelOutcome::Apply(update),
                },
            };
            assert_eq!(ChangeRecord::decode(&record.encode()).unwrap(), record);
        }
    }

    /// Records written before the outcome was typed carried the same strings.
    #[test]
    fn records_are_postcard_behind_a_marker_and_json_ones_still_read() {
        let record = ChangeRecord {
            version: CHANGE_VERSION,
            origin: "i1".into(),
            change: Change::Label {
                offset: 3,
                key: Some(b"k".to_vec()),
                payload: b"{}".to_vec(),
                outcome: LabelOutcome::Apply(Update::RetireLabel { label: "a".into() }),
            },
        };
        let bytes = record.encode();
        assert_eq!(bytes[0], POSTCARD_MARKER);
        assert_eq!(ChangeRecord::decode(&bytes).unwrap(), record);
        let json = serde_json::to_vec(&ChangeRecord {
            version: 1,
            ..record.clone()
        })
        .unwrap();
        assert_eq!(ChangeRecord::decode(&json).unwrap().change, record.change);
        for bad in [&b""[..], b"\x00\x01", &[POSTCARD_MARKER, 0xFF, 0xFF]] {
            assert!(ChangeRecord::decode(bad).is_err(), "{bad:?}");
        }
        let future = serde_json::to_vec(&ChangeRecord {
            version: CHANGE_VERSION + 1,
            ..record
        })
        .unwrap();
        assert_eq!(
            ChangeRecord::decode(&future).unwrap_err(),
            ChangeDecodeError::Version(CHANGE_VERSION + 1)
        );
    }

    #[test]
    fn notes_carry_terms_and_arrival_scores_and_versions_3_and_4_still_read() {
        let engine = Engine::new(EngineConfig::default());
        let text = "a long text about volcanoes, lava and the ash of an eruption";
        let analysis = engine.analyze(text);
        let heaviest = Analysis {
            terms: TermCounts {
                counts: analysis.terms.counts[..3].to_vec(),
            },
            ..analysis.clone()
        };
        let learned = |note| LearnedText {
            partition: 0,
            offset: 7,
            analysis: heaviest.clone(),
            label: "geology".into(),
            confident: false,
            note,
        };
        // Version 5: the note holds all of the text's terms (the learn step its heaviest) and
        // the writer's arrival score.
        let note = PoolNote::new(
            "t7",
            text,
            &analysis.terms,
            Unexplained::WeakScore,
            Some(0.06),
        );
        let (payload, _) =
            learn_records("i1", &[learned(Some(note))], usize::MAX).unwrap()[0].clone();
        // marker, version (6 since corrections: learn records are laid out as in 5), origin
        // ("i1": length and two bytes), then the variant.
        assert_eq!((payload[1], payload[5]), (CHANGE_VERSION as u8, 5));
        let Change::Learned { texts } = ChangeRecord::decode(&payload).unwrap().change else {
            panic!("not a learn record");
        };
        let pooled = texts[0]
            .clone()
            .note
            .unwrap()
            .pooled(&texts[0].analysis, "geology");
        assert_eq!(pooled.terms, analysis.terms);
        assert_eq!(pooled.arrival_score, Some(0.06));
        // Version 4 (variant 4, no arrival score): pooled without one.
        let v4 = LearnedTextV4 {
            partition: 0,
            offset: 7,
            analysis: heaviest.clone(),
            label: "geology".into(),
            confident: false,
            note: Some(PoolNoteV4 {
                id: "t7".into(),
                why: Unexplained::WeakScore,
                excerpt: text.into(),
                terms: analysis.terms.clone(),
            }),
        };
        let pooled = pooled_from_old_record(
            4,
            Change::LearnedV4 {
                texts: vec![v4.clone()],
            },
        );
        assert_eq!(pooled.terms, analysis.terms);
        assert_eq!(pooled.arrival_score, None);
        // Version 3 (variant 3, no terms in the note): pooled with the learn step's terms.
        let v3 = LearnedTextV3 {
            partition: v4.partition,
            offset: v4.offset,
            analysis: v4.analysis,
            label: v4.label,
            confident: v4.confident,
            note: v4.note.map(|note| PoolNoteV3 {
                id: note.id,
                why: note.why,
                excerpt: note.excerpt,
            }),
        };
        let pooled = pooled_from_old_record(3, Change::LearnedV3 { texts: vec![v3] });
        assert_eq!(pooled.terms, heaviest.terms);
        assert_eq!(pooled.excerpt, text);
    }

    /// `change` written as a record of `version` (whose learn variant has the same number),
    /// read back, and its one text's note pooled.
    fn pooled_from_old_record(version: u32, change: Change) -> crate::discovery::PooledText {
        let bytes = ChangeRecord {
            version,
            origin: "i1".into(),
            change,
        }
        .encode();
        assert_eq!(u32::from(bytes[5]), version);
        let text: LearnedText = match ChangeRecord::decode(&bytes).unwrap().change {
            Change::LearnedV3 { mut texts } => texts.remove(0).into(),
            Change::LearnedV4 { mut texts } => texts.remove(0).into(),
            other => panic!("not an old learn record: {other:?}"),
        };
        text.note.unwrap().pooled(&text.analysis, "geology")
    }

    #[test]
    fn a_rejection_reads_the_strings_earlier_versions_wrote() {
        let old = br#"{"version":1,"origin":"i1","change":{"label":{"offset":3,"key":null,
            "payload":[],"outcome":{"reject":{"stage":"decode","reason":"malformed_json",
            "message":"expected value"}}}}}"#;
        let record = ChangeRecord::decode(old).unwrap();
        let Change::Label { outcome, .. } = record.change else {
            panic!("{record:?}")
        };
        assert_eq!(
            outcome,
            LabelOutcome::Reject {
                stage: RejectStage::Decode,
                reason: Reason::MalformedJson,
                message: "expected value".into()
            }
        );
    }
}
