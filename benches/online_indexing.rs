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

fn online_indexing(c: &mut Criterion) {
    let mut group = c.benchmark_group("learn_one_text");
    group.sample_size(30);
    for texts in [1_000, 10_000, 50_000] {
        let (mut engine, mut corpus) = synthetic::engine(texts, 11);
        eprintln!(
            "corpus {texts} texts: {} nodes, {} distinct phrases",
            engine.graph().node_count(),
            engine.stats().document_frequency.len()
        );
        let mut confident = false;
        group.bench_function(BenchmarkId::new("corpus_texts", texts), |b| {
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
}

criterion_group!(benches, online_indexing);
criterion_main!(benches);
