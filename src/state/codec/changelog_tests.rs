//! Changelog records: batching, round trips, replay, and versions outside the supported ones
//! refused.

use super::changelog::POSTCARD_MARKER;
use super::wire::record::ReasonV9;
use super::*;
use crate::discovery::{PoolNote, Unexplained};
use crate::engine::correct::CorrectionKind;
use crate::engine::terms::TermCounts;
use crate::engine::Analysis;
use crate::engine::{Engine, EngineConfig, NewLabel};
use crate::events::decode::Reason;
use crate::position::Position;
use crate::state::State;
use crate::state::Update;

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
            position: Position::new(0, offset),
            // As a learn record holds it (no vector, no probe words).
            analysis: engine.engine().analyzer().learnable(
                &engine
                    .engine()
                    .analyzer()
                    .analyze("helium nuclei and alpha decay in physics labs"),
            ),
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
        .analyzer()
        .analyze("helium nuclei and alpha decay in physics labs");
    let records = [
        ChangeRecord {
            version: CHANGELOG_VERSION,
            origin: "i1".into(),
            change: Change::Label {
                offset: 0,
                key: Some(b"r1".to_vec()),
                payload: b"{}".to_vec(),
                outcome: LabelOutcome::Apply(round),
            },
        },
        ChangeRecord {
            version: CHANGELOG_VERSION,
            origin: "i2".into(),
            change: Change::Learned {
                texts: vec![LearnedText {
                    position: Position::new(0, 7),
                    analysis,
                    label: "a".into(),
                    confident: true,
                    note: None,
                }],
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
                Change::Learned { mut texts } => {
                    let text = texts.remove(0);
                    Update::Learn {
                        analysis: text.analysis,
                        label: text.label,
                        confident: text.confident,
                    }
                }
                other => panic!("{other:?}"),
            };
            replica.apply(&update).unwrap();
        }
    }
    assert_eq!(replicas[0].digest(), replicas[1].digest());
}

#[test]
fn corrections_and_audits_keep_their_postcard_numbers_and_round_trip() {
    // Version 6 wrote `Correct` as variant 6; version 7 appended `Audit` as 7; version 9
    // appended the corrections to none of the labels as 8 and 9.
    let correction = |label: Option<&str>, kind| {
        Update::correction(
            "t-1".into(),
            label.map(str::to_string),
            "alpha decay emits helium nuclei".into(),
            kind,
        )
    };
    for (label, kind, number) in [
        (Some("a"), CorrectionKind::Review, 6u8),
        (Some("a"), CorrectionKind::Audit, 7),
        (None, CorrectionKind::Review, 8),
        (None, CorrectionKind::Audit, 9),
    ] {
        let update = correction(label, kind);
        let bytes = encode_logged(&update).unwrap();
        assert_eq!(bytes[0], number, "{update:?}");
        let record = ChangeRecord {
            version: CHANGELOG_VERSION,
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

/// Every reason keeps its postcard number: version 8 appended `over_limit` as 14.
#[test]
fn rejection_reasons_keep_their_postcard_numbers_and_round_trip() {
    for (number, reason) in Reason::ALL.into_iter().enumerate() {
        assert_eq!(
            postcard::to_stdvec(&ReasonV9::from(reason)).unwrap(),
            [number as u8],
            "{reason}"
        );
    }
    assert_eq!(Reason::ALL[14], Reason::OverLimit);
    let record = ChangeRecord {
        version: CHANGELOG_VERSION,
        origin: "i1".into(),
        change: Change::Label {
            offset: 4,
            key: None,
            payload: b"{}".to_vec(),
            outcome: LabelOutcome::Reject {
                stage: RejectStage::Apply,
                reason: Reason::OverLimit,
                message: "the label id is 300 bytes".into(),
            },
        },
    };
    assert_eq!(ChangeRecord::decode(&record.encode()).unwrap(), record);
}

#[test]
fn records_are_postcard_behind_a_marker_and_other_versions_are_refused() {
    let record = ChangeRecord {
        version: CHANGELOG_VERSION,
        origin: "i1".into(),
        change: Change::Label {
            offset: 3,
            key: Some(b"k".to_vec()),
            payload: b"{}".to_vec(),
            outcome: LabelOutcome::Reject {
                stage: RejectStage::Decode,
                reason: Reason::MalformedJson,
                message: "expected value".into(),
            },
        },
    };
    let bytes = record.encode();
    assert_eq!(bytes[0], POSTCARD_MARKER);
    assert_eq!(ChangeRecord::decode(&bytes).unwrap(), record);
    for bad in [&b""[..], b"\x00\x01", &[POSTCARD_MARKER, 0xFF, 0xFF]] {
        assert!(ChangeRecord::decode(bad).is_err(), "{bad:?}");
    }
    // The oldest supported version reads; one older, or a newer one, is refused by its
    // version before the rest is decoded — as are version 1's JSON records.
    let at = |version| {
        ChangeRecord {
            version,
            ..record.clone()
        }
        .encode()
    };
    assert!(ChangeRecord::decode(&at(CHANGELOG_OLDEST_SUPPORTED)).is_ok());
    let too_old = ChangeRecord::decode(&at(CHANGELOG_OLDEST_SUPPORTED - 1)).unwrap_err();
    assert_eq!(
        too_old,
        ChangeDecodeError::TooOld(CHANGELOG_OLDEST_SUPPORTED - 1)
    );
    assert!(
        too_old.to_string().contains("delete the changelog topic"),
        "{too_old}"
    );
    assert_eq!(
        ChangeRecord::decode(&at(CHANGELOG_VERSION + 1)).unwrap_err(),
        ChangeDecodeError::TooNew(CHANGELOG_VERSION + 1)
    );
    let json = br#"{"version":1,"origin":"i1","change":{"label":{"offset":3}}}"#;
    assert_eq!(
        ChangeRecord::decode(json).unwrap_err(),
        ChangeDecodeError::TooOld(1)
    );
    // Other JSON, or bytes that only start like a record, are unreadable records, not
    // another build's: nothing to rebuild.
    for other in [
        &br#"{"type":"round","version":1,"round":"r1","labels":[]}"#[..],
        br#"{"version":7,"origin":"i1","change":{}}"#,
        &[POSTCARD_MARKER, 0xA3, b'5'], // "\u{a3}5": the marker is UTF-8's lead byte of "£"
        &[POSTCARD_MARKER, 0],
    ] {
        let error = ChangeRecord::decode(other).unwrap_err();
        assert!(!error.is_version(), "{other:?}: {error}");
    }
    // A supported version naming a retired place is refused, and not as another build's.
    let mut retired = at(CHANGELOG_VERSION);
    retired[5] = 4; // marker, version, origin ("i1": length and two bytes), then the variant
    let error = ChangeRecord::decode(&retired).unwrap_err();
    assert_eq!(
        error,
        ChangeDecodeError::Wire(WireError::Retired("Change place 4"))
    );
    assert!(!error.is_version());
}

#[test]
fn notes_carry_the_text_s_terms_and_arrival_score() {
    let engine = Engine::new(EngineConfig::default());
    let text = "a long text about volcanoes, lava and the ash of an eruption";
    let analysis = engine.analyzer().analyze(text);
    let heaviest = Analysis {
        terms: TermCounts {
            counts: analysis.terms.counts[..3].to_vec(),
        },
        ..analysis.clone()
    };
    let learned = |note| LearnedText {
        position: Position::new(0, 7),
        analysis: heaviest.clone(),
        label: "geology".into(),
        confident: false,
        note,
    };
    // The note holds all of the text's terms (the learn step its heaviest) and the writer's
    // arrival score.
    let note = PoolNote::new(
        "t7",
        text,
        &analysis.terms,
        Unexplained::WeakScore,
        Some(0.06),
    );
    let (payload, _) = learn_records("i1", &[learned(Some(note))], usize::MAX).unwrap()[0].clone();
    // marker, version, origin ("i1": length and two bytes), then the variant.
    assert_eq!((payload[1], payload[5]), (CHANGELOG_VERSION as u8, 5));
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
}

/// Version 9's additions as bytes: a correction to none of the labels (applied) and the learn
/// record of a text that matched no label (empty label, pooled as `no_match`). The bytes are
/// fixed: a change to either layout fails here before it reaches a deployment's changelog.
#[test]
fn version_9_records_keep_their_bytes() {
    let analysis = Analysis {
        phrases: crate::engine::text::PhraseCounts {
            counts: std::iter::once(("wohnung".to_string(), 1)).collect(),
            total: 1,
        },
        keywords: vec![crate::engine::keywords::Keyword {
            phrase: "wohnung".into(),
            score: 1.0,
        }],
        terms: TermCounts::of("wohnung"),
        embedding: None,
        words: None,
    };
    let correction = ChangeRecord {
        version: 9,
        origin: "i1".into(),
        change: Change::Label {
            offset: 3,
            key: Some(b"t-1".to_vec()),
            payload: b"{}".to_vec(),
            outcome: LabelOutcome::Apply(Update::correction(
                "t-1".into(),
                None,
                "spam".into(),
                CorrectionKind::Audit,
            )),
        },
    };
    let learned = ChangeRecord {
        version: 9,
        origin: "i1".into(),
        change: Change::Learned {
            texts: vec![LearnedText {
                position: Position::new(0, 7),
                analysis: analysis.clone(),
                label: crate::engine::NO_LABEL.into(),
                confident: false,
                note: Some(PoolNote::new(
                    "t-7",
                    "Ich suche eine Wohnung",
                    &analysis.terms,
                    Unexplained::NoMatch,
                    Some(0.0),
                )),
            }],
        },
    };
    let hex = |bytes: Vec<u8>| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex(correction.encode()), CORRECTION_TO_NONE_V9);
    assert_eq!(hex(learned.encode()), LEARNED_WITHOUT_LABEL_V9);
    for (record, bytes) in [
        (correction, CORRECTION_TO_NONE_V9),
        (learned, LEARNED_WITHOUT_LABEL_V9),
    ] {
        let bytes: Vec<u8> = (0..bytes.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&bytes[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(ChangeRecord::decode(&bytes).unwrap(), record);
    }
}

/// `Update::AuditNone` is variant 9 of the state update, after `Audit` (7) and `CorrectNone` (8).
const CORRECTION_TO_NONE_V9: &str = "c20902693101060103742d31027b7d000903742d31047370616d";
/// The empty label is its length, 0, alone; `Unexplained::NoMatch` is 4.
const LEARNED_WITHOUT_LABEL_V9: &str = "c2090269310501000e0107776f686e756e6701010107776f686e756e67000000000000f03f0107776f686e756e670100000103742d3704164963682073756368652065696e6520576f686e756e670107776f686e756e6701010000000000000000";
