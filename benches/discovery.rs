//! One community pass (similarity graph + Leiden + proposals) over a pool of 1k and 10k
//! unexplained texts from the synthetic WOS-shaped corpus (texts of 30 labels, as if 30
//! classes were missing).
//!
//!   cargo bench --bench discovery

#[path = "support/synthetic.rs"]
mod synthetic;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gorag::discovery::{communities, proposal, DiscoveryConfig, PooledText, Unexplained};
use gorag::engine::terms::TermCounts;
use gorag::engine::LabelMaterial;

fn pool(size: usize) -> Vec<PooledText> {
    let mut corpus = synthetic::Corpus::new(11);
    (0..size)
        .map(|i| {
            let label = corpus.label() % 30;
            let text = corpus.text(label);
            PooledText {
                id: i.to_string(),
                terms: TermCounts::of(&text),
                keywords: text.split(' ').take(20).map(str::to_string).collect(),
                excerpt: text.chars().take(200).collect(),
                why: Unexplained::WeakScore,
                label: synthetic::label_id(label),
                arrival_score: Some(0.05),
            }
        })
        .collect()
}

fn pass(c: &mut Criterion) {
    let config = DiscoveryConfig::default();
    // No labels: every community is scored against nothing (the cost of a pass's own work).
    let material = LabelMaterial::default();
    let mut group = c.benchmark_group("community_pass");
    group.sample_size(10);
    for size in [1_000, 10_000] {
        let texts = pool(size);
        let refs: Vec<&PooledText> = texts.iter().collect();
        group.bench_with_input(BenchmarkId::from_parameter(size), &refs, |b, refs| {
            b.iter(|| {
                let found = communities::find(refs, &config, &material)
                    .map(|found| found.communities)
                    .unwrap_or_default();
                found
                    .iter()
                    .map(|c| proposal::propose(refs, c))
                    .collect::<Vec<_>>()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, pass);
criterion_main!(benches);
