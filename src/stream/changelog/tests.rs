//! Changelog records: batching, round trips, replay, and every older version read.

use super::*;
use crate::discovery::{PoolNoteV3, PoolNoteV4, Unexplained};
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
    let (payload, _) = learn_records("i1", &[learned(Some(note))], usize::MAX).unwrap()[0].clone();
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
