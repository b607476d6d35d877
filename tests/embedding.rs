//! The embedding signal with the real model (all-MiniLM-L6-v2 from scripts/embedding-model.sh,
//! which scripts/test.sh runs and points GORAG_EMBEDDING_MODEL at).

use std::path::PathBuf;
use std::process::Command;

use gorag::embed::MiniLm;
use gorag::engine::embedding::TextEncoder;

fn model_dir() -> PathBuf {
    let dir = std::env::var_os("GORAG_EMBEDDING_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(home).join(".cache/gorag/embedding/all-MiniLM-L6-v2")
        });
    assert!(
        dir.join("model.safetensors").is_file(),
        "no embedding model at {} — run scripts/embedding-model.sh (scripts/test.sh does)",
        dir.display()
    );
    dir
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn the_model_gives_the_reference_similarities() {
    let model = MiniLm::load(&model_dir()).unwrap();
    let eating = model.encode("A man is eating food.").unwrap();
    let bread = model.encode("A man is eating a piece of bread.").unwrap();
    let baby = model.encode("The girl is carrying a baby.").unwrap();
    assert_eq!(eating.len(), 384);
    assert!((cosine(&eating, &eating) - 1.0).abs() < 1e-5, "unit length");
    // Reference values (mean pooling, unit length) from an independent NumPy implementation
    // of the model over the same weights.
    assert!((cosine(&eating, &bread) - 0.7553).abs() < 2e-3);
    assert!((cosine(&eating, &baby) + 0.1050).abs() < 2e-3);
    assert_eq!(model.encode("A man is eating food.").unwrap(), eating);
}

#[test]
fn a_text_longer_than_the_model_reads_is_truncated_not_refused() {
    let model = MiniLm::load(&model_dir()).unwrap();
    let long = "galaxies and telescopes ".repeat(2_000);
    let vector = model.encode(&long).unwrap();
    assert_eq!(vector.len(), 384);
    assert!(vector.iter().all(|x| x.is_finite()));
}

#[test]
fn a_folder_without_the_model_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let error = MiniLm::load(empty.path()).err().unwrap().to_string();
    assert!(error.contains("config.json is missing"), "{error}");
    assert!(error.contains("scripts/embedding-model.sh"), "{error}");
}

#[test]
fn eval_with_the_embedding_signal_reports_every_round() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(["eval", "examples/tiny", "--llm", "none", "--quiet"])
        .args(["--strategy", "naive,hybrid", "--embedding-model"])
        .arg(model_dir())
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rounds = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|cells| cells.first() == Some(&"hybrid") && cells[1].parse::<u32>().is_ok())
        .count();
    assert_eq!(rounds, 2, "{stdout}");
    assert!(stdout.contains("embedding all-MiniLM-L6-v2"), "{stdout}");
    let report = std::fs::read_to_string(out.path().join("report.json")).unwrap();
    assert!(
        report.contains("all-MiniLM-L6-v2"),
        "the report names the model"
    );
}

#[test]
fn eval_refuses_a_missing_model_folder() {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(["eval", "examples/tiny", "--llm", "none", "--quiet"])
        .args(["--embedding-model", "/nonexistent/model"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("embedding model folder"), "{stderr}");
}
