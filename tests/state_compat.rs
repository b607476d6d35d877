//! A state folder the previous build wrote (tests/fixtures/state-d381e80) is read by this one,
//! as the compatibility policy of `src/state/codec/mod.rs` says: the same labels and documents,
//! and the same predictions as that build made from it.

use std::path::{Path, PathBuf};
use std::process::Command;

const FIXTURE: &str = "tests/fixtures/state-d381e80";

fn gorag(args: &[&str], dir: &Path) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run gorag");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A copy of the fixture (sled writes to the folder it opens), with its labels and texts.
fn copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    std::fs::create_dir(&state).expect("mkdir");
    for entry in std::fs::read_dir(FIXTURE).expect("the fixture").flatten() {
        let name = entry.file_name();
        let to: PathBuf = if name == "labels.csv" || name == "texts.csv" {
            dir.path().join(&name)
        } else {
            state.join(&name)
        };
        std::fs::copy(entry.path(), to).expect("copy");
    }
    dir
}

#[test]
fn a_state_folder_of_the_previous_build_is_read() {
    let dir = copy();
    let (ok, stdout, stderr) = gorag(&["state", "--dir", "state"], dir.path());
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(summary["labels"], 3);
    assert_eq!(summary["documents"], 10);
    assert_eq!(summary["last_round"], "labels");

    let (ok, stdout, stderr) = gorag(
        &[
            "classify",
            "--labels",
            "labels.csv",
            "--state",
            "state",
            "--set",
            "engine.embedding_model=none",
            "texts.csv",
        ],
        dir.path(),
    );
    assert!(ok, "{stderr}");
    assert!(
        !stderr.contains("label event"),
        "nothing new to apply: {stderr}"
    );
    let predicted: Vec<(String, String, f64)> = stdout
        .lines()
        .map(|line| {
            let p: serde_json::Value = serde_json::from_str(line).expect("a prediction");
            let field = |k: &str| p[k].as_str().unwrap_or_default().to_string();
            let confidence = p["confidence"].as_f64().unwrap_or_default();
            (
                field("text_id"),
                field("label"),
                (confidence * 100.0).round() / 100.0,
            )
        })
        .collect();
    // What the previous build printed for the same run (the fixture's README).
    let expected = [
        ("t1", "billing", 0.30),
        ("t2", "login", 0.94),
        ("t3", "shipping", 0.32),
        ("t4", "billing", 0.96),
    ];
    let expected: Vec<(String, String, f64)> = expected
        .iter()
        .map(|(id, label, c)| (id.to_string(), label.to_string(), *c))
        .collect();
    assert_eq!(predicted, expected);
    let (_, stdout, _) = gorag(&["state", "--dir", "state"], dir.path());
    assert!(stdout.contains("\"documents\": 14"), "{stdout}");
}
