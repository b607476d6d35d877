//! The flags every Kafka command (`publish`, `tail`, `labels import`, `correct`, `proposals`,
//! `report`, `topics create`) reads its configuration with: serve's configuration
//! (`kafka.brokers`, and `kafka.client` for SASL and TLS, from `--config`, the environment and
//! `--set`), `--brokers` as a shorthand. The clients themselves are built in
//! `broker::commands` from that configuration, as the service builds its own.

use anyhow::Result;
use clap::Args;

use super::config_args::ConfigArgs;
use crate::config::{self, ServeConfig};

#[derive(Debug, Clone, Default, Args)]
pub struct KafkaArgs {
    /// The brokers, `host:port[,…]` (the same as `--set kafka.brokers=…`; default: the
    /// configuration's, else `$GORAG_BROKERS`, else 127.0.0.1:9092).
    #[arg(long)]
    pub brokers: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

impl KafkaArgs {
    /// The configuration, `--brokers` applied last.
    pub fn load(&self) -> Result<ServeConfig> {
        self.load_with(&[])
    }

    /// The configuration with a command's own flags (`section.key=value`) applied last.
    /// `$GORAG_BROKERS` is the weakest environment setting: `GORAG__KAFKA__BROKERS`, `--set`
    /// and `--brokers` all beat it.
    pub fn load_with(&self, flags: &[String]) -> Result<ServeConfig> {
        let mut env = config::process_env();
        if let Ok(brokers) = std::env::var("GORAG_BROKERS") {
            env.insert(0, ("GORAG__KAFKA__BROKERS".to_string(), brokers));
        }
        let mut overrides: Vec<String> = flags.to_vec();
        overrides.extend(self.brokers.iter().map(|b| format!("kafka.brokers={b}")));
        self.config.load_with_env(env, &overrides)
    }
}
