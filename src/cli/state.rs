//! `gorag state`: what a stopped service's state directory holds.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use crate::store::{Saved, SledStore, StateStore};

#[derive(Debug, Args)]
pub struct StateArgs {
    /// The service's state directory (stop the service first: one process per database).
    #[arg(long)]
    pub dir: PathBuf,
}

/// The replicated state a stopped service's state directory holds, and what else it saved.
pub fn load_state(dir: &std::path::Path) -> Result<(crate::state::State, Saved)> {
    if !dir.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    let store = SledStore::open(dir)?;
    let mut saved = store.load()?;
    let pool_capacity = crate::discovery::DiscoveryConfig::default().pool_capacity;
    let state = crate::state::State::restore(
        saved.snapshot.take(),
        &saved.log,
        crate::engine::EngineConfig::default(),
        pool_capacity,
    )?;
    Ok((state, saved))
}

/// Print what a state directory holds, with the engine digest.
pub fn state(args: StateArgs) -> Result<()> {
    let (state, saved) = load_state(&args.dir)?;
    let engine = state.engine();
    let offsets: Vec<serde_json::Value> = saved
        .offsets
        .iter()
        .map(|(topic, next)| {
            serde_json::json!({
                "topic": topic,
                "partition": next.partition,
                "next_offset": next.offset
            })
        })
        .collect();
    let report = serde_json::json!({
        "digest": state.digest(),
        "graph_nodes": engine.graph().node_count(),
        "graph_edges": engine.graph().edge_count(),
        "labels": engine.labels().len(),
        "active_labels": engine.labels().active().count(),
        "documents": engine.stats().documents,
        "label_version": engine.labels().version(),
        "last_round": engine.labels().last_round(),
        "logged_updates": saved.log.len(),
        "offsets": offsets,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
