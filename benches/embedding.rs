//! The embedding signal's costs (README, "The embedding signal"; docs/embedding.md): encoding
//! one text with all-MiniLM-L6-v2 and with the static potion-base-8M on the CPU (a 200-word
//! text and a 15-word query), and `hybrid` retrieval with the signal on (query vector given) on
//! the synthetic WOS-scale engine of the retrieval bench. Needs the models
//! (scripts/embedding-model.sh [potion-base-8M]; GORAG_EMBEDDING_MODEL and GORAG_STATIC_MODEL,
//! or the script's folders). A model that is missing is skipped with a word.
//!
//!   cargo bench --bench embedding

#[path = "support/synthetic.rs"]
mod synthetic;

use std::path::PathBuf;
use std::sync::Arc;

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
    dir.join("model.safetensors").is_file().then_some(dir)
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

fn static_model(c: &mut Criterion) {
    let Some(dir) = model_dir("GORAG_STATIC_MODEL", "potion-base-8M") else {
        eprintln!("no static model: run scripts/embedding-model.sh potion-base-8M first");
        return;
    };
    let model = match SentenceModel::load(&dir) {
        Ok(model) => model,
        Err(error) => {
            eprintln!("{error}");
            return;
        }
    };
    let (_, mut corpus) = synthetic::engine_with_keywords(1_000, 7);
    let abstracts: Vec<String> = (0..64).map(|_| text_of(&mut corpus, 200)).collect();
    let queries: Vec<String> = (0..64).map(|_| text_of(&mut corpus, 15)).collect();
    let mut group = c.benchmark_group("embedding");
    for (name, texts) in [("200-words", &abstracts), ("15-words", &queries)] {
        let mut next = 0;
        group.bench_function(format!("encode/static/{name}"), |b| {
            b.iter(|| {
                next = (next + 1) % texts.len();
                model.encode(&texts[next])
            })
        });
    }
    group.finish();
}

fn embedding(c: &mut Criterion) {
    let Some(dir) = model_dir("GORAG_EMBEDDING_MODEL", "all-MiniLM-L6-v2") else {
        eprintln!("no embedding model: run scripts/embedding-model.sh first");
        return;
    };
    let model = match SentenceModel::load(&dir) {
        Ok(model) => Arc::new(model),
        Err(error) => {
            eprintln!("{error}");
            return;
        }
    };
    let (engine, mut corpus) = synthetic::engine_with_keywords(45_000, 7);
    // A synthetic text of WOS length: longer than the 256 tokens the model reads.
    let long_text = (0..8)
        .map(|_| {
            let label = corpus.label();
            corpus.text(label)
        })
        .collect::<Vec<_>>()
        .join(" ");
    let mut group = c.benchmark_group("embedding");
    group.sample_size(10);
    group.bench_function("encode/256-tokens", |b| b.iter(|| model.encode(&long_text)));

    let (mut engine, _) = engine.with_encoder(model.clone());
    engine.set_strategy(Strategy::Hybrid);
    let queries: Vec<_> = (0..32)
        .map(|_| {
            let label = corpus.label();
            let text = corpus.text(label);
            let mut analysis = engine.analyze(&text);
            engine.embed_query(&mut analysis, &text).map(|()| analysis)
        })
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    let mut next = 0;
    group.sample_size(100);
    group.bench_function("retrieve/hybrid-with-vector", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len().max(1);
            queries.get(next).map(|q| engine.retrieve(q))
        })
    });
    group.finish();
}

criterion_group!(benches, static_model, embedding);
criterion_main!(benches);
