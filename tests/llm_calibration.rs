//! `gorag eval --ask-below 1` against scripted endpoints of known quality (a real HTTP server
//! on loopback): a good endpoint earns a weight and a threshold that beat retrieval alone with
//! few calls; an endpoint that answers at random is never asked.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use support::fake_llm::{FakeLlm, Reply};

const LABELS: [&str; 6] = [
    "astronomy",
    "cooking",
    "football",
    "finance",
    "medicine",
    "music",
];

/// Words that belong to each label (same order as [`LABELS`]).
const VOCABULARY: [[&str; 8]; 6] = [
    [
        "telescope",
        "galaxy",
        "planet",
        "orbit",
        "comet",
        "nebula",
        "stars",
        "asteroid",
    ],
    [
        "dough", "oven", "flour", "simmer", "recipe", "butter", "spices", "saucepan",
    ],
    [
        "striker", "goal", "referee", "penalty", "league", "midfield", "keeper", "stadium",
    ],
    [
        "shares",
        "dividend",
        "investor",
        "bonds",
        "earnings",
        "market",
        "interest",
        "portfolio",
    ],
    [
        "patient",
        "doctor",
        "vaccine",
        "symptoms",
        "clinic",
        "diagnosis",
        "surgery",
        "therapy",
    ],
    [
        "guitar",
        "melody",
        "chorus",
        "concert",
        "drummer",
        "album",
        "rhythm",
        "orchestra",
    ],
];

const FILLER: [&str; 8] = [
    "yesterday",
    "people",
    "report",
    "several",
    "really",
    "another",
    "around",
    "during",
];

/// A small deterministic generator (64-bit LCG).
struct Draws(u64);

impl Draws {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Two rounds of three labels: one labelled example each, and 40 held-out (`dev`) texts per
/// label that mix a few of the label's words with as many of another active label's, so that
/// retrieval alone is often unsure and sometimes wrong. Returns each text's gold label.
fn write_dataset(dir: &Path) -> HashMap<String, String> {
    let mut draws = Draws(7);
    let mut gold = HashMap::new();
    for round in 0..2 {
        let folder = dir.join(format!("1shot/r{}", round + 1));
        std::fs::create_dir_all(&folder).expect("dataset folder");
        let active: Vec<usize> = (0..3 * (round + 1)).collect();
        let mut train = String::new();
        let mut dev = String::new();
        for l in 3 * round..3 * round + 3 {
            let words: Vec<&str> = VOCABULARY[l][..5].to_vec();
            train.push_str(&format!(
                "{}\tA text about {}.\n",
                LABELS[l],
                words.join(" ")
            ));
            for i in 0..40 {
                let mut words = Vec::new();
                for _ in 0..2 + draws.below(2) {
                    words.push(VOCABULARY[l][draws.below(8)]);
                }
                let other = active[draws.below(active.len())];
                if other != l {
                    for _ in 0..1 + draws.below(3) {
                        words.push(VOCABULARY[other][draws.below(8)]);
                    }
                }
                for _ in 0..3 {
                    words.push(FILLER[draws.below(FILLER.len())]);
                }
                let text = format!("Text {round}-{l}-{i}: {}.", words.join(" "));
                dev.push_str(&format!("{}\t{text}\n", LABELS[l]));
                gold.insert(text, LABELS[l].to_string());
            }
        }
        std::fs::write(folder.join("train.tsv"), train).expect("train.tsv");
        std::fs::write(folder.join("dev.tsv"), dev).expect("dev.tsv");
    }
    gold
}

/// `gorag eval` of the dataset asking `llm` about every text; its report.json.
async fn calibrate(dataset: &Path, llm: &FakeLlm, out: &Path) -> serde_json::Value {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_gorag"));
    command
        .arg("eval")
        .arg(dataset)
        .args(["--held-out", "dev", "--ask-below", "1", "--quiet"])
        .args([
            "--llm",
            &llm.url,
            "--model",
            "fake-model",
            "--llm-concurrency",
            "4",
        ])
        .arg("--out")
        .arg(out);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("run gorag");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("report"))
        .expect("JSON")
}

fn retrieval_accuracy(run: &serde_json::Value) -> f64 {
    let rounds = run["rounds"].as_array().expect("rounds");
    rounds
        .iter()
        .map(|r| r["graph_accuracy"].as_f64().expect("graph_accuracy"))
        .sum::<f64>()
        / rounds.len() as f64
}

/// The mean over rounds of each curve setting: (weight, ask_below, accuracy, calls per text).
fn mean_curve(run: &serde_json::Value) -> Vec<(f64, f64, f64, f64)> {
    let rounds = run["rounds"].as_array().expect("rounds");
    let settings = rounds[0]["llm_curve"].as_array().expect("curve").len();
    (0..settings)
        .map(|i| {
            let at = |field: &str| {
                rounds
                    .iter()
                    .map(|r| r["llm_curve"][i][field].as_f64().expect("number"))
                    .sum::<f64>()
                    / rounds.len() as f64
            };
            (
                at("llm_weight"),
                at("ask_below"),
                at("accuracy"),
                at("calls_per_text"),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_good_endpoint_earns_a_weight_and_a_random_one_is_never_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gold = Arc::new(write_dataset(dir.path()));

    let good = FakeLlm::start(Reply::Oracle {
        gold: gold.clone(),
        right: Some(0.9),
    })
    .await;
    let report = calibrate(dir.path(), &good, &dir.path().join("good")).await;
    let run = &report["runs"][0];
    let retrieval = retrieval_accuracy(run);
    assert!(
        retrieval < 0.95,
        "retrieval alone must leave room: {retrieval}"
    );
    let chosen = &run["llm_choice"];
    assert!(
        chosen["llm_weight"].as_f64().expect("weight") > 0.0,
        "{chosen}"
    );
    assert!(
        chosen["ask_below"].as_f64().expect("threshold") > 0.0,
        "{chosen}"
    );
    assert!(
        chosen["accuracy"].as_f64().expect("accuracy") > retrieval,
        "{chosen}"
    );
    let cheap_and_better = mean_curve(run)
        .into_iter()
        .filter(|&(_, _, accuracy, calls)| calls <= 0.3 && accuracy > retrieval + 0.01)
        .count();
    assert!(
        cheap_and_better > 0,
        "no setting beats retrieval at ≤ 0.3 calls per text"
    );
    let toml = std::fs::read_to_string(dir.path().join("good/llm-calibration.toml"))
        .expect("llm-calibration.toml");
    assert!(
        toml.contains("[llm]\nask_below = ") && toml.contains("llm_weight = "),
        "{toml}"
    );

    let random = FakeLlm::start(Reply::Oracle { gold, right: None }).await;
    let report = calibrate(dir.path(), &random, &dir.path().join("random")).await;
    let chosen = &report["runs"][0]["llm_choice"];
    assert_eq!(chosen["ask_below"].as_f64(), Some(0.0), "{chosen}");
    assert_eq!(chosen["calls_per_text"].as_f64(), Some(0.0), "{chosen}");
}
