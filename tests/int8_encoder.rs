//! all-MiniLM-L6-v2-int8: all-MiniLM-L6-v2 with int8 weights on ONNX Runtime, and the `nearest`
//! strategy in `gorag eval`.
//!
//! The model's tests need its folder (`scripts/embedding-model.sh all-MiniLM-L6-v2-int8`).
//! scripts/test.sh fetches it and sets GORAG_INT8_MODEL, and then a missing folder fails the
//! test; under a plain `cargo test` a test whose model is not in its default folder says so
//! and passes without running.

mod support;

use std::path::PathBuf;
use std::process::Command;

use gorag::embed::{SentenceModel, INT8_MODEL};
use gorag::engine::embedding::TextEncoder;

fn int8_dir() -> Option<PathBuf> {
    support::model_folder("GORAG_INT8_MODEL", INT8_MODEL, "model.onnx")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

const TEXTS: [&str; 6] = [
    "book a train ticket to edinburgh for tomorrow",
    "what is the weather like in paris",
    "A man is eating food.",
    "set an alarm for seven in the morning",
    "",
    "We study the convergence of stochastic gradient descent on non-convex objectives and show \
     that, under a bounded-variance assumption, the iterates reach an approximate stationary \
     point at the rate known for convex problems; experiments on image classification confirm it.",
];

#[test]
fn the_int8_model_gives_unit_vectors_of_384() {
    let Some(dir) = int8_dir() else { return };
    let model = SentenceModel::load(&dir).unwrap();
    assert_eq!(model.format(), "onnx");
    assert_eq!(model.dimension(), 384);
    for text in TEXTS {
        let vector = model.encode(text).unwrap();
        assert_eq!(vector.len(), 384, "{text}");
        assert!((cosine(&vector, &vector) - 1.0).abs() < 1e-4, "{text}");
        assert_eq!(
            model.encode(text).unwrap(),
            vector,
            "the same vector every time"
        );
    }
    let long = "galaxies and telescopes ".repeat(2_000);
    let vector = model.encode(&long).unwrap();
    assert!(vector.len() == 384 && vector.iter().all(|x| x.is_finite()));
}

#[test]
fn paraphrases_are_closer_than_unrelated_texts() {
    let Some(dir) = int8_dir() else { return };
    let model = SentenceModel::load(&dir).unwrap();
    let encode = |text: &str| model.encode(text).unwrap();
    let ticket = encode("book a train ticket for me");
    let paraphrase = encode("i want a train ticket to edinburgh");
    let alarm = encode("wake me up at seven tomorrow");
    let alarm_paraphrase = encode("set an alarm for 7 am");
    assert!(cosine(&ticket, &paraphrase) > cosine(&ticket, &alarm) + 0.2);
    assert!(cosine(&alarm, &alarm_paraphrase) > cosine(&alarm, &paraphrase) + 0.2);
    // The float model's reference pair (tests/embedding.rs: 0.7553 and -0.1050).
    let eating = encode("A man is eating food.");
    assert!((cosine(&eating, &encode("A man is eating a piece of bread.")) - 0.7553).abs() < 0.02);
    assert!((cosine(&eating, &encode("The girl is carrying a baby.")) + 0.1050).abs() < 0.02);
}

#[test]
fn the_int8_vectors_are_the_float_model_s() {
    let Some(dir) = int8_dir() else { return };
    let Some(float_dir) = support::model_folder(
        "GORAG_EMBEDDING_MODEL",
        "all-MiniLM-L6-v2",
        "model.safetensors",
    ) else {
        return;
    };
    let int8 = SentenceModel::load(&dir).unwrap();
    let float = SentenceModel::load(&float_dir).unwrap();
    assert_ne!(
        int8.fingerprint(),
        float.fingerprint(),
        "vectors kept for one are never read for the other"
    );
    // A text of words; the empty text (nothing but the two special tokens) loses more to
    // int8 rounding (0.996), and is no text anyone classifies.
    for text in TEXTS.iter().filter(|t| !t.is_empty()) {
        let similarity = cosine(&int8.encode(text).unwrap(), &float.encode(text).unwrap());
        eprintln!("{similarity:.5} {text:.40}");
        assert!(similarity >= 0.999, "{similarity} for {text:?}");
    }
}

#[test]
fn texts_encoded_at_once_get_the_vectors_they_get_one_by_one() {
    let Some(dir) = int8_dir() else { return };
    let model = SentenceModel::load(&dir).unwrap();
    let one_by_one: Vec<Vec<f32>> = TEXTS.iter().map(|t| model.encode(t).unwrap()).collect();
    std::thread::scope(|scope| {
        let running: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| TEXTS.map(|t| model.encode(t).unwrap())))
            .collect();
        for thread in running {
            assert_eq!(thread.join().unwrap().to_vec(), one_by_one);
        }
    });
}

#[test]
fn eval_compares_nearest_with_hybrid_on_the_int8_model() {
    let Some(dir) = int8_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(["eval", "examples/tiny", "--llm", "none", "--quiet"])
        .args(["--strategy", "nearest,hybrid", "--embedding-model"])
        .arg(&dir)
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
    let rows = |strategy: &str| {
        stdout
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|cells| cells.first() == Some(&strategy) && cells[1].parse::<u32>().is_ok())
            .count()
    };
    // Side by side: a row per round in each table for both.
    assert!(rows("nearest") > 0, "{stdout}");
    assert_eq!(rows("nearest"), rows("hybrid"), "{stdout}");
    assert!(out.path().join("texts-nearest.jsonl").is_file());
}

#[test]
fn nearest_without_an_encoder_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(["eval", "examples/tiny", "--llm", "none", "--quiet"])
        .args(["--strategy", "nearest", "--embedding-model", "none"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--strategy nearest"), "{stderr}");
    assert!(stderr.contains("--embedding-model"), "{stderr}");
}
