//! The hot paths' writers: a learn record over borrowed texts (every classified text goes
//! through it) and a logged `Update::Learn` (every learned text is logged by the store), written
//! without copying the texts into wire values first. Each view is built by destructuring the
//! engine's types without `..` (a field added there fails to compile here too) and writes the
//! same bytes as the owned wire type it stands for: [`RecordV9`] holding
//! [`ChangeV9::Learned`], [`UpdateV9::Learn`] (checked by `golden_tests.rs`).
//!
//! [`RecordV9`]: super::record::RecordV9
//! [`ChangeV9::Learned`]: super::record::ChangeV9::Learned
//! [`UpdateV9::Learn`]: super::update::UpdateV9::Learn

use serde::ser::{SerializeStructVariant, Serializer};
use serde::Serialize;

use super::leaves::UnexplainedWire;
use crate::discovery::PoolNote;
use crate::engine::keywords::Keyword;
use crate::engine::terms::TermCounts;
use crate::engine::text::PhraseCounts;
use crate::engine::Analysis;
use crate::position::Position;
use crate::state::codec::LearnedText;

/// `ChangeV9::Learned`'s place.
pub(crate) const LEARNED_PLACE: u32 = 5;
/// `UpdateV9::Learn`'s place.
pub(crate) const LEARN_PLACE: u32 = 3;

/// A learn record over borrowed texts: a `RecordV9` holding `ChangeV9::Learned`.
#[derive(Serialize)]
pub(crate) struct LearnsRecordRef<'a> {
    pub version: u32,
    pub origin: &'a str,
    pub change: LearnedChangeRef<'a>,
}

/// `ChangeV9::Learned { texts }` over borrowed texts.
pub(crate) struct LearnedChangeRef<'a> {
    pub texts: &'a [LearnedText],
}

impl Serialize for LearnedChangeRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut variant =
            serializer.serialize_struct_variant("ChangeV9", LEARNED_PLACE, "Learned", 1)?;
        variant.serialize_field("texts", &Seq(self.texts, LearnedTextRef::of))?;
        variant.end()
    }
}

/// `UpdateV9::Learn` over a borrowed analysis.
pub(crate) struct LearnUpdateRef<'a> {
    pub analysis: &'a Analysis,
    pub label: &'a str,
    pub confident: bool,
}

impl Serialize for LearnUpdateRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut variant =
            serializer.serialize_struct_variant("UpdateV9", LEARN_PLACE, "Learn", 3)?;
        variant.serialize_field("analysis", &AnalysisRef::of(self.analysis))?;
        variant.serialize_field("label", self.label)?;
        variant.serialize_field("confident", &self.confident)?;
        variant.end()
    }
}

/// A slice written as a sequence of views.
struct Seq<'a, T, V>(&'a [T], fn(&'a T) -> V);

impl<'a, T, V: Serialize> Serialize for Seq<'a, T, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(self.1))
    }
}

/// `LearnedTextV9`.
#[derive(Serialize)]
struct LearnedTextRef<'a> {
    partition: i32,
    offset: i64,
    analysis: AnalysisRef<'a>,
    label: &'a str,
    confident: bool,
    note: Option<PoolNoteRef<'a>>,
}

impl<'a> LearnedTextRef<'a> {
    fn of(text: &'a LearnedText) -> Self {
        let LearnedText {
            position: Position { partition, offset },
            analysis,
            label,
            confident,
            note,
        } = text;
        Self {
            partition: *partition,
            offset: *offset,
            analysis: AnalysisRef::of(analysis),
            label,
            confident: *confident,
            note: note.as_ref().map(PoolNoteRef::of),
        }
    }
}

/// `AnalysisV9`.
#[derive(Serialize)]
struct AnalysisRef<'a> {
    phrases: PhraseCountsRef<'a>,
    keywords: Seq<'a, Keyword, KeywordRef<'a>>,
    terms: TermCountsRef<'a>,
}

impl<'a> AnalysisRef<'a> {
    fn of(analysis: &'a Analysis) -> Self {
        // The vector is never stored (as in `AnalysisV9`'s conversion).
        let Analysis {
            phrases,
            keywords,
            terms,
            embedding: _,
            words: _,
        } = analysis;
        let PhraseCounts { counts, total } = phrases;
        Self {
            phrases: PhraseCountsRef {
                counts: Pairs(counts),
                total: *total,
            },
            keywords: Seq(keywords, KeywordRef::of),
            terms: TermCountsRef::of(terms),
        }
    }
}

/// `PhraseCountsV9`: the map's pairs in its order.
#[derive(Serialize)]
struct PhraseCountsRef<'a> {
    counts: Pairs<'a>,
    total: u32,
}

struct Pairs<'a>(&'a foldhash::HashMap<String, u32>);

impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

/// `KeywordV9`.
#[derive(Serialize)]
struct KeywordRef<'a> {
    phrase: &'a str,
    score: f64,
}

impl<'a> KeywordRef<'a> {
    fn of(keyword: &'a Keyword) -> Self {
        let Keyword { phrase, score } = keyword;
        Self {
            phrase,
            score: *score,
        }
    }
}

/// `TermCountsWire`.
#[derive(Serialize)]
struct TermCountsRef<'a> {
    counts: &'a [(String, u32)],
}

impl<'a> TermCountsRef<'a> {
    fn of(terms: &'a TermCounts) -> Self {
        let TermCounts { counts } = terms;
        Self { counts }
    }
}

/// `PoolNoteV9`.
#[derive(Serialize)]
struct PoolNoteRef<'a> {
    id: &'a str,
    why: UnexplainedWire,
    excerpt: &'a str,
    terms: TermCountsRef<'a>,
    arrival_score: Option<f64>,
}

impl<'a> PoolNoteRef<'a> {
    fn of(note: &'a PoolNote) -> Self {
        let PoolNote {
            id,
            why,
            excerpt,
            terms,
            arrival_score,
        } = note;
        Self {
            id,
            why: (*why).into(),
            excerpt,
            terms: TermCountsRef::of(terms),
            arrival_score: *arrival_score,
        }
    }
}
