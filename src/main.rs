use clap::Parser;
use tracing_subscriber::EnvFilter;

use gorag::cli::{self, Cli, Command};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The service reports what it does; one-shot commands stay quiet unless asked.
    let default = match cli.command {
        Command::Serve(_) => "gorag=info,warn",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("GORAG_LOG").unwrap_or_else(|_| EnvFilter::new(default)),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Eval(args) => cli::eval(args).await,
        Command::Serve(args) => cli::serve::serve(args).await,
        Command::Publish(args) => cli::topics::publish(args).await,
        Command::Tail(args) => cli::topics::tail(args).await,
        Command::State(args) => cli::serve::state(args),
        Command::Schemas(args) => cli::serve::schemas(args),
    }
}
