//! `gorag eval` measures the path users run: one stream — the tiny example's rounds, each
//! followed by its held-out texts — through `gorag eval` and through `gorag classify`, and every
//! text classified online gets the same prediction from both (label, status, confidence,
//! candidates). Both change the state only through `State::apply`. Needs the default sentence
//! encoder in `$GORAG_HOME` (scripts/test.sh fetches it).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

fn gorag(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(args)
        .env_remove("GORAG_CONFIG")
        .output()
        .expect("run gorag");
    assert!(
        output.status.success(),
        "gorag {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// (label, text) of a dataset file.
fn rows(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .expect("dataset file")
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(label, text)| (label.to_string(), text.to_string()))
        .collect()
}

/// The stream `gorag eval` runs, as `gorag classify` reads it: each round's labels (named, as
/// eval names readable ids) with their examples, then the round's held-out texts.
fn stream(dataset: &Path) -> String {
    let mut lines = Vec::new();
    for round in 1..=2 {
        let folder = dataset.join(format!("1shot/r{round}"));
        let mut labels: Vec<(String, Vec<String>)> = Vec::new();
        for (label, text) in rows(&folder.join("train.tsv")) {
            match labels.iter_mut().find(|(id, _)| *id == label) {
                Some((_, examples)) => examples.push(text),
                None => labels.push((label, vec![text])),
            }
        }
        let specs: Vec<Value> = labels
            .iter()
            .map(|(id, examples)| json!({"id": id, "name": id.replace('_', " "), "examples": examples}))
            .collect();
        lines.push(json!({"type": "round", "round": format!("r{round}"), "labels": specs}));
        for (i, (_, text)) in rows(&folder.join("test.tsv")).iter().enumerate() {
            lines.push(json!({"id": format!("r{round}-{}", i + 1), "text": text}));
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn eval_and_classify_give_every_text_the_same_prediction() {
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tiny");
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("eval");
    gorag(&[
        "eval",
        &dataset.display().to_string(),
        "--shots",
        "1",
        "--llm",
        "none",
        "--out",
        &out.display().to_string(),
    ]);
    // The texts each round classified online (its own held-out texts), by the id classify
    // gives them.
    let evaluated: BTreeMap<String, Value> =
        std::fs::read_to_string(out.join("texts-hybrid.jsonl"))
            .expect("texts file")
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("json"))
            .filter(|t| t["round"] == t["text_round"])
            .map(|t| (format!("r{}-{}", t["round"], t["line"]), t))
            .collect();
    let input = dir.path().join("stream.jsonl");
    std::fs::write(&input, stream(&dataset)).expect("write");
    let predictions = gorag(&["classify", "--llm", "none", &input.display().to_string()]);
    let classified: BTreeMap<String, Value> = predictions
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .map(|p| (p["text_id"].as_str().unwrap_or_default().to_string(), p))
        .collect();
    assert_eq!(evaluated.len(), 18, "{evaluated:?}");
    assert_eq!(
        evaluated.keys().collect::<Vec<_>>(),
        classified.keys().collect::<Vec<_>>()
    );
    for (id, text) in &evaluated {
        let prediction = &classified[id];
        assert_eq!(
            text["status"], prediction["status"],
            "{id}: {text} / {prediction}"
        );
        if prediction["status"] != "no_match" {
            assert_eq!(
                text["label"], prediction["label"],
                "{id}: {text} / {prediction}"
            );
        }
        assert_eq!(text["candidates"], prediction["candidates"], "{id}");
        let (a, b) = (
            text["confidence"].as_f64().unwrap_or(-1.0),
            prediction["confidence"].as_f64().unwrap_or(-2.0),
        );
        // The two files may print it to different precisions.
        assert!((a - b).abs() < 1e-4, "{id}: confidence {a} / {b}");
    }
}
