//! The engine's per-text cost, stage by stage, and its memory, at one corpus size per process
//! (a process that built and dropped larger engines first reads slower: the heap, not the
//! engine). Builds the synthetic corpus of `benches/online_indexing.rs` (WOS-shaped, every
//! other text confident), then times `analyze` (phrases, keywords, terms), `retrieve` (the
//! default `hybrid`) and `learn` on 4,000 more texts and prints medians, means, p99 and max
//! per stage, with the state's sizes and the resident memory, and the learn that bounded the
//! keyword statistics (`phrase_capacity`) if one did; then one bound timed alone, on a copy
//! of the statistics filled past the capacity.
//! `scripts/bench-corpus-growth.sh` runs it for each size.
//!
//!   cargo run --release --example corpus_growth -- 50000

#[path = "../benches/support/synthetic.rs"]
mod synthetic;

use std::time::Instant;

use gorag::engine::index::DocKind;
use gorag::engine::text::PhraseCounts;
use gorag::engine::Engine;

const MEASURED_TEXTS: usize = 4_000;

fn main() -> Result<(), String> {
    let texts: usize = std::env::args()
        .nth(1)
        .ok_or("usage: corpus_growth TEXTS")?
        .parse()
        .map_err(|e| format!("TEXTS: {e}"))?;
    let started = Instant::now();
    let (mut engine, mut corpus) = synthetic::engine(texts, 11);
    println!(
        "corpus {texts}: built in {:.1} s · {} graph nodes · {} phrases · {} index terms · {} seen + {} tentative texts · resident {}",
        started.elapsed().as_secs_f64(),
        engine.graph().node_count(),
        engine.stats().phrase_count(),
        engine.index().vocabulary().len(),
        engine.index().documents().classified_count(DocKind::Seen),
        engine.index().documents().classified_count(DocKind::Tentative),
        resident_memory(),
    );
    let mut stages: [(&str, Vec<f64>); 3] =
        [("analyze", vec![]), ("retrieve", vec![]), ("learn", vec![])];
    for i in 0..MEASURED_TEXTS {
        let label = corpus.label();
        let text = corpus.text(label);
        let t0 = Instant::now();
        let analysis = engine.analyzer().analyze(&text);
        let t1 = Instant::now();
        let retrieval = engine.retriever().retrieve(&analysis);
        let t2 = Instant::now();
        let phrases_before = engine.stats().phrase_count();
        engine.learn(&analysis, &synthetic::label_id(label), i % 2 == 0);
        let t3 = Instant::now();
        if engine.stats().phrase_count() < phrases_before {
            println!(
                "corpus {texts} measured text {i}: its learn took {:.0} ms, bounding the keyword statistics ({phrases_before} phrases before)",
                (t3 - t2).as_secs_f64() * 1e3
            );
        }
        std::hint::black_box(retrieval.map_err(|e| e.to_string())?);
        for ((_, times), (from, to)) in stages.iter_mut().zip([(t0, t1), (t1, t2), (t2, t3)]) {
            times.push((to - from).as_secs_f64() * 1e6);
        }
    }
    for (stage, mut times) in stages {
        times.sort_by(f64::total_cmp);
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        println!(
            "corpus {texts} {stage:<8} median {:7.1} µs · mean {:7.1} µs · p99 {:8.1} µs · max {:9.1} µs",
            at(0.5),
            mean,
            at(0.99),
            at(1.0),
        );
    }
    println!(
        "corpus {texts} after the measured texts: resident {}",
        resident_memory()
    );
    let (forgotten, seconds) = bound_pause(&engine, &mut corpus);
    println!(
        "corpus {texts} bounding the keyword statistics: {forgotten} phrases forgotten in {:.0} ms",
        seconds * 1e3
    );
    Ok(())
}

/// A copy of the engine's keyword statistics, filled with more texts until it passes
/// `phrase_capacity`, then bounded: the phrases forgotten and the seconds it took. The
/// optimistic case: a fresh copy's strings lie together in memory, while a live table's are
/// scattered over a heap the stream filled (the learn timed above is the real pause).
fn bound_pause(engine: &Engine, corpus: &mut synthetic::Corpus) -> (usize, f64) {
    let capacity = engine.config().phrase_capacity;
    let mut stats = engine.stats().clone();
    while stats.phrase_count() <= capacity {
        let label = corpus.label();
        stats.add(&PhraseCounts::of(&corpus.text(label)));
    }
    let started = Instant::now();
    let forgotten = stats.bound(capacity);
    (forgotten, started.elapsed().as_secs_f64())
}

/// VmRSS from /proc (Linux), or `unknown`.
fn resident_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().to_string()))
        })
        .unwrap_or_else(|| "unknown".into())
}
