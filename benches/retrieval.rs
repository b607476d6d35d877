//! Retrieval latency per query on a synthetic WOS-scale engine (≈45k keyword nodes, 133
//! labels, the texts that built them learned into the text graph, half of them as tentative
//! texts): Steiner with 5, 10 and 20 terminals, and the ranked strategies (index search +
//! scoring + second hop) on whole texts.
//! Target: median ≤ 1 ms on the project machine.
//!
//!   cargo bench --bench retrieval

#[path = "support/synthetic.rs"]
mod synthetic;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gorag::engine::index::{DocKind, TermWeighting};
use gorag::engine::keywords::{self, KeywordSelection};
use gorag::engine::terms::TermCounts;
use gorag::engine::text::PhraseCounts;
use gorag::engine::{Analysis, Engine, Strategy};

/// Query analyses with exactly `terminals` keywords, all graph nodes: the text's best-scoring
/// phrases among those the graph knows.
fn queries(engine: &Engine, corpus: &mut synthetic::Corpus, terminals: usize) -> Vec<Analysis> {
    let selection = KeywordSelection {
        top_k: terminals,
        min_score: 0.0,
    };
    let mut out = Vec::new();
    while out.len() < 64 {
        let label = corpus.label();
        let text = corpus.text(label);
        let phrases = PhraseCounts::of(&text);
        let known: Vec<(&str, f64)> = engine
            .stats()
            .scores(&phrases, false)
            .into_iter()
            .filter(|(p, _)| engine.graph().keyword(p).is_some())
            .collect();
        let keywords = keywords::select(known, &selection);
        if keywords.len() == terminals {
            out.push(Analysis {
                phrases,
                keywords,
                terms: TermCounts::of(&text),
                embedding: None,
                words: None,
            });
        }
    }
    out
}

fn retrieval(c: &mut Criterion) {
    let (engine, mut corpus) = synthetic::engine_with_keywords(45_000, 7);
    let mut engine = engine;
    engine.set_strategy(Strategy::Steiner);
    eprintln!(
        "graph: {} nodes, {} edges, {} keywords, {} labels, {} texts, {} in the text graph, {} tentative",
        engine.graph().node_count(),
        engine.graph().edge_count(),
        engine.graph().keyword_count(),
        engine.labels().len(),
        engine.stats().documents,
        engine.index().documents().classified_count(DocKind::Seen),
        engine.index().documents().classified_count(DocKind::Tentative)
    );
    let mut group = c.benchmark_group("retrieve");
    for terminals in [5, 10, 20] {
        let prepared = queries(&engine, &mut corpus, terminals);
        let mut next = 0;
        group.bench_with_input(
            BenchmarkId::new("steiner", terminals),
            &prepared,
            |b, qs| {
                b.iter(|| {
                    next = (next + 1) % qs.len();
                    engine.retriever().retrieve(&qs[next])
                })
            },
        );
    }
    // The baselines on the same graph, for scale.
    let prepared = queries(&engine, &mut corpus, 10);
    for strategy in [
        Strategy::All,
        Strategy::Naive,
        Strategy::Ranked,
        Strategy::Proximity,
        Strategy::Hybrid,
    ] {
        let mut other = engine.clone();
        other.set_strategy(strategy);
        let mut next = 0;
        group.bench_with_input(
            BenchmarkId::new(strategy.as_str(), 10),
            &prepared,
            |b, qs| {
                b.iter(|| {
                    next = (next + 1) % qs.len();
                    other.retriever().retrieve(&qs[next])
                })
            },
        );
    }
    group.finish();
    // A round reweighs the whole index (a fold only the documents holding a changed term:
    // `benches/online_indexing.rs`): a pause of the service loop, not a per-query cost.
    let mut group = c.benchmark_group("reweigh_whole_index");
    group.sample_size(10);
    for weighting in [TermWeighting::LabelSpread, TermWeighting::Idf] {
        let mut index = engine.index().clone();
        index.set_weighting(weighting);
        group.bench_function(weighting.name(), |b| b.iter(|| index.reweigh()));
    }
    group.finish();
}

criterion_group!(benches, retrieval);
criterion_main!(benches);
