//! `gorag eval --discover`: the emerging-classes protocol (see `eval::discover`).

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;

use crate::discovery::DiscoveryConfig;
use crate::engine::EngineConfig;
use crate::eval::dataset::RoundData;
use crate::eval::{discover, PreparedRound};
use crate::one_text::TextSteps;

#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// Hold the last round back and measure whether its classes are proposed (see
    /// docs/design/emerging-classes.md, "The protocol"), instead of the paper's protocol.
    #[arg(long)]
    pub discover: bool,
    /// The service's `[discovery]` settings, each a flag `--discover-KEY`.
    #[command(flatten)]
    pub config: DiscoveryConfig,
}

/// The engines to compare: their configurations and the embedding signal's encoder (None: off).
pub struct Engines<'a> {
    pub configs: &'a [EngineConfig],
    pub encoder: Option<&'a std::sync::Arc<dyn crate::engine::embedding::TextEncoder>>,
}

/// Run the protocol for each engine configuration; print the table and write discovery.json.
pub async fn run(
    args: &DiscoverArgs,
    rounds: &[RoundData],
    prepared: &[PreparedRound],
    engines: Engines<'_>,
    classifier: &TextSteps,
    seed: u64,
    out: &Path,
) -> Result<()> {
    // The rounds and the settings are checked by `discover::run` (the settings, before any
    // work, by `EvalArgs::check` too).
    let config = &args.config;
    let mut reports = Vec::new();
    for engine in engines.configs {
        let encoder = engines.encoder;
        reports.push(
            discover::run(rounds, prepared, engine, encoder, config, classifier, seed).await?,
        );
    }
    print!("{}", discover::table(&reports));
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let path = out.join("discovery.json");
    std::fs::write(&path, serde_json::to_string_pretty(&reports)?)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}
