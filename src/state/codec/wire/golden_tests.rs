//! The golden files of `tests/fixtures/formats/`: each version's sample (`sample.rs`) as bytes
//! (`<format>-v<N>.hex`, one item a line) and as a layout (`<format>-v<N>.layout.json`, the
//! wire types traced by serde-reflection: it catches what the sample's bytes cannot, such as a
//! variant appended but not sampled, or a field retyped to one that writes the sample alike).
//!
//! - Every golden file of every version this build reads decodes to its sample.
//! - Every sample encodes to its golden bytes, and its wire types trace to its layout: for the
//!   version this build writes, a difference means a wire type changed without a new version;
//!   for an older one, that data this build must read would no longer read.
//! - A missing golden file is written when `GORAG_WRITE_GOLDEN=1`, and is an error otherwise.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_reflection::{Samples, Tracer, TracerConfig};

use super::engine::{DocKindWire, NodeWire};
use super::leaves::UnexplainedWire;
use super::record::{ChangeV9, LabelOutcomeV9, ReasonV9, RecordV9, RejectStageV9, VersionedRecord};
use super::sample;
use super::snapshot::{SnapshotV2, SnapshotV3, SnapshotV4, VersionedSnapshot};
use super::update::UpdateV9;
use crate::state::codec::changelog::POSTCARD_MARKER;
use crate::state::codec::snapshot::decode_versioned;
use crate::state::codec::{
    decode_logged, encode_logged, envelope, learn_records, Change, ChangeRecord, Snapshot,
    CHANGELOG_VERSION, SNAPSHOT_VERSION,
};
use crate::state::Update;

const WRITE: &str = "GORAG_WRITE_GOLDEN";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats")
}

fn hex(items: &[Vec<u8>]) -> String {
    items
        .iter()
        .map(|item| item.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
        .collect()
}

fn unhex(text: &str) -> Vec<Vec<u8>> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            (0..line.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&line[i..i + 2], 16).expect("hex"))
                .collect()
        })
        .collect()
}

/// The golden file `name` holds `expected`, or is written with it when asked to.
fn golden(name: &str, current: bool, expected: &str) -> String {
    let path = dir().join(name);
    match std::fs::read_to_string(&path) {
        Ok(found) => {
            if found != expected {
                let fix = if current {
                    "a wire type changed without a new version: raise the version and add a \
                     golden file (docs/design/formats.md, \"Add a version\")"
                } else {
                    "the layout of a version this build still reads changed, so data written in \
                     it would no longer read: keep that version's wire types as they were"
                };
                panic!(
                    "{} differs from what this build writes: {fix}.\n--- golden\n{found}\n--- \
                     this build\n{expected}",
                    path.display()
                );
            }
            found
        }
        Err(_) if std::env::var(WRITE).is_ok_and(|v| v == "1") => {
            std::fs::create_dir_all(dir()).expect("the fixtures folder");
            std::fs::write(&path, expected).expect("write the golden file");
            expected.to_string()
        }
        Err(_) => panic!(
            "{} is missing: write it with {WRITE}=1 cargo test --lib state::codec::wire, check \
             what it holds and commit it",
            path.display()
        ),
    }
}

/// The golden layout `name` of a version: for the version this build writes, exactly
/// `expected`; for an older one, a layout `expected` extends only by variants appended to its
/// enums (docs/design/formats.md: older data still reads).
fn golden_layout(name: &str, current: bool, expected: &str) {
    if current {
        golden(name, true, expected);
        return;
    }
    let found = golden_or_missing(name, expected);
    let (old, new): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&found).expect("a layout"),
        serde_json::from_str(expected).expect("a layout"),
    );
    assert!(
        appends_only(&old, &new),
        "{name}: the layout of a version this build still reads changed other than by variants \
         appended, so data written in it would no longer read: keep that version's wire types \
         as they were.\n--- golden\n{found}\n--- this build\n{expected}"
    );
}

/// The golden file `name`, written with `expected` when missing and asked to.
fn golden_or_missing(name: &str, expected: &str) -> String {
    match std::fs::read_to_string(dir().join(name)) {
        Ok(found) => found,
        Err(_) => golden(name, false, expected),
    }
}

/// Whether layout `new` is `old` with, at most, variants appended to its enums (each variant
/// keeps its place, name and contents).
fn appends_only(old: &serde_json::Value, new: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            if let (Some(Value::Object(was)), Some(Value::Object(is))) =
                (old.get("ENUM"), new.get("ENUM"))
            {
                return old.len() == 1
                    && new.len() == 1
                    && was
                        .iter()
                        .all(|(place, variant)| is.get(place) == Some(variant));
            }
            old.len() == new.len()
                && old
                    .iter()
                    .all(|(key, value)| new.get(key).is_some_and(|v| appends_only(value, v)))
        }
        _ => old == new,
    }
}

/// The layout of `T` and of the enums it holds, as JSON.
fn layout<T: DeserializeOwned>(
    trace: impl Fn(&mut Tracer) -> serde_reflection::Result<()>,
) -> String {
    let mut tracer = Tracer::new(TracerConfig::default());
    trace(&mut tracer).expect("the wire types trace");
    tracer
        .trace_type::<T>(&Samples::new())
        .expect("the wire types trace");
    let registry = tracer.registry().expect("every enum traced");
    serde_json::to_string_pretty(&registry).expect("JSON") + "\n"
}

fn changelog_layout() -> String {
    layout::<RecordV9>(|tracer| {
        tracer.trace_simple_type::<UnexplainedWire>()?;
        tracer.trace_simple_type::<ReasonV9>()?;
        tracer.trace_simple_type::<RejectStageV9>()?;
        tracer.trace_simple_type::<UpdateV9>()?;
        tracer.trace_simple_type::<LabelOutcomeV9>()?;
        tracer.trace_simple_type::<ChangeV9>()?;
        Ok(())
    })
}

fn snapshot_layout<T: DeserializeOwned>() -> String {
    layout::<T>(|tracer| {
        tracer.trace_simple_type::<UnexplainedWire>()?;
        tracer.trace_simple_type::<NodeWire>()?;
        tracer.trace_simple_type::<DocKindWire>()?;
        Ok(())
    })
}

fn record_bytes(record: &RecordV9) -> Vec<u8> {
    postcard::to_extend(record, vec![POSTCARD_MARKER]).expect("encodes")
}

/// A record with its analyses' phrases sorted (a map: read into one, its order is gone).
fn sorted(mut record: RecordV9) -> RecordV9 {
    let sort = |analysis: &mut super::update::AnalysisV9| analysis.phrases.counts.sort();
    match &mut record.change {
        ChangeV9::Learned { texts } => texts.iter_mut().for_each(|t| sort(&mut t.analysis)),
        ChangeV9::Label {
            outcome: LabelOutcomeV9::Apply(UpdateV9::Learn { analysis, .. }),
            ..
        } => sort(analysis),
        _ => {}
    }
    record
}

#[test]
fn changelog_v9_golden_file() {
    check_changelog(9, &sample::records_v9());
}

#[test]
fn changelog_v10_golden_file() {
    check_changelog(10, &sample::records_v10());
}

/// Version `version`'s golden files hold `samples`, which read back as the record the service
/// sees and encode again to the same bytes.
fn check_changelog(version: u32, samples: &[RecordV9]) {
    let encoded: Vec<Vec<u8>> = samples.iter().map(record_bytes).collect();
    let current = CHANGELOG_VERSION == version;
    let name = format!("changelog-v{version}");
    let bytes = unhex(&golden(&format!("{name}.hex"), current, &hex(&encoded)));
    golden_layout(&format!("{name}.layout.json"), current, &changelog_layout());
    assert_eq!(bytes.len(), samples.len());
    for (bytes, sample) in bytes.iter().zip(samples) {
        // The layout is picked by the record's version, and reads the sample back exactly.
        let versioned = VersionedRecord::decode(sample.version, &bytes[1..])
            .expect("a version this build reads")
            .expect("decodes");
        assert_eq!(versioned, VersionedRecord::V9(sample.clone()));
        // The record the service sees, and back to the same wire value.
        let decoded = ChangeRecord::decode(bytes).expect("decodes");
        let expected = ChangeRecord::try_from(sample.clone()).expect("converts");
        assert_eq!(decoded, expected);
        assert_eq!(sorted(RecordV9::from(decoded)), sorted(sample.clone()));
    }
}

/// The hot paths' borrowed writers write what the owned wire types write.
#[test]
fn borrowed_writers_write_the_wire_layout() {
    for sample in sample::records_v10() {
        let record = ChangeRecord::try_from(sample).expect("converts");
        if let Change::Learned { texts } = &record.change {
            let written = learn_records(&record.origin, texts, usize::MAX).expect("encodes");
            let payload = written.first().map(|(payload, _)| payload.clone());
            if texts.is_empty() {
                assert!(written.is_empty());
            } else {
                assert_eq!(payload, Some(record.encode()));
            }
        }
        if let Change::Label {
            outcome: crate::state::codec::LabelOutcome::Apply(update),
            ..
        } = &record.change
        {
            let logged = encode_logged(update).expect("encodes");
            let owned = postcard::to_stdvec(&UpdateV9::from(update.clone())).expect("encodes");
            assert_eq!(logged, owned, "{update:?}");
            assert_eq!(&decode_logged(&logged).expect("decodes"), update);
        }
    }
    // The learn record's place in `Change` and the learned text's in `Update`.
    let learn = Update::try_from(
        sample::records_v9()
            .into_iter()
            .find_map(|r| match r.change {
                ChangeV9::Label {
                    outcome: LabelOutcomeV9::Apply(update @ UpdateV9::Learn { .. }),
                    ..
                } => Some(update),
                _ => None,
            })
            .expect("a learn update"),
    )
    .expect("converts");
    assert_eq!(encode_logged(&learn).expect("encodes")[0], 3);
}

#[test]
fn snapshot_golden_files() {
    let v2 = sample::snapshot_v2();
    let v3 = sample::snapshot_v3();
    let bare = postcard::to_stdvec(&v2).expect("encodes");
    let sealed = envelope::seal(3, &v3).expect("encodes");
    let v2_bytes = unhex(&golden("snapshot-v2.hex", false, &hex(&[bare])));
    let v3_bytes = unhex(&golden("snapshot-v3.hex", false, &hex(&[sealed])));
    golden_layout(
        "snapshot-v2.layout.json",
        false,
        &snapshot_layout::<SnapshotV2>(),
    );
    golden_layout(
        "snapshot-v3.layout.json",
        false,
        &snapshot_layout::<SnapshotV3>(),
    );
    // Store format 2 held version 2 bare; format 3 holds the envelope.
    let read_v2 = decode_versioned(&v2_bytes[0], 2).expect("decodes");
    assert_eq!(read_v2, VersionedSnapshot::V2(v2.clone()));
    let read_v3 = decode_versioned(&v3_bytes[0], 3).expect("decodes");
    assert_eq!(read_v3, VersionedSnapshot::V3(v3.clone()));
    // Older layouts read as the newest: with no fitted weight.
    let (engine, pool) = Snapshot::decode(&v3_bytes[0], 3)
        .expect("decodes")
        .into_parts();
    assert_eq!(
        Snapshot::new(engine, pool).wire(),
        &SnapshotV4::from(v3.clone())
    );
    let upgraded = SnapshotV4::from(SnapshotV3::from(v2));
    let (engine, pool) = Snapshot::decode(&v2_bytes[0], 2)
        .expect("decodes")
        .into_parts();
    assert_eq!(pool.texts()[4].arrival_score, None, "past the scores");
    assert_eq!(Snapshot::new(engine, pool).wire(), &upgraded);
}

#[test]
fn snapshot_v4_golden_files() {
    check_snapshot_v4_layout(4, &sample::snapshot_v4());
}

#[test]
fn snapshot_v5_golden_files() {
    check_snapshot_v4_layout(5, &sample::snapshot_v5());
}

/// Snapshot version `version` (written in version 4's layout)'s golden files hold `samples`,
/// which read back and restore to the same wire value.
fn check_snapshot_v4_layout(version: u32, samples: &[SnapshotV4]) {
    let sealed: Vec<Vec<u8>> = samples
        .iter()
        .map(|v4| envelope::seal(version, v4).expect("encodes"))
        .collect();
    let current = SNAPSHOT_VERSION == version;
    let name = format!("snapshot-v{version}");
    let bytes = unhex(&golden(&format!("{name}.hex"), current, &hex(&sealed)));
    golden_layout(
        &format!("{name}.layout.json"),
        current,
        &snapshot_layout::<SnapshotV4>(),
    );
    for (read, v4) in bytes.iter().zip(samples) {
        let decoded = decode_versioned(read, 3).expect("decodes");
        assert_eq!(decoded, VersionedSnapshot::V4(v4.clone()));
        // What the state is restored from, and back: the engine's types hold every field.
        let (engine, pool) = Snapshot::decode(read, 3).expect("decodes").into_parts();
        assert_eq!(Snapshot::new(engine, pool).wire(), v4);
    }
    assert_eq!(bytes.len(), samples.len());
}

/// The wire types mirror the layouts the previous build wrote, byte for byte: its changelog's
/// records and its state folder's snapshot decode and encode again to the same bytes.
#[test]
fn the_previous_build_s_files_encode_again_to_the_same_bytes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let changelog =
        std::fs::read_to_string(root.join("changelog-d381e80/changelog.hex")).expect("fixture");
    for record in unhex(&changelog) {
        let wire: RecordV9 = postcard::from_bytes(&record[1..]).expect("decodes");
        assert_eq!(record_bytes(&wire), record);
    }
    let copy = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(root.join("state-d381e80"))
        .expect("fixture")
        .flatten()
    {
        std::fs::copy(entry.path(), copy.path().join(entry.file_name())).expect("copy");
    }
    let db = sled::open(copy.path()).expect("the fixture opens");
    let bytes = db.get(b"snapshot").expect("reads").expect("a snapshot");
    let wire: SnapshotV2 = postcard::from_bytes(&bytes).expect("decodes");
    assert_eq!(postcard::to_stdvec(&wire).expect("encodes"), bytes.to_vec());
}

/// An older version's layout may only gain variants at the end of its enums.
#[test]
fn older_layouts_accept_appended_variants_only() {
    let layout = |text: &str| -> serde_json::Value { serde_json::from_str(text).expect("JSON") };
    let old = layout(r#"{"Why": {"ENUM": {"0": {"A": "UNIT"}}}, "S": {"STRUCT": [{"a": "U32"}]}}"#);
    let appended = layout(
        r#"{"Why": {"ENUM": {"0": {"A": "UNIT"}, "1": {"B": "UNIT"}}}, "S": {"STRUCT": [{"a": "U32"}]}}"#,
    );
    let renamed =
        layout(r#"{"Why": {"ENUM": {"0": {"Z": "UNIT"}}}, "S": {"STRUCT": [{"a": "U32"}]}}"#);
    let field_added = layout(
        r#"{"Why": {"ENUM": {"0": {"A": "UNIT"}}}, "S": {"STRUCT": [{"a": "U32"}, {"b": "U32"}]}}"#,
    );
    assert!(appends_only(&old, &old));
    assert!(appends_only(&old, &appended));
    assert!(!appends_only(&appended, &old), "a variant dropped");
    assert!(!appends_only(&old, &renamed));
    assert!(!appends_only(&old, &field_added));
}
