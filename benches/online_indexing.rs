//! The whole per-text cost of the engine — keywords and terms, retrieval (the default `hybrid`:
//! index search, scoring, second hop), and online indexing (graph and text graph) — as the
//! corpus grows from 1k to 50k texts: it must stay flat (document frequencies are counts, never
//! re-derived from the corpus; the text graph is bounded by `seen_capacity` and
//! `tentative_capacity`).
//!
//!   cargo bench --bench online_indexing

#[path = "support/synthetic.rs"]
mod synthetic;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use gorag::engine::EngineConfig;

fn online_indexing(c: &mut Criterion) {
    let mut group = c.benchmark_group("learn_one_text");
    group.sample_size(30);
    // The largest corpus without tentative texts (what keeping unsure decisions costs), then
    // the default as the corpus grows. First, because a run measured after three large engines
    // were built and dropped in this process read up to 3x slower (the heap, not the engine).
    let mut without_tentative = EngineConfig::default();
    without_tentative.ranking.tentative_capacity = 0;
    let runs = [
        ("corpus_texts_no_tentative", 50_000, without_tentative),
        ("corpus_texts", 1_000, EngineConfig::default()),
        ("corpus_texts", 10_000, EngineConfig::default()),
        ("corpus_texts", 50_000, EngineConfig::default()),
    ];
    let mut largest = None;
    for (name, texts, config) in runs {
        let (mut engine, mut corpus) = synthetic::engine_with_config(config, texts, 11);
        eprintln!(
            "corpus {texts} texts: {} nodes, {} distinct phrases",
            engine.graph().node_count(),
            engine.stats().document_frequency.len()
        );
        if texts == 50_000 && name == "corpus_texts" {
            largest = Some(engine.index().clone());
        }
        let mut confident = false;
        group.bench_function(BenchmarkId::new(name, texts), |b| {
            b.iter_batched(
                || {
                    let label = corpus.label();
                    (corpus.text(label), synthetic::label_id(label))
                },
                |(text, label)| {
                    let analysis = engine.analyze(&text);
                    let retrieval = engine.retrieve(&analysis);
                    // Half the decisions confident, as on the WOS stream.
                    confident = !confident;
                    engine.learn(&analysis, &label, confident);
                    retrieval
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    // A fold of the label spread reweighs the whole index, on the service loop: its pause at
    // the largest corpus (the index full: `seen_capacity` and `tentative_capacity` reached).
    if let Some(mut index) = largest {
        eprintln!(
            "index: {} classified texts, {} terms",
            index.seen_count() + index.tentative_count(),
            index.vocabulary_len()
        );
        let mut group = c.benchmark_group("reweigh_whole_index");
        group.sample_size(10);
        group.bench_function(BenchmarkId::new("corpus_texts", 50_000), |b| {
            b.iter(|| index.reweigh())
        });
        group.finish();
    }
}

criterion_group!(benches, online_indexing);
criterion_main!(benches);
