//! One replica's reading of the changelog: which records to apply, which are copies of what it
//! applied already, and what each changes — pure, so the replica logic is tested without a
//! broker. The service does the I/O around it (saving, dead letters, metrics).
//!
//! Copies are expected: several instances may forward the same labels-topic record, and a text
//! re-read after a crash or a rebalance may be learned again by its new owner. The first copy in
//! the log counts everywhere, so every replica skips the same ones.

use std::collections::HashMap;

use crate::engine::{EngineError, IndexReport};
use crate::events::decode::Rejection;
use crate::position::Position;
use crate::state::codec::{
    Change, ChangeDecodeError, ChangeRecord, LabelOutcome, LearnedText, RejectStage,
};
use crate::state::from_event::engine_rejection;
use crate::state::State;
use crate::state::Update;
use crate::store::Offsets;

/// How far a replica has read: the next changelog and labels offsets, and per texts
/// partition the offset below which texts are learned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cursor {
    pub changelog_next: i64,
    pub labels_next: i64,
    pub learned: HashMap<i32, i64>,
}

/// Topic names, for the offsets saved with each record.
#[derive(Debug, Clone)]
pub struct LogTopics {
    pub changelog: String,
    pub labels: String,
    pub texts: String,
}

impl Cursor {
    /// Where a saved state left off.
    pub fn restore(offsets: &Offsets, topics: &LogTopics) -> Self {
        let at = |topic: &str| offsets.next(topic, 0).unwrap_or(0);
        Self {
            changelog_next: at(&topics.changelog),
            labels_next: at(&topics.labels),
            learned: offsets
                .of_topic(&topics.texts)
                .map(|next| (next.partition, next.offset))
                .collect(),
        }
    }

    /// Whether the text at `position` was learned already.
    pub fn is_learned(&self, position: Position) -> bool {
        position.offset < self.learned.get(&position.partition).copied().unwrap_or(0)
    }
}

/// What one changelog record did.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// Before the cursor: read again after a seek. Nothing to save.
    Behind,
    /// Not a record this build reads; skipped.
    Unreadable(ChangeDecodeError),
    /// A copy of a label event applied already.
    Copy,
    /// A learn record's texts: how many were learned, how many were copies of texts learned
    /// already, and what the engine refused to learn (a label retired meanwhile).
    Learned {
        learned: usize,
        copies: usize,
        refused: Vec<EngineError>,
    },
    /// A label event applied.
    Label {
        labels_offset: i64,
        update: Box<Update>,
        report: IndexReport,
    },
    /// A label event refused, here or by whoever forwarded it: dead-letter it (its forwarder
    /// does, once).
    LabelRejected {
        labels_offset: i64,
        key: Option<Vec<u8>>,
        payload: Vec<u8>,
        stage: RejectStage,
        rejection: Rejection,
    },
}

/// One record's outcome: its effect, the updates to save in the log and the offsets to save
/// with them.
#[derive(Debug, PartialEq)]
pub struct Applied {
    pub effect: Effect,
    /// Written by this instance.
    pub mine: bool,
    pub updates: Vec<Update>,
    pub offsets: Offsets,
}

/// Apply the changelog record at `offset` (as decoded by [`ChangeRecord::decode`]) to
/// `engine`, moving `cursor`.
pub fn apply(
    cursor: &mut Cursor,
    engine: &mut State,
    topics: &LogTopics,
    instance: &str,
    offset: i64,
    record: Result<ChangeRecord, ChangeDecodeError>,
) -> Applied {
    let mut applied = Applied {
        effect: Effect::Behind,
        mine: false,
        updates: Vec::new(),
        offsets: Offsets::new(),
    };
    if offset < cursor.changelog_next {
        return applied;
    }
    cursor.changelog_next = offset + 1;
    applied
        .offsets
        .set_next(&topics.changelog, Position::new(0, offset + 1));
    let record = match record {
        Ok(record) => record,
        Err(error) => {
            applied.effect = Effect::Unreadable(error);
            return applied;
        }
    };
    applied.mine = record.origin == instance;
    match contents(record.change) {
        Contents::Learned(texts) => learn(cursor, engine, topics, texts, &mut applied),
        Contents::Label(event) => label(cursor, engine, topics, event, &mut applied),
    }
    applied
}

/// What a change carries, whichever record version wrote it.
enum Contents {
    Learned(Vec<LearnedText>),
    Label(LabelRecord),
}

fn contents(change: Change) -> Contents {
    match change {
        Change::Learned { texts } => Contents::Learned(texts),
        Change::Label {
            offset,
            key,
            payload,
            outcome,
        } => Contents::Label(LabelRecord {
            offset,
            key,
            payload,
            outcome,
        }),
    }
}

/// A label event as the changelog carries it: its offset in the labels topic, its input
/// record, and the writer's verdict.
struct LabelRecord {
    offset: i64,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    outcome: LabelOutcome,
}

/// Apply a label event unless it was applied already (a copy).
fn label(
    cursor: &mut Cursor,
    engine: &mut State,
    topics: &LogTopics,
    event: LabelRecord,
    applied: &mut Applied,
) {
    let LabelRecord {
        offset: labels_offset,
        key,
        payload,
        outcome,
    } = event;
    if labels_offset < cursor.labels_next {
        applied.effect = Effect::Copy;
        return;
    }
    cursor.labels_next = labels_offset + 1;
    applied
        .offsets
        .set_next(&topics.labels, Position::new(0, labels_offset + 1));
    let rejected = |stage, rejection| Effect::LabelRejected {
        labels_offset,
        key,
        payload,
        stage,
        rejection,
    };
    applied.effect = match outcome {
        LabelOutcome::Apply(update) => match engine.apply(&update) {
            Ok(report) => {
                applied.updates.push(update.clone());
                Effect::Label {
                    labels_offset,
                    update: Box::new(update),
                    report,
                }
            }
            Err(error) => rejected(RejectStage::Apply, engine_rejection(&error)),
        },
        LabelOutcome::Reject {
            stage,
            reason,
            message,
        } => rejected(stage, Rejection::new(reason, message)),
    };
}

/// Learn `texts` in order, skipping those learned already.
fn learn(
    cursor: &mut Cursor,
    engine: &mut State,
    topics: &LogTopics,
    texts: Vec<LearnedText>,
    applied: &mut Applied,
) {
    let (mut learned, mut copies, mut refused) = (0, 0, Vec::new());
    for text in texts {
        if cursor.is_learned(text.position) {
            copies += 1;
            continue;
        }
        let next = text.position.after();
        cursor.learned.insert(next.partition, next.offset);
        applied.offsets.set_next(&topics.texts, next);
        // The pool entry shares the analysis with the learn step: made first, then both move.
        let pooled = text.note.map(|note| {
            let arrival_score = note.arrival_score;
            Update::Pooled {
                text: note.pooled(&text.analysis, &text.label),
                arrival_score,
            }
        });
        let update = Update::Learn {
            analysis: text.analysis,
            label: text.label,
            confident: text.confident,
        };
        match engine.apply(&update) {
            Ok(_) => learned += 1,
            Err(error) => refused.push(error),
        }
        applied.updates.push(update);
        if let Some(pooled) = pooled {
            // Pushing to the pool cannot fail.
            let _ = engine.apply(&pooled);
            applied.updates.push(pooled);
        }
    }
    applied.effect = Effect::Learned {
        learned,
        copies,
        refused,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineConfig, NewLabel};
    use crate::events::decode::Reason;
    use crate::state::codec::CHANGELOG_VERSION;

    fn topics() -> LogTopics {
        LogTopics {
            changelog: "cl".into(),
            labels: "lb".into(),
            texts: "tx".into(),
        }
    }

    fn round(id: &str) -> Update {
        Update::Round {
            round: "r1".into(),
            labels: vec![NewLabel {
                id: id.into(),
                name: Some(id.into()),
                description: None,
                examples: vec![format!("{id} text about {id} things")],
            }],
        }
    }

    fn label_record(
        origin: &str,
        labels_offset: i64,
        outcome: LabelOutcome,
    ) -> Result<ChangeRecord, ChangeDecodeError> {
        let record = ChangeRecord {
            version: CHANGELOG_VERSION,
            origin: origin.into(),
            change: Change::Label {
                offset: labels_offset,
                key: None,
                payload: b"{}".to_vec(),
                outcome,
            },
        };
        ChangeRecord::decode(&record.encode())
    }

    fn learn_record(
        engine: &crate::engine::Engine,
        origin: &str,
        partition: i32,
        offset: i64,
    ) -> Result<ChangeRecord, ChangeDecodeError> {
        let record = ChangeRecord {
            version: CHANGELOG_VERSION,
            origin: origin.into(),
            change: Change::Learned {
                texts: vec![LearnedText {
                    position: Position::new(partition, offset),
                    analysis: engine.analyzer().analyze("astronomy of distant things"),
                    label: "astronomy".into(),
                    confident: true,
                    note: None,
                }],
            },
        };
        ChangeRecord::decode(&record.encode())
    }

    fn learned(learned: usize, copies: usize) -> Effect {
        Effect::Learned {
            learned,
            copies,
            refused: Vec::new(),
        }
    }

    #[test]
    fn a_batch_learns_its_new_texts_in_order_and_skips_the_copies() {
        let mut engine = State::new(Engine::new(EngineConfig::default()), 100);
        let mut cursor = Cursor::default();
        let record = label_record("a", 0, LabelOutcome::Apply(round("astronomy")));
        apply(&mut cursor, &mut engine, &topics(), "a", 0, record);
        let analysis = engine
            .engine()
            .analyzer()
            .analyze("astronomy of distant things");
        let text = |partition, offset| LearnedText {
            position: Position::new(partition, offset),
            analysis: analysis.clone(),
            label: "astronomy".into(),
            confident: true,
            note: None,
        };
        let batch = |origin: &str, texts: Vec<LearnedText>| {
            let record = ChangeRecord {
                version: CHANGELOG_VERSION,
                origin: origin.into(),
                change: Change::Learned { texts },
            };
            ChangeRecord::decode(&record.encode())
        };
        let first = batch("a", vec![text(0, 4), text(1, 7), text(0, 5)]);
        let applied = apply(&mut cursor, &mut engine, &topics(), "a", 1, first);
        assert_eq!(applied.effect, learned(3, 0));
        assert!(applied.mine);
        assert_eq!(applied.updates.len(), 3);
        assert_eq!(applied.offsets.next("tx", 0), Some(6));
        assert_eq!(applied.offsets.next("tx", 1), Some(8));
        // Another instance re-read partition 0 after a rebalance: 5 is a copy, 6 is new.
        let second = batch("b", vec![text(0, 5), text(0, 6)]);
        let applied = apply(&mut cursor, &mut engine, &topics(), "a", 2, second);
        assert_eq!(applied.effect, learned(1, 1));
        assert!(!applied.mine);
        assert_eq!(applied.updates.len(), 1);
        assert!(cursor.is_learned(Position::new(0, 6)) && !cursor.is_learned(Position::new(0, 7)));
    }

    #[test]
    fn a_forwarded_label_event_applies_once_and_copies_are_skipped() {
        let mut engine = State::new(Engine::new(EngineConfig::default()), 100);
        let mut cursor = Cursor::default();
        let record = label_record("a", 0, LabelOutcome::Apply(round("astronomy")));
        let first = apply(&mut cursor, &mut engine, &topics(), "a", 0, record.clone());
        assert!(matches!(
            first.effect,
            Effect::Label {
                labels_offset: 0,
                ..
            }
        ));
        assert!(first.mine);
        assert_eq!(first.updates.len(), 1);
        assert_eq!(first.offsets.next("lb", 0), Some(1));
        assert_eq!(first.offsets.next("cl", 0), Some(1));
        // Another instance forwarded the same labels record.
        let copy = label_record("b", 0, LabelOutcome::Apply(round("astronomy")));
        let second = apply(&mut cursor, &mut engine, &topics(), "a", 1, copy.clone());
        assert_eq!(second.effect, Effect::Copy);
        assert!(second.updates.is_empty());
        assert_eq!(second.offsets.next("cl", 0), Some(2));
        // Read again after a seek: behind the cursor.
        let again = apply(&mut cursor, &mut engine, &topics(), "a", 0, record.clone());
        assert_eq!(again.effect, Effect::Behind);
        assert_eq!(engine.engine().labels().len(), 1);
    }

    #[test]
    fn a_text_is_learned_once_whoever_writes_it() {
        let mut engine = State::new(Engine::new(EngineConfig::default()), 100);
        let mut cursor = Cursor::default();
        let record = label_record("a", 0, LabelOutcome::Apply(round("astronomy")));
        apply(&mut cursor, &mut engine, &topics(), "a", 0, record.clone());
        let learn = learn_record(engine.engine(), "a", 2, 40);
        let first = apply(&mut cursor, &mut engine, &topics(), "b", 1, learn.clone());
        assert_eq!(first.effect, learned(1, 0));
        assert!(!first.mine);
        assert_eq!(first.offsets.next("tx", 2), Some(41));
        assert!(cursor.is_learned(Position::new(2, 40)));
        // The text's new owner learned it again after a rebalance.
        let copy = learn_record(engine.engine(), "b", 2, 40);
        let second = apply(&mut cursor, &mut engine, &topics(), "b", 2, copy.clone());
        assert_eq!(second.effect, learned(0, 1));
        assert!(second.mine);
        assert!(second.updates.is_empty());
    }

    #[test]
    fn rejections_keep_their_stage_and_reason() {
        let mut engine = State::new(Engine::new(EngineConfig::default()), 100);
        let mut cursor = Cursor::default();
        let refused = LabelOutcome::Reject {
            stage: RejectStage::Decode,
            reason: Reason::MalformedJson,
            message: "expected value".into(),
        };
        let bytes = label_record("a", 0, refused);
        let applied = apply(&mut cursor, &mut engine, &topics(), "a", 0, bytes.clone());
        match applied.effect {
            Effect::LabelRejected {
                stage, rejection, ..
            } => {
                assert_eq!(stage, RejectStage::Decode);
                assert_eq!(rejection.reason, Reason::MalformedJson);
            }
            other => panic!("{other:?}"),
        }
        // A round the engine refuses when it applies it (the label exists by then).
        let first = label_record("a", 1, LabelOutcome::Apply(round("astronomy")));
        apply(&mut cursor, &mut engine, &topics(), "a", 1, first.clone());
        let duplicate = label_record("a", 2, LabelOutcome::Apply(round("astronomy")));
        let applied = apply(
            &mut cursor,
            &mut engine,
            &topics(),
            "a",
            2,
            duplicate.clone(),
        );
        match applied.effect {
            Effect::LabelRejected {
                stage, rejection, ..
            } => {
                assert_eq!(stage, RejectStage::Apply);
                assert_eq!(rejection.reason, Reason::DuplicateLabel);
            }
            other => panic!("{other:?}"),
        }
        assert!(applied.updates.is_empty());
    }

    #[test]
    fn an_unreadable_record_is_skipped_and_the_cursor_moves_on() {
        let mut engine = State::new(Engine::new(EngineConfig::default()), 100);
        let mut cursor = Cursor::default();
        let applied = apply(
            &mut cursor,
            &mut engine,
            &topics(),
            "a",
            0,
            ChangeRecord::decode(b"not json"),
        );
        assert!(matches!(applied.effect, Effect::Unreadable(_)));
        assert_eq!(cursor.changelog_next, 1);
    }

    #[test]
    fn a_cursor_restores_from_saved_offsets() {
        let mut offsets = Offsets::new();
        offsets.set_next("cl", Position::new(0, 9));
        offsets.set_next("lb", Position::new(0, 3));
        offsets.set_next("tx", Position::new(1, 77));
        let cursor = Cursor::restore(&offsets, &topics());
        assert_eq!((cursor.changelog_next, cursor.labels_next), (9, 3));
        assert!(
            cursor.is_learned(Position::new(1, 76))
                && !cursor.is_learned(Position::new(1, 77))
                && !cursor.is_learned(Position::new(0, 0))
        );
    }
}
