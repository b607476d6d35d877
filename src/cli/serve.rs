//! `gorag serve`: the streaming service.

use anyhow::{bail, Result};
use clap::Args;

use super::config_args::ConfigArgs;
use crate::config::ServeConfig;

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
    let summary = crate::serve::serve(config, shutdown_signal()).await?;
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
