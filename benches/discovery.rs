//! One community pass (similarity graph + Leiden + proposals) over a pool of 1k and 10k
//! unexplained texts from the synthetic WOS-shaped corpus (texts of 30 labels, as if 30
//! classes were missing), and over 1k and 5k short ones (three words) compared by meaning too (256-dimension
//! vectors, potion-base-8M's size; the encoding itself is not timed).
//!
//!   cargo bench --bench discovery

#[path = "support/synthetic.rs"]
mod synthetic;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gorag::discovery::{communities, proposal, DiscoveryConfig, Meaning, PooledText, Unexplained};
use gorag::engine::terms::TermCounts;
use gorag::engine::LabelMaterial;

/// A weakly scored pooled text of `label`.
fn pooled(id: usize, text: &str, label: usize) -> PooledText {
    PooledText {
        id: id.to_string(),
        terms: TermCounts::of(text),
        keywords: text.split(' ').take(20).map(str::to_string).collect(),
        excerpt: text.chars().take(200).collect(),
        why: Unexplained::WeakScore,
        label: synthetic::label_id(label),
        arrival_score: Some(0.05),
    }
}

fn pool(size: usize) -> Vec<PooledText> {
    let mut corpus = synthetic::Corpus::new(11);
    (0..size)
        .map(|i| {
            let label = corpus.label() % 30;
            let text = corpus.text(label);
            pooled(i, &text, label)
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
                let found = communities::find(refs, &Meaning::default(), &[], &config, &material)
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

/// Short texts (a few words of their label) with a vector near their label's direction.
fn short_pool(size: usize) -> (Vec<PooledText>, Vec<Option<Vec<f32>>>) {
    let mut corpus = synthetic::Corpus::new(13);
    let mut noise = 7u64;
    let mut next = move || {
        noise = noise
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (noise >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..size)
        .map(|i| {
            let label = corpus.label() % 30;
            let text: String = corpus
                .text(label)
                .split(' ')
                .take(3)
                .collect::<Vec<_>>()
                .join(" ");
            let vector: Vec<f32> = (0..256)
                .map(|d| if d % 30 == label { 1.0 } else { 0.0 } + next())
                .collect();
            (pooled(i, &text, label), Some(vector))
        })
        .unzip()
}

fn short_pass(c: &mut Criterion) {
    let config = DiscoveryConfig::default();
    let material = LabelMaterial::default();
    let mut group = c.benchmark_group("community_pass_short_by_meaning");
    group.sample_size(10);
    for size in [1_000, 5_000] {
        let (texts, vectors) = short_pool(size);
        let meaning = Meaning {
            vectors,
            ..Meaning::default()
        };
        let refs: Vec<&PooledText> = texts.iter().collect();
        group.bench_with_input(BenchmarkId::from_parameter(size), &refs, |b, refs| {
            b.iter(|| {
                communities::find(refs, &meaning, &[], &config, &material)
                    .map(|found| found.communities.len())
                    .unwrap_or_default()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, pass, short_pass);
criterion_main!(benches);
