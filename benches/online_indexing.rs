//! Online-indexing cost per text as the corpus grows from 1k to 50k texts: it must stay flat
//! (document frequencies are counts, never re-derived from the corpus).
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
        group.bench_function(BenchmarkId::new("corpus_texts", texts), |b| {
            b.iter_batched(
                || {
                    let label = corpus.label();
                    (corpus.text(label), synthetic::label_id(label))
                },
                // Keywords of the text, then its online indexing: both per-text costs.
                |(text, label)| {
                    let analysis = engine.analyze(&text);
                    engine.learn(&analysis, &label, true)
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, online_indexing);
criterion_main!(benches);
