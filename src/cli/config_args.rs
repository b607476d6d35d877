//! The configuration every command reads as `gorag serve` does: a TOML file, environment
//! variables `GORAG__SECTION__KEY`, then `--set section.key=value` (later layers win).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::config::{self, Layers, ServeConfig};

#[derive(Debug, Clone, Default, Args)]
pub struct ConfigArgs {
    /// TOML configuration file (else $GORAG_CONFIG, else defaults). Environment variables
    /// `GORAG__SECTION__KEY` override it, `--set` overrides both.
    #[arg(long, env = "GORAG_CONFIG")]
    pub config: Option<PathBuf>,
    /// `section.key=value`, repeatable (e.g. `--set kafka.brokers=host:9092`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

impl ConfigArgs {
    /// The merged configuration, with `overrides` (a command's own flags, as `--set` lines)
    /// applied last.
    pub fn load(&self, overrides: &[String]) -> Result<ServeConfig> {
        self.load_with_env(config::process_env(), overrides)
    }

    /// [`ConfigArgs::load`] with `env` as the environment layer.
    pub fn load_with_env(
        &self,
        env: Vec<(String, String)>,
        overrides: &[String],
    ) -> Result<ServeConfig> {
        let mut sets = self.sets.clone();
        sets.extend_from_slice(overrides);
        ServeConfig::load(&Layers {
            file: self.config.clone(),
            env,
            sets,
        })
        .map_err(anyhow::Error::new)
    }
}
