//! A deterministic sample of every wire layout, built here (not from evaluation data): every
//! variant, and every optional field both set and unset, so that the golden files
//! (`golden_tests.rs`) hold each of them as bytes. A version's sample, like its golden file,
//! never changes once written: a new version gets a sample of its own.

use super::engine::{
    CorpusStatsWire, DocKindWire, EdgeCostWire, GraphStateWire, IndexDocWire, LabelInfoWire,
    NodeWire, OutcomeWire, SpreadStateWire,
};
use super::leaves::{PooledTextWire, TermCountsWire, UnexplainedWire};
use super::record::{
    ChangeV9, LabelOutcomeV9, LearnedTextV9, PoolNoteV9, ReasonV9, RecordV9, RejectStageV9,
};
use super::snapshot::{PoolV2, PoolV3, PooledEntryV3, SnapshotV2, SnapshotV3, SnapshotV4};
use super::update::{AnalysisV9, KeywordV9, NewLabelV9, PhraseCountsV9, UpdateV9};

fn terms(pairs: &[(&str, u32)]) -> TermCountsWire {
    TermCountsWire {
        counts: pairs.iter().map(|&(t, c)| (t.to_string(), c)).collect(),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn analysis() -> AnalysisV9 {
    AnalysisV9 {
        phrases: PhraseCountsV9 {
            counts: vec![("lava".into(), 2), ("lava flow".into(), 1)],
            total: 3,
        },
        keywords: vec![
            KeywordV9 {
                phrase: "lava".into(),
                score: 0.5,
            },
            KeywordV9 {
                phrase: "lava flow".into(),
                score: 0.25,
            },
        ],
        terms: terms(&[("flow", 1), ("lava", 2)]),
    }
}

fn pooled(id: &str, why: UnexplainedWire) -> PooledTextWire {
    PooledTextWire {
        id: id.into(),
        terms: terms(&[("yacht", 1)]),
        keywords: strings(&["yacht"]),
        excerpt: "a yacht race".into(),
        why,
        label: "geology".into(),
    }
}

const WHYS: [UnexplainedWire; 5] = [
    UnexplainedWire::UnknownLabel,
    UnexplainedWire::NoEvidence,
    UnexplainedWire::WeakScore,
    UnexplainedWire::NeedsReview,
    UnexplainedWire::NoMatch,
];

/// Every update (place 4 is retired: nothing holds it).
fn updates() -> Vec<UpdateV9> {
    vec![
        UpdateV9::Round {
            round: "r1".into(),
            labels: vec![
                NewLabelV9 {
                    id: "geology".into(),
                    name: Some("Geology".into()),
                    description: Some("rocks and volcanoes".into()),
                    examples: strings(&["lava flows from the volcano"]),
                },
                NewLabelV9 {
                    id: "label 7".into(),
                    name: None,
                    description: None,
                    examples: Vec::new(),
                },
            ],
        },
        UpdateV9::AddExamples {
            label: "geology".into(),
            examples: strings(&["ash clouds", "magma"]),
        },
        UpdateV9::RetireLabel {
            label: "label 7".into(),
        },
        UpdateV9::Learn {
            analysis: analysis(),
            label: "geology".into(),
            confident: true,
        },
        UpdateV9::Pooled {
            text: pooled("t1", UnexplainedWire::WeakScore),
            arrival_score: Some(0.07),
        },
        UpdateV9::Pooled {
            text: pooled("t2", UnexplainedWire::NoEvidence),
            arrival_score: None,
        },
        UpdateV9::Correct {
            text_id: "t3".into(),
            label: "geology".into(),
            text: "basalt columns".into(),
        },
        UpdateV9::Audit {
            text_id: "t4".into(),
            label: "geology".into(),
            text: "a caldera".into(),
        },
        UpdateV9::CorrectNone {
            text_id: "t5".into(),
            text: "spam".into(),
        },
        UpdateV9::AuditNone {
            text_id: "t6".into(),
            text: "more spam".into(),
        },
    ]
}

const REASONS: [ReasonV9; 15] = [
    ReasonV9::InvalidUtf8,
    ReasonV9::MalformedJson,
    ReasonV9::InvalidEvent,
    ReasonV9::UnknownEventType,
    ReasonV9::UnsupportedVersion,
    ReasonV9::EmptyText,
    ReasonV9::OversizedText,
    ReasonV9::DuplicateLabel,
    ReasonV9::UnknownLabel,
    ReasonV9::RetiredLabel,
    ReasonV9::InvalidRound,
    ReasonV9::NoActiveLabels,
    ReasonV9::LlmFailed,
    ReasonV9::OutputTooLarge,
    ReasonV9::OverLimit,
];

fn label_event(offset: i64, key: Option<&[u8]>, outcome: LabelOutcomeV9) -> RecordV9 {
    RecordV9 {
        version: 9,
        origin: "i1".into(),
        change: ChangeV9::Label {
            offset,
            key: key.map(<[u8]>::to_vec),
            payload: b"{}".to_vec(),
            outcome,
        },
    }
}

/// Changelog version 9: a label event applying each update, one refused for each reason (at
/// both stages), and learn records with and without notes (each pooling reason), labels and
/// confidence.
pub(crate) fn records_v9() -> Vec<RecordV9> {
    let mut records: Vec<RecordV9> = updates()
        .into_iter()
        .enumerate()
        .map(|(i, update)| {
            let key = (i % 2 == 0).then_some(&b"k"[..]);
            label_event(i as i64, key, LabelOutcomeV9::Apply(update))
        })
        .collect();
    for (i, reason) in REASONS.into_iter().enumerate() {
        let stage = if i % 2 == 0 {
            RejectStageV9::Decode
        } else {
            RejectStageV9::Apply
        };
        let outcome = LabelOutcomeV9::Reject {
            stage,
            reason,
            message: format!("refused ({i})"),
        };
        records.push(label_event(100 + i as i64, None, outcome));
    }
    let learned = |offset: i64, label: &str, confident, note| LearnedTextV9 {
        partition: (offset % 3) as i32,
        offset,
        analysis: analysis(),
        label: label.into(),
        confident,
        note,
    };
    let note = |why| PoolNoteV9 {
        id: "t9".into(),
        why,
        excerpt: "Ich suche eine Wohnung".into(),
        terms: terms(&[("wohnung", 1)]),
        arrival_score: (why != UnexplainedWire::UnknownLabel).then_some(0.03),
    };
    let mut texts = vec![
        learned(200, "geology", true, None),
        learned(201, "", false, None),
    ];
    texts.extend(
        WHYS.into_iter()
            .enumerate()
            .map(|(i, why)| learned(210 + i as i64, "geology", i % 2 == 0, Some(note(why)))),
    );
    records.push(RecordV9 {
        version: 9,
        origin: "i2".into(),
        change: ChangeV9::Learned { texts },
    });
    records.push(RecordV9 {
        version: 9,
        origin: "i2".into(),
        change: ChangeV9::Learned { texts: Vec::new() },
    });
    records
}

/// Changelog version 10: version 9's records, written as 10, and a learn record whose note
/// carries the reason version 10 appended (`doubt`).
pub(crate) fn records_v10() -> Vec<RecordV9> {
    let mut records: Vec<RecordV9> = records_v9()
        .into_iter()
        .map(|record| RecordV9 {
            version: 10,
            ..record
        })
        .collect();
    let doubt = LearnedTextV9 {
        partition: 1,
        offset: 300,
        analysis: analysis(),
        label: "geology".into(),
        confident: true,
        note: Some(PoolNoteV9 {
            id: "t10".into(),
            why: UnexplainedWire::Doubt,
            excerpt: "book me a table".into(),
            terms: terms(&[("table", 1)]),
            arrival_score: Some(0.4),
        }),
    };
    records.push(RecordV9 {
        version: 10,
        origin: "i3".into(),
        change: ChangeV9::Learned { texts: vec![doubt] },
    });
    records
}

fn graph() -> GraphStateWire {
    GraphStateWire {
        nodes: vec![
            NodeWire::Hub,
            NodeWire::Label("geology".into()),
            NodeWire::Keyword("lava".into()),
            NodeWire::Label("label 7".into()),
        ],
        edges: vec![
            (
                0,
                1,
                EdgeCostWire {
                    total: 0.5,
                    count: 1,
                },
            ),
            (
                2,
                1,
                EdgeCostWire {
                    total: 1.25,
                    count: 2,
                },
            ),
            (
                2,
                3,
                EdgeCostWire {
                    total: 0.75,
                    count: 1,
                },
            ),
        ],
        shared: vec![(1, vec![(2, 1)]), (3, vec![(2, 2)])],
    }
}

fn engine_parts() -> (
    GraphStateWire,
    CorpusStatsWire,
    Vec<LabelInfoWire>,
    Vec<IndexDocWire>,
    SpreadStateWire,
    Vec<OutcomeWire>,
) {
    let stats = CorpusStatsWire {
        documents: 4,
        document_frequency: vec![("lava".into(), 3), ("lava flow".into(), 1)],
    };
    let labels = vec![
        LabelInfoWire {
            id: "geology".into(),
            name: Some("Geology".into()),
            description: Some("rocks and volcanoes".into()),
            active: true,
            examples: 2,
        },
        LabelInfoWire {
            id: "label 7".into(),
            name: None,
            description: None,
            active: false,
            examples: 0,
        },
    ];
    let doc = |kind, label, text: Option<&str>| IndexDocWire {
        kind,
        label,
        terms: terms(&[("lava", 1)]),
        text: text.map(str::to_string),
    };
    let index = vec![
        doc(DocKindWire::Example, 0, Some("lava flows from the volcano")),
        doc(DocKindWire::Name, 0, None),
        doc(DocKindWire::Description, 0, None),
        doc(DocKindWire::Seen, 0, None),
        doc(DocKindWire::Tentative, 1, None),
    ];
    let spread = SpreadStateWire {
        folded: vec![("lava".into(), vec![0, 1])],
        pending: vec![("flow".into(), vec![0])],
        folded_texts: 64,
        pending_texts: 1,
    };
    let mut features = [0.0; 12];
    for (i, feature) in features.iter_mut().enumerate() {
        *feature = i as f64 / 8.0 - 0.5;
    }
    let outcomes = vec![
        OutcomeWire {
            features,
            right: true,
        },
        OutcomeWire {
            features: [1.0; 12],
            right: false,
        },
    ];
    (graph(), stats, labels, index, spread, outcomes)
}

/// Store format 2's snapshot: every node, document kind and pooling reason; a label with and
/// without a name and description; a pooled text with and without an arrival score, and one
/// past the scores (format 2 read it as none).
pub(crate) fn snapshot_v2() -> SnapshotV2 {
    let (graph, stats, labels, index, spread, outcomes) = engine_parts();
    SnapshotV2 {
        graph,
        stats,
        labels,
        index,
        label_version: 3,
        last_round: None,
        pool: PoolV2 {
            texts: WHYS
                .into_iter()
                .enumerate()
                .map(|(i, why)| pooled(&format!("p{i}"), why))
                .collect(),
            capacity: 5_000,
            pushed: 7,
            arrival_scores: vec![Some(0.07), None, Some(0.0), Some(0.02)],
        },
        spread,
        outcomes,
    }
}

/// Store format 3's snapshot: the same state, with a last round, each pooled text with its
/// arrival score (set and unset).
pub(crate) fn snapshot_v3() -> SnapshotV3 {
    let (graph, stats, labels, index, spread, outcomes) = engine_parts();
    SnapshotV3 {
        graph,
        stats,
        labels,
        index,
        label_version: 3,
        last_round: Some("r1".into()),
        spread,
        outcomes,
        pool: PoolV3 {
            texts: WHYS
                .into_iter()
                .enumerate()
                .map(|(i, why)| PooledEntryV3 {
                    text: pooled(&format!("p{i}"), why),
                    arrival_score: (i % 2 == 0).then_some(0.01 * i as f64),
                })
                .collect(),
            capacity: 5_000,
            pushed: 7,
        },
    }
}

/// Snapshot version 4's samples: version 3's state with a fitted probe weight, and without
/// one (never fitted).
pub(crate) fn snapshot_v4() -> [SnapshotV4; 2] {
    [Some(1.5), None].map(|fitted_probe_weight| SnapshotV4 {
        v3: snapshot_v3(),
        fitted_probe_weight,
    })
}

/// Snapshot version 5's samples: version 4's (4's layout), with a text pooled for the reason
/// version 5 appended (`doubt`).
pub(crate) fn snapshot_v5() -> [SnapshotV4; 2] {
    snapshot_v4().map(|mut v5| {
        v5.v3.pool.texts.push(PooledEntryV3 {
            text: pooled("p-doubt", UnexplainedWire::Doubt),
            arrival_score: Some(0.4),
        });
        v5
    })
}
