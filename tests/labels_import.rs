//! `gorag labels import`: a taxonomy file becomes round events that the schema and the
//! service's decoder accept (dry run, no broker), and they reach the labels topic once.

// Only the broker helpers are used here.
#[allow(dead_code)]
mod support;

use std::process::Command;
use std::time::Duration;

use gorag::events::{decode, schema};
use serde_json::Value;
use support::kafka::{brokers, read_until, unique};

fn gorag(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(args)
        .env("GORAG_BROKERS", brokers())
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run gorag");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `gorag ARGS` for a dry run: no broker needed.
fn gorag_offline(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run gorag");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn label_event_schema() -> Value {
    schema::all()
        .into_iter()
        .find(|(name, _)| *name == "label-event")
        .map(|(_, s)| s)
        .expect("label-event schema")
}

#[test]
fn a_csv_and_a_jsonl_taxonomy_give_the_same_valid_round() {
    let validator = jsonschema::validator_for(&label_event_schema()).expect("schema compiles");
    let mut outputs = Vec::new();
    for file in [
        "examples/taxonomy/support.csv",
        "examples/taxonomy/support.jsonl",
    ] {
        let (ok, out, err) = gorag(&["labels", "import", file, "--round", "r1", "--dry-run"]);
        assert!(ok, "{file}: {err}");
        assert!(
            err.contains("1 round(s), 3 label(s), 5 example(s)"),
            "{err}"
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1, "{out}");
        let event: Value = serde_json::from_str(lines[0]).expect("JSON");
        let errors: Vec<String> = validator
            .iter_errors(&event)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{file}: {errors:?}");
        decode::label_event(lines[0].as_bytes()).expect("the service's decoder accepts it");
        assert_eq!(
            event["labels"][1]["examples"].as_array().map(Vec::len),
            Some(2)
        );
        outputs.push(out);
    }
    assert_eq!(outputs[0], outputs[1]);
}

#[test]
fn a_bad_taxonomy_is_refused_with_every_line_at_fault() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, "label,name\na,A\na,B\n,x\n").expect("write");
    let (ok, out, err) = gorag(&["labels", "import", path.to_str().unwrap(), "--dry-run"]);
    assert!(!ok);
    assert!(out.is_empty(), "nothing printed as events: {out}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains("line 3: label \"a\" has name \"B\""), "{err}");
    assert!(err.contains("line 4: empty label id"), "{err}");
    assert!(err.contains("what to do:"), "{err}");
    assert!(!err.contains("backtrace"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_import_reaches_the_labels_topic_once() {
    let topic = unique("labels");
    let file = "examples/taxonomy/support.csv";
    let (ok, _, err) = gorag(&["labels", "import", file, "--topic", &topic]);
    assert!(ok, "{err}");
    assert!(err.contains("published to"), "{err}");
    let records = read_until(&topic, Duration::from_secs(30), |r| !r.is_empty());
    assert_eq!(records.len(), 1);
    let round = records[0].json();
    assert_eq!(
        round["round"], "support",
        "the file's name is the default round"
    );
    assert_eq!(records[0].key.as_deref(), Some("support"));

    // Again: the round and its labels exist, so nothing is sent.
    let (ok, _, err) = gorag(&["labels", "import", file, "--topic", &topic]);
    assert!(!ok);
    assert!(
        err.contains("already has round \"support\", label \"refunds\""),
        "{err}"
    );
    let again = read_until(&topic, Duration::from_secs(3), |r| r.len() > 1);
    assert_eq!(again.len(), 1, "a refused import published nothing");
}

/// A taxonomy past a bound of docs/guide/bounds.md is refused before anything is published,
/// each row at fault named with its line and the bound's key; raising the bound lets it through.
#[test]
fn a_taxonomy_past_a_bound_is_refused_with_its_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.csv");
    let mut rows = String::from("label,description,example\n");
    rows.push_str(&format!("billing,{},charged twice\n", "d".repeat(5000)));
    for i in 0..4 {
        rows.push_str(&format!("l{i},,an example\n"));
    }
    std::fs::write(&path, rows).expect("write");
    let file = path.to_str().unwrap();
    let (ok, out, err) = gorag_offline(&[
        "labels",
        "import",
        file,
        "--dry-run",
        "--set",
        "labels.max_per_round=3",
    ]);
    assert!(!ok);
    assert!(out.is_empty(), "nothing printed as events: {out}");
    assert!(
        err.contains("line 2: the description is 5000 bytes; the limit (labels.max_description_bytes) is 4096"),
        "{err}"
    );
    assert!(
        err.contains("line 6: label \"l3\" is round \"big\"'s label 4; the limit (labels.max_per_round) is 3"),
        "{err}"
    );
    assert!(err.len() < 3_000, "the description is quoted short: {err}");
    let (ok, out, err) = gorag_offline(&[
        "labels",
        "import",
        file,
        "--dry-run",
        "--set",
        "labels.max_description_bytes=5000",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
}
