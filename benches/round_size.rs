//! Applying one round of N labels to a fresh engine (`benches/support/round.rs`: a short name,
//! a description and one or two examples each, their common words shared by thousands of
//! labels): it must grow linearly in the round's material — 10,000 labels under 1 s, 50,000
//! under 10 s. Peak memory, one size per process: `scripts/bench-round-size.sh`.
//!
//!   cargo bench --bench round_size

#[path = "support/round.rs"]
mod round;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use gorag::engine::{Engine, EngineConfig};

fn round_size(c: &mut Criterion) {
    let mut group = c.benchmark_group("apply_round");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for labels in [1_000, 10_000, 50_000] {
        let round = round::RoundMaker::new(7).round(labels);
        group.bench_function(BenchmarkId::new("labels", labels), |b| {
            b.iter_batched(
                || Engine::new(EngineConfig::default()),
                |mut engine| {
                    let applied = engine.apply_round(&round);
                    assert!(applied.is_ok(), "synthetic labels are distinct");
                    // Dropped outside the timing.
                    engine
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, round_size);
criterion_main!(benches);
