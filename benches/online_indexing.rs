//! The whole per-text cost of the engine — keywords and terms, retrieval (the default `hybrid`:
//! index search, scoring, second hop), and online indexing (graph and text graph) — as the
//! corpus grows from 1k to 100k texts: it must stay flat (document frequencies are counts, never
//! re-derived from the corpus; the text graph is bounded by `engine.capacity.seen` and
//! `.tentative`, reached at 40k texts, so 50k and 100k show whether it plateaus).
//!
//!   cargo bench --bench online_indexing

#[path = "support/synthetic.rs"]
mod synthetic;

use std::time::Instant;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use gorag::engine::index::{DocKind, LabelPos, TextIndex};
use gorag::engine::terms::TermCounts;
use gorag::engine::EngineConfig;

fn online_indexing(c: &mut Criterion) {
    let mut group = c.benchmark_group("learn_one_text");
    group.sample_size(30);
    // The largest corpus without tentative texts (what keeping unsure decisions costs), then
    // the default as the corpus grows. First, because a run measured after three large engines
    // were built and dropped in this process read up to 3x slower (the heap, not the engine).
    let mut without_tentative = EngineConfig::default();
    without_tentative.capacity.tentative = 0;
    let runs = [
        ("corpus_texts_no_tentative", 50_000, without_tentative),
        ("corpus_texts", 1_000, EngineConfig::default()),
        ("corpus_texts", 10_000, EngineConfig::default()),
        ("corpus_texts", 50_000, EngineConfig::default()),
        ("corpus_texts", 100_000, EngineConfig::default()),
    ];
    let mut largest = None;
    for (name, texts, config) in runs {
        let (mut engine, mut corpus) = synthetic::engine_with_config(config, texts, 11);
        eprintln!(
            "corpus {texts} texts: {} nodes, {} distinct phrases",
            engine.graph().node_count(),
            engine.stats().phrase_count()
        );
        if texts == 100_000 {
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
                    let analysis = engine.analyzer().analyze(&text);
                    let retrieval = engine.retriever().retrieve(&analysis);
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
    if let Some(index) = largest {
        pauses_at_capacity(c, index, synthetic::Corpus::new(12));
    }
}

/// Whether the text just learned caused the pause timed, from the index after it and the
/// folded texts and tombstones before it.
type PauseDone<'a> = dyn Fn(&TextIndex, u64, usize) -> bool + 'a;

/// The pauses a learned text can cause once the index is full (`engine.capacity.seen` and
/// `.tentative` reached), each on the service loop: a round's reweigh (every weight),
/// a fold of the label spread (the documents holding a term whose labels changed; at most
/// every 8,192 texts at capacity) and a compaction (evicted documents dropped; about every
/// 13,000 texts at capacity).
fn pauses_at_capacity(c: &mut Criterion, mut index: TextIndex, mut corpus: synthetic::Corpus) {
    eprintln!(
        "index: {} classified texts, {} terms",
        index.documents().classified_count(DocKind::Seen)
            + index.documents().classified_count(DocKind::Tentative),
        index.vocabulary().len()
    );
    let mut group = c.benchmark_group("index_pause_at_capacity");
    group.sample_size(10);
    group.bench_function("reweigh_after_a_round", |b| b.iter(|| index.reweigh()));
    // The text whose learning folds (or compacts) is timed alone; the texts before it, which
    // bring the fold (or compaction) due, are not, nor one that does both.
    let mut learn_until = |index: &mut TextIndex, done: &PauseDone<'_>| loop {
        let label = corpus.label();
        let terms = TermCounts::of(&corpus.text(label));
        let (folded, tombstones) = (
            index.term_stats().folded_texts(),
            index.documents().tombstones(),
        );
        let start = Instant::now();
        index.add_classified(DocKind::Seen, LabelPos::at(label), &terms);
        let took = start.elapsed();
        if done(index, folded, tombstones) {
            return took;
        }
    };
    let folds = |i: &TextIndex, folded: u64| i.term_stats().folded_texts() != folded;
    let compacts = |i: &TextIndex, dead: usize| dead > 0 && i.documents().tombstones() == 0;
    let pauses: [(&str, &PauseDone<'_>); 2] = [
        ("fold", &|i, folded, dead| {
            folds(i, folded) && !compacts(i, dead)
        }),
        ("compaction", &|i, folded, dead| {
            compacts(i, dead) && !folds(i, folded)
        }),
    ];
    for (name, done) in pauses {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| learn_until(&mut index, done)).sum())
        });
    }
    group.finish();
}

criterion_group!(benches, online_indexing);
criterion_main!(benches);
