//! `gorag eval --discover`: the emerging-classes protocol (see `eval::discover`).

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;

use crate::discovery::DiscoveryConfig;
use crate::engine::EngineConfig;
use crate::eval::dataset::RoundData;
use crate::eval::{discover, PreparedRound};
use crate::rag::Classifier;

#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// Hold the last round back and measure whether its classes are proposed (see
    /// docs/design/emerging-classes.md, "The protocol"), instead of the paper's protocol.
    #[arg(long)]
    pub discover: bool,
    /// Discovery: a ranked decision whose best score is below this is unexplained.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().max_score)]
    pub discover_max_score: f64,
    /// Discovery: a text whose fitted probe's top probability is below this multiple of
    /// uniform is unexplained (0: not read).
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().doubt_below)]
    pub discover_doubt_below: f64,
    /// Discovery: smallest community proposed.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().min_size)]
    pub discover_min_size: usize,
    /// Discovery: lowest cohesion (mean cosine with the centroid) proposed.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().min_cohesion)]
    pub discover_min_cohesion: f64,
    /// Discovery: a community whose members' mean best score against the known labels
    /// reaches this is not proposed.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().max_community_score)]
    pub discover_max_community_score: f64,
    /// Discovery: Leiden's resolution (higher: smaller communities).
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().resolution)]
    pub discover_resolution: f64,
    /// Discovery: a community this alike an open proposal's joins it (the service's passes;
    /// the protocol's one pass has no open proposal).
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().merge_above)]
    pub discover_merge_above: f64,
    /// Discovery: how much meaning weighs against words in the pooled texts' similarity (0: words
    /// alone, 1: meaning alone).
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().meaning_weight)]
    pub discover_meaning_weight: f64,
    /// Discovery: the same in a short text.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().meaning_weight_short)]
    pub discover_meaning_weight_short: f64,
    /// Discovery: neighbours per pooled text in the similarity graph.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().neighbours)]
    pub discover_neighbours: usize,
    /// Discovery: weakest similarity that makes an edge.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().min_similarity)]
    pub discover_min_similarity: f64,
    /// Discovery: hold texts that read like an open proposal for review (a pass halfway through
    /// the stream opens proposals for the second half).
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().hold_open, action = clap::ArgAction::Set)]
    pub discover_hold_open: bool,
    /// Discovery: pool a text whose LLM answer named no known label, whatever its score.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().pool_unknown_label, action = clap::ArgAction::Set)]
    pub discover_pool_unknown_label: bool,
    /// Discovery: pool a text whose prediction needs review, whatever its score.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().pool_needs_review, action = clap::ArgAction::Set)]
    pub discover_pool_needs_review: bool,
    /// Discovery: pool a text published with no label (no match), whatever its score.
    #[arg(help_heading = "Discovery (tuning)", long, default_value_t = DiscoveryConfig::default().pool_no_match, action = clap::ArgAction::Set)]
    pub discover_pool_no_match: bool,
}

impl DiscoverArgs {
    pub fn config(&self) -> DiscoveryConfig {
        DiscoveryConfig {
            max_score: self.discover_max_score,
            doubt_below: self.discover_doubt_below,
            min_size: self.discover_min_size,
            min_cohesion: self.discover_min_cohesion,
            max_community_score: self.discover_max_community_score,
            resolution: self.discover_resolution,
            merge_above: self.discover_merge_above,
            meaning_weight: self.discover_meaning_weight,
            meaning_weight_short: self.discover_meaning_weight_short,
            neighbours: self.discover_neighbours,
            min_similarity: self.discover_min_similarity,
            hold_open: self.discover_hold_open,
            pool_unknown_label: self.discover_pool_unknown_label,
            pool_needs_review: self.discover_pool_needs_review,
            pool_no_match: self.discover_pool_no_match,
            ..DiscoveryConfig::default()
        }
    }
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
    classifier: &Classifier,
    seed: u64,
    out: &Path,
) -> Result<()> {
    anyhow::ensure!(
        rounds.len() >= 2,
        "--discover needs at least two rounds: one known, the last held back"
    );
    let config = args.config();
    config
        .validate()
        .map_err(|e| anyhow::anyhow!("invalid discovery setting: {e}"))?;
    let mut reports = Vec::new();
    for engine in engines.configs {
        let encoder = engines.encoder;
        reports.push(
            discover::run(rounds, prepared, engine, encoder, &config, classifier, seed).await?,
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
