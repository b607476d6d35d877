//! `gorag serve`, `gorag state`, `gorag schemas`.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::config_args::ConfigArgs;
use crate::config::ServeConfig;
use crate::events::schema;
use crate::store::{Saved, SledStore, StateStore};

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Print the effective configuration (secrets as ***) and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Check the configuration — every key, the files it names (TLS certificates and keys,
    /// secret files), the secrets they hold — and exit: 0 when serve would start with it.
    /// Connects to nothing.
    #[arg(long, conflicts_with = "print_config")]
    pub check_config: bool,
}

/// The configuration, with a state folder: set, or found by default (else a configuration
/// error, before anything is connected).
pub fn load_config(args: &ServeArgs) -> Result<ServeConfig> {
    let config = args.config.load(&[])?;
    if let Err(error) = config.state.dir() {
        return Err(crate::config::ConfigErrors(vec![error.to_string()]).into());
    }
    Ok(config)
}

pub async fn serve(args: ServeArgs) -> Result<()> {
    let config = load_config(&args)?;
    if args.print_config {
        print!("{}", config.to_toml());
        return Ok(());
    }
    if args.check_config {
        // The LLM client too: its key file is read when it is built.
        config.llm.settings().client()?;
        println!("configuration ok: serve would start with it");
        return Ok(());
    }
    let summary = crate::stream::serve(config, shutdown_signal()).await?;
    if !summary.drained {
        bail!("stopped before every in-flight text finished (they will be re-read)");
    }
    Ok(())
}

/// SIGTERM (Kubernetes) or SIGINT (a terminal).
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send {
    let signal = super::stop::listen();
    async move {
        let signal = signal.await;
        tracing::info!(%signal, "shutdown signal received");
    }
}

#[derive(Debug, Args)]
pub struct StateArgs {
    /// The service's state directory (stop the service first: one process per database).
    #[arg(long)]
    pub dir: PathBuf,
}

/// The engine a stopped service's state directory holds, and what else it saved.
/// The replicated state a stopped service's state directory holds, and what else it saved.
pub fn load_state(dir: &std::path::Path) -> Result<(crate::state::State, Saved)> {
    if !dir.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    let store = SledStore::open(dir)?;
    let mut saved = store.load()?;
    let pool_capacity = crate::discovery::DiscoveryConfig::default().pool_capacity;
    let state = saved.restore(crate::engine::EngineConfig::default(), pool_capacity)?;
    Ok((state, saved))
}

/// Print what a state directory holds, with the engine digest.
pub fn state(args: StateArgs) -> Result<()> {
    let (state, saved) = load_state(&args.dir)?;
    let engine = state.engine();
    let offsets: Vec<serde_json::Value> = saved
        .offsets
        .iter()
        .map(|((topic, partition), offset)| {
            serde_json::json!({"topic": topic, "partition": partition, "next_offset": offset})
        })
        .collect();
    let report = serde_json::json!({
        "digest": state.digest(),
        "graph_nodes": engine.graph().node_count(),
        "graph_edges": engine.graph().edge_count(),
        "labels": engine.labels().len(),
        "active_labels": engine.active_labels().count(),
        "documents": engine.stats().documents,
        "label_version": engine.label_version(),
        "last_round": engine.last_round(),
        "logged_updates": saved.log.len(),
        "offsets": offsets,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

#[derive(Debug, Args)]
pub struct SchemasArgs {
    /// Folder to write `<event>.schema.json` into.
    #[arg(long, default_value = "schemas")]
    pub out: PathBuf,
    /// Only check that the files are up to date.
    #[arg(long)]
    pub check: bool,
}

pub fn schemas(args: SchemasArgs) -> Result<()> {
    let mut stale = Vec::new();
    for (name, value) in schema::all() {
        let path = args.out.join(format!("{name}.schema.json"));
        let text = schema::render(&value);
        if args.check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(path.display().to_string());
            }
        } else {
            std::fs::create_dir_all(&args.out)?;
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    if !stale.is_empty() {
        bail!("out of date (run `gorag schemas`): {}", stale.join(", "));
    }
    Ok(())
}
