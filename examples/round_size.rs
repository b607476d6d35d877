//! One round of N synthetic labels (`benches/support/round.rs`) applied to a fresh replicated
//! state the way `gorag serve` and `gorag classify` apply one — `State::apply` of an
//! `Update::Round`, under the service's default engine configuration — in a process of its
//! own so its peak memory is the round's: prints the time the apply took (and the processor
//! time its threads spent), the graph's and the index's sizes and the resident memory before
//! and after (VmRSS) and at its peak (VmHWM).
//! `scripts/bench-round-size.sh` runs it for each size.
//!
//!   cargo run --release --example round_size -- 10000 [--no-refit] [--embedding]
//!
//! `--no-refit`: `refit_confidence` off (no held-out scoring of the examples: the indexing
//! alone). `--embedding`: the embedding signal on with the default encoder, as the service
//! runs by default (`scripts/embedding-model.sh` fetches it); the round's names and examples
//! are encoded as part of the apply, which the service does ahead, off its loop.

#[path = "../benches/support/round.rs"]
mod round;

use std::time::Instant;

use gorag::config::ServeConfig;
use gorag::embed::EmbeddingModel;
use gorag::engine::Engine;
use gorag::reopen::read_meaning;
use gorag::state::{State, Update};

/// The service binary's allocator, so the figures are the service's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), String> {
    let usage = "usage: round_size LABELS [--no-refit] [--embedding]";
    let mut args = std::env::args().skip(1);
    let labels: usize = args
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("LABELS: {e}"))?;
    let (mut refit, mut embedding) = (true, false);
    for flag in args {
        match flag.as_str() {
            "--no-refit" => refit = false,
            "--embedding" => embedding = true,
            _ => return Err(usage.into()),
        }
    }
    let round = Update::Round {
        round: "r1".into(),
        labels: round::RoundMaker::new(7).round(labels),
    };
    let service = ServeConfig::default();
    let mut config = service.engine_config();
    config.refit_confidence = refit;
    let state = State::new(Engine::new(config), service.discovery.pool_capacity);
    let mut state = if embedding {
        read_meaning(
            state,
            &EmbeddingModel::default(),
            service.engine.embedding_max_tokens,
            None,
        )
        .map_err(|e| e.to_string())?
        .0
    } else {
        state
    };
    let before = memory("VmRSS");
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let report = state.apply(&round).map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    let engine = state.engine();
    println!(
        "{{\"labels\": {labels}, \"refit\": {refit}, \"embedding\": {embedding}, \
         \"seconds\": {seconds:.3}, \"cpu_seconds\": {cpu:.2}, \"texts_indexed\": {}, \"keywords\": {}, \
         \"graph_edges\": {}, \"index_terms\": {}, \"outcomes\": {}, \
         \"rss_before\": \"{before}\", \"rss_after\": \"{}\", \"rss_peak\": \"{}\"}}",
        report.texts_indexed,
        engine.graph().keyword_count(),
        engine.graph().edge_count(),
        engine.index().vocabulary().len(),
        engine.outcomes().outcomes().len(),
        memory("VmRSS"),
        memory("VmHWM"),
    );
    Ok(())
}

/// User and system time of the process's threads so far, from /proc/self/stat (in USER_HZ,
/// 100 a second; 0 off Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |at: usize| {
        fields
            .get(at)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
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
