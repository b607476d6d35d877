//! Applying one round of N labels to a fresh state as `gorag serve` and `gorag classify` apply
//! one (`State::apply`, the service's default engine configuration; `benches/support/round.rs`:
//! a short name, a description and one or two examples each, their common words shared by
//! thousands of labels): it must grow linearly in the round's material — 10,000 labels under
//! 1 s, 50,000 under 10 s. Peak memory, one size per process: `scripts/bench-round-size.sh`;
//! the figures: docs/results/2026-11-28-round-apply.md, "Applying a round".
//!
//!   cargo bench --bench round_size

#[path = "support/round.rs"]
mod round;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use gorag::config::ServeConfig;
use gorag::engine::Engine;
use gorag::state::{State, Update};

fn round_size(c: &mut Criterion) {
    let mut group = c.benchmark_group("apply_round");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for labels in [1_000, 10_000, 50_000] {
        let round = Update::Round {
            round: "r1".into(),
            labels: round::RoundMaker::new(7).round(labels),
        };
        let service = ServeConfig::default();
        group.bench_function(BenchmarkId::new("labels", labels), |b| {
            b.iter_batched(
                || {
                    State::new(
                        Engine::new(service.engine_config()),
                        service.discovery.pool_capacity,
                    )
                },
                |mut state| {
                    let applied = state.apply(&round);
                    assert!(applied.is_ok(), "synthetic labels are distinct");
                    // Dropped outside the timing.
                    state
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, round_size);
criterion_main!(benches);
