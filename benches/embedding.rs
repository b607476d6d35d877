//! The embedding signal's costs (README, "The embedding signal"): encoding one text with
//! all-MiniLM-L6-v2 on the CPU, and `hybrid` retrieval with the signal on (query vector given)
//! on the synthetic WOS-scale engine of the retrieval bench. Needs the model
//! (scripts/embedding-model.sh; GORAG_EMBEDDING_MODEL or the script's default folder).
//!
//!   cargo bench --bench embedding

#[path = "support/synthetic.rs"]
mod synthetic;

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use gorag::embed::MiniLm;
use gorag::engine::embedding::TextEncoder;
use gorag::engine::Strategy;

fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("GORAG_EMBEDDING_MODEL")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/gorag/embedding/all-MiniLM-L6-v2"))
        })?;
    dir.join("model.safetensors").is_file().then_some(dir)
}

fn embedding(c: &mut Criterion) {
    let Some(dir) = model_dir() else {
        eprintln!("no embedding model: run scripts/embedding-model.sh first");
        return;
    };
    let model = match MiniLm::load(&dir) {
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

criterion_group!(benches, embedding);
criterion_main!(benches);
