//! One round of N synthetic labels (`benches/support/round.rs`) applied to a fresh engine, in
//! a process of its own so its peak memory is the round's: prints the time `apply_round` took,
//! the graph's and the index's sizes and the resident memory before and after (VmRSS) and at
//! its peak (VmHWM). `scripts/bench-round-size.sh` runs it for each size. `--no-refit` applies
//! it with `refit_confidence` off (no held-out scoring of the examples: the indexing alone).
//!
//!   cargo run --release --example round_size -- 10000 [--no-refit]

#[path = "../benches/support/round.rs"]
mod round;

use std::time::Instant;

use gorag::engine::{Engine, EngineConfig};

fn main() -> Result<(), String> {
    let usage = "usage: round_size LABELS [--no-refit]";
    let labels: usize = std::env::args()
        .nth(1)
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("LABELS: {e}"))?;
    let refit = match std::env::args().nth(2).as_deref() {
        None => true,
        Some("--no-refit") => false,
        Some(_) => return Err(usage.into()),
    };
    let round = round::RoundMaker::new(7).round(labels);
    let before = memory("VmRSS");
    let mut engine = Engine::new(EngineConfig {
        refit_confidence: refit,
        ..EngineConfig::default()
    });
    let started = Instant::now();
    let report = engine.apply_round(&round).map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"labels\": {labels}, \"refit\": {refit}, \"seconds\": {seconds:.3}, \"texts_indexed\": {}, \
         \"keywords\": {}, \"graph_edges\": {}, \"index_terms\": {}, \
         \"rss_before\": \"{before}\", \"rss_after\": \"{}\", \"rss_peak\": \"{}\"}}",
        report.texts_indexed,
        engine.graph().keyword_count(),
        engine.graph().edge_count(),
        engine.index().vocabulary_len(),
        memory("VmRSS"),
        memory("VmHWM"),
    );
    Ok(())
}

/// A line of /proc/self/status ("unknown" off Linux).
fn memory(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|l| {
                l.strip_prefix(key)
                    .and_then(|v| v.strip_prefix(':'))
                    .map(|v| v.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown".into())
}
