//! The embedding signal with the real models (all-MiniLM-L6-v2 and potion-base-8M from
//! scripts/embedding-model.sh, which scripts/test.sh runs and points GORAG_EMBEDDING_MODEL and
//! GORAG_STATIC_MODEL at).

#[allow(dead_code)] // this binary uses the broker helpers only
mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use gorag::embed::SentenceModel;
use gorag::engine::embedding::TextEncoder;
use support::example;
use support::kafka::{
    predict_the_first_round, predicted_ids, publish_json, read_until, Service, Topics,
};

/// A model folder: `variable` when set, else scripts/embedding-model.sh's folder for `name`.
fn folder(variable: &str, name: &str) -> PathBuf {
    // Where gorag itself looks for a model by name.
    let by_name = || {
        gorag::embed::EmbeddingModel::Named(name.to_string())
            .folder()
            .unwrap_or_default()
    };
    let dir = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(by_name);
    assert!(
        dir.join("model.safetensors").is_file(),
        "no embedding model at {} — run scripts/embedding-model.sh {name} (scripts/test.sh does)",
        dir.display()
    );
    dir
}

fn model_dir() -> PathBuf {
    folder("GORAG_EMBEDDING_MODEL", "all-MiniLM-L6-v2")
}

/// The static model's folder (potion-base-8M).
fn static_model_dir() -> PathBuf {
    folder("GORAG_STATIC_MODEL", "potion-base-8M")
}

#[test]
fn the_static_model_gives_model2vec_s_similarities() {
    let model = SentenceModel::load(&static_model_dir()).unwrap();
    assert_eq!(model.format(), "static");
    assert_eq!(model.dimension(), 256);
    let cat = model.encode("The cat sat on the mat.").unwrap();
    let kitten = model.encode("A kitten is resting on the rug.").unwrap();
    let earnings = model
        .encode("Quarterly earnings rose sharply for the bank.")
        .unwrap();
    assert_eq!(cat.len(), 256);
    assert!((cosine(&cat, &cat) - 1.0).abs() < 1e-5, "unit length");
    // Reference values from MinishLab's own Python package (model2vec 0.10.0) on the same files.
    assert!((cosine(&cat, &kitten) - 0.407).abs() < 2e-3);
    assert!((cosine(&cat, &earnings) - 0.025).abs() < 2e-3);
    let long = "galaxies and telescopes ".repeat(2_000);
    assert!(model.encode(&long).unwrap().iter().all(|x| x.is_finite()));
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn the_model_gives_the_reference_similarities() {
    let model = SentenceModel::load(&model_dir()).unwrap();
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
    let model = SentenceModel::load(&model_dir()).unwrap();
    let long = "galaxies and telescopes ".repeat(2_000);
    let vector = model.encode(&long).unwrap();
    assert_eq!(vector.len(), 384);
    assert!(vector.iter().all(|x| x.is_finite()));
}

#[test]
fn a_folder_without_the_model_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let error = SentenceModel::load(empty.path()).err().unwrap().to_string();
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
    // A row per round in the accuracy table and in the confidence table.
    assert_eq!(rounds, 4, "{stdout}");
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
    assert!(stderr.contains("/nonexistent/model"), "{stderr}");
    assert!(stderr.contains("scripts/embedding-model.sh"), "{stderr}");
}

/// `$GORAG_HOME` holding the static model (the folder scripts/embedding-model.sh filled).
fn home_with_the_static_model() -> PathBuf {
    let dir = static_model_dir();
    dir.parent()
        .and_then(|embedding| embedding.parent())
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// With no flag, eval uses the default model by name; `none` turns the signal off.
#[test]
fn eval_uses_the_static_model_by_default_and_none_turns_it_off() {
    let run = |extra: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
            .args(["eval", "examples/tiny", "--llm", "none", "--quiet"])
            .args(extra)
            .arg("--out")
            .arg(out.path())
            .env("GORAG_HOME", home_with_the_static_model())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let default = run(&[]);
    assert!(default.contains("embedding potion-base-8M"), "{default}");
    let off = run(&["--embedding-model", "none"]);
    assert!(!off.contains("embedding "), "{off}");
}

/// Strategies that never read a text's meaning need no model, fetched or not.
#[test]
fn strategies_without_a_first_hop_run_without_the_model() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(["eval", "examples/tiny", "--llm", "none", "--quiet"])
        .args(["--strategy", "naive,steiner", "--out"])
        .arg(&out)
        .env("GORAG_HOME", home.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("embedding "), "{stdout}");
}

/// A service whose default model was never fetched stops at start with one sentence naming
/// the folder, the command that fetches it and how to turn the signal off.
#[test]
fn serve_names_a_missing_model_and_the_command_that_fetches_it() {
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(["serve", "--set", "llm.url=none"])
        .env("GORAG_HOME", home.path())
        .env_remove("GORAG_CONFIG")
        // The state folder defaults to `$GORAG_HOME/state`: the temporary folder's.
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let folder = home.path().join("embedding/potion-base-8M");
    assert!(stderr.contains(&folder.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("scripts/embedding-model.sh potion-base-8M"),
        "{stderr}"
    );
    assert!(stderr.contains("\"none\""), "{stderr}");
}

/// A service's topics and settings: no LLM, the embedding signal on, state under `dir`.
fn graph_only_with_signal(dir: &std::path::Path, test: &str) -> (Topics, Vec<String>) {
    let topics = Topics::new(test);
    let mut sets = topics.service_sets(&dir.join("state"));
    sets.extend([
        "llm.url=none".into(),
        format!("engine.embedding_model={}", model_dir().display()),
    ]);
    (topics, sets)
}

/// `gorag serve` with the signal on keeps the labels' vectors in its state: a restart reads
/// them back instead of encoding every name and example again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_service_reads_the_labels_vectors_back() {
    let dir = tempfile::tempdir().unwrap();
    let (topics, sets) = graph_only_with_signal(dir.path(), "embedding-restart");
    let mut first = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| first.wait_ready());
    // Three labels with a name and two examples each, encoded as the round arrives.
    let records = predict_the_first_round(&topics, Duration::from_secs(120)).await;
    assert_eq!(predicted_ids(&records).len(), 4, "{}", first.log_text());
    let log = tokio::task::block_in_place(|| first.stop());
    assert!(
        signal_on(&log).contains("read_back=0 encoded=0"),
        "nothing to encode before the first round: {log}"
    );
    // The round's material went through the model on the blocking pool, before the loop
    // applied the round (reading the vectors back).
    assert!(
        log.lines()
            .any(|l| l.contains("encoded ahead") && l.contains("texts=9 reached=9")),
        "{log}"
    );

    let mut second = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| second.wait_ready());
    let log = tokio::task::block_in_place(|| second.stop());
    assert!(
        signal_on(&log).contains("read_back=9 encoded=0"),
        "3 names and 6 examples read back, none encoded: {log}"
    );
}

/// The startup line that reports the signal on (empty when there is none).
fn signal_on(log: &str) -> &str {
    log.lines()
        .find(|l| l.contains("embedding signal on"))
        .unwrap_or_default()
}

/// A round whose encoding takes seconds: `labels` labels, each with four examples of distinct
/// words (≈ 200 tokens each).
fn slow_round(round: &str, labels: usize) -> String {
    let labels: Vec<serde_json::Value> = (0..labels)
        .map(|l| {
            let examples: Vec<String> = (0..4)
                .map(|e| {
                    (0..150)
                        .map(|w| format!("w{l}x{e}y{w}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            serde_json::json!({"id": format!("{round}-label-{l}"), "examples": examples})
        })
        .collect();
    serde_json::json!({"type": "round", "round": round, "labels": labels}).to_string()
}

/// SIGTERM once `service` encodes a round ahead: a clean exit that says `said`, nothing applied.
fn stop_while_encoding_ahead(service: &mut Service, said: &str) {
    let (status, log) = tokio::task::block_in_place(|| {
        service.wait_for_log("encoding labelled material ahead");
        service.terminate_within(Duration::from_secs(20))
    });
    assert!(status.success(), "{log}");
    assert!(log.contains(said), "{log}");
    assert!(
        !log.contains("label event applied"),
        "nothing applied: {log}"
    );
}

/// SIGTERM while a round is encoded ahead of being applied — serving, then while the next
/// start catches up: the service stops at once, cleanly, and neither that round nor the one
/// after it is lost — the start that is let finish applies both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_whose_encoding_the_drain_cuts_short_is_applied_by_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let (topics, mut sets) = graph_only_with_signal(dir.path(), "embedding-cut-short");
    // The drain is what is tested: 80 long examples of words no other text shares make the
    // probe's fits take seconds in a debug build, past the 60 s a start may take here.
    sets.push("engine.ranking.probe_weight=0".into());
    let mut first = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| first.wait_ready());
    // Nothing to encode in the second round: were the first skipped, it would be applied.
    let small = serde_json::json!({"type": "round", "round": "r2",
        "labels": [{"id": "r2-label", "description": "a label known by its description"}]});
    publish_json(&topics.labels, &[slow_round("r1", 20), small.to_string()]).await;
    // Texts published after the rounds: they must not be classified without them.
    publish_json(&topics.texts, &example("texts-1.jsonl")).await;
    stop_while_encoding_ahead(&mut first, "stopped while encoding");

    // Stopped again while the next start catches up: a clean stop before serving.
    let mut second = Service::start(dir.path(), &sets);
    stop_while_encoding_ahead(&mut second, "stopped before serving");

    let mut second = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| {
        second.wait_ready();
        second.wait_for_log_count("label event applied", 2);
    });
    // Each text predicted once, by the start that had both rounds.
    let records = tokio::task::block_in_place(|| {
        read_until(&topics.predictions, Duration::from_secs(60), |r| {
            predicted_ids(r).len() >= 4
        })
    });
    assert_eq!(records.len(), 4, "{}", second.log_text());
    let log = tokio::task::block_in_place(|| second.stop());
    let applied: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("label event applied"))
        .collect();
    assert!(applied[0].contains("labels_added=20"), "{log}");
    assert!(applied[1].contains("labels_added=1"), "{log}");
}
