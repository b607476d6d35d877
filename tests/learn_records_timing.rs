//! How long the changelog's hot path takes: encoding learn records from borrowed texts
//! (`learn_records`, every classified text goes through it) and decoding them (every replica
//! reads every record), beside the same done as builds before the codec's wire types did it
//! (serde straight over the engine's types: the bytes must be the same). Not a pass/fail test:
//! run it by hand, with the crate optimised, and compare:
//!
//!   cargo test --config 'profile.dev.package.gorag.opt-level=3' --test learn_records_timing \
//!     -- --ignored --nocapture

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use gorag::discovery::{PoolNote, Unexplained};
use gorag::engine::{Analysis, Engine, EngineConfig, NewLabel};
use gorag::position::Position;
use gorag::state::codec::{learn_records, ChangeRecord, LearnedText};
use gorag::state::{State, Update};

const WORDS: [&str; 24] = [
    "invoice",
    "refund",
    "password",
    "login",
    "parcel",
    "delivery",
    "account",
    "charge",
    "reset",
    "tracking",
    "order",
    "payment",
    "card",
    "email",
    "address",
    "late",
    "broken",
    "screen",
    "error",
    "billing",
    "subscription",
    "cancel",
    "upgrade",
    "support",
];

/// A ticket of ~80 words, different for each `seed`.
fn text(seed: usize) -> String {
    (0..80)
        .map(|i| WORDS[(seed * 7 + i * i * 13 + i) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn texts(count: usize) -> Vec<LearnedText> {
    let mut state = State::new(Engine::new(EngineConfig::default()), 100);
    state
        .apply(&Update::Round {
            round: "r1".into(),
            labels: ["billing", "login", "shipping"]
                .iter()
                .enumerate()
                .map(|(i, id)| NewLabel {
                    id: id.to_string(),
                    name: None,
                    description: None,
                    examples: vec![text(i), text(i + 100)],
                })
                .collect(),
        })
        .expect("a valid round");
    let engine = state.engine();
    (0..count)
        .map(|i| {
            let body = text(i + 1000);
            let analysis = engine.analyzer().analyze(&body);
            // One text in four poorly explained: its note carries all its terms.
            let note = (i % 4 == 0).then(|| {
                PoolNote::new(
                    &format!("t{i}"),
                    &body,
                    &engine.analyzer().poolable_terms(&analysis.terms),
                    Unexplained::WeakScore,
                    Some(0.05),
                )
            });
            LearnedText {
                position: Position::new(0, i as i64),
                analysis: engine.analyzer().learnable(&analysis),
                label: "billing".into(),
                confident: i % 2 == 0,
                note,
            }
        })
        .collect()
}

/// The learn record as builds before the wire types wrote it: serde's derives over the
/// engine's types, borrowed.
#[derive(Serialize)]
struct DirectRecord<'a> {
    version: u32,
    origin: &'a str,
    change: DirectChange<'a>,
}

struct DirectChange<'a>(&'a [LearnedText]);

#[derive(Serialize)]
struct DirectText<'a> {
    partition: i32,
    offset: i64,
    analysis: &'a Analysis,
    label: &'a str,
    confident: bool,
    note: &'a Option<PoolNote>,
}

impl Serialize for DirectChange<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStructVariant;
        struct Texts<'a>(&'a [LearnedText]);
        impl Serialize for Texts<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter().map(|t| DirectText {
                    partition: t.position.partition,
                    offset: t.position.offset,
                    analysis: &t.analysis,
                    label: &t.label,
                    confident: t.confident,
                    note: &t.note,
                }))
            }
        }
        let mut variant = serializer.serialize_struct_variant("Change", 5, "learned", 1)?;
        variant.serialize_field("texts", &Texts(self.0))?;
        variant.end()
    }
}

/// A learn record as builds before the wire types read it (places 0 to 4 are not learn
/// records).
#[derive(Deserialize)]
#[allow(dead_code)] // decoded to be timed
struct OwnedRecord {
    version: u32,
    origin: String,
    change: OwnedChange,
}

#[derive(Deserialize)]
enum Never {}

#[derive(Deserialize)]
#[allow(dead_code)]
enum OwnedChange {
    Place0(Never),
    Place1(Never),
    Place2(Never),
    Place3(Never),
    Place4(Never),
    Learned { texts: Vec<OwnedText> },
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct OwnedText {
    partition: i32,
    offset: i64,
    analysis: Analysis,
    label: String,
    confident: bool,
    note: Option<PoolNote>,
}

/// Per text, the best of `runs` runs of `work` over `texts` texts.
fn per_text(texts: usize, runs: usize, mut work: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            work();
            started.elapsed() / texts as u32
        })
        .min()
        .unwrap_or_default()
}

#[test]
#[ignore = "a timing, run by hand (see the module comment)"]
fn learn_records_encode_and_decode_timing() {
    let texts = texts(2_000);
    // Batches of 50 texts, as a group commit gathers them, under a 1 MB record limit.
    let batches: Vec<&[LearnedText]> = texts.chunks(50).collect();
    let mut records = Vec::new();
    let encode = per_text(texts.len(), 15, || {
        records = batches
            .iter()
            .flat_map(|batch| learn_records("i1", batch, 1 << 20).expect("encodes"))
            .map(|(payload, _)| payload)
            .collect();
    });
    let mut direct = Vec::new();
    let encode_direct = per_text(texts.len(), 15, || {
        direct = batches
            .iter()
            .map(|batch| {
                let record = DirectRecord {
                    version: 9,
                    origin: "i1",
                    change: DirectChange(batch),
                };
                postcard::to_extend(&record, vec![0xC2]).expect("encodes")
            })
            .collect();
    });
    assert_eq!(records, direct, "the same bytes as before the wire types");
    let decode = per_text(texts.len(), 15, || {
        for payload in &records {
            std::hint::black_box(ChangeRecord::decode(payload).expect("decodes"));
        }
    });
    let decode_direct = per_text(texts.len(), 15, || {
        for payload in &records {
            let record: OwnedRecord = postcard::from_bytes(&payload[1..]).expect("decodes");
            std::hint::black_box(record);
        }
    });
    let bytes: usize = records.iter().map(Vec::len).sum();
    eprintln!(
        "learn records: {} texts, {} records, {bytes} bytes, per text (best of 15):\n  encode: \
         {encode:?} (serde over the engine's types: {encode_direct:?})\n  decode: {decode:?} \
         (serde into the engine's types: {decode_direct:?})",
        texts.len(),
        records.len(),
    );
}
