use std::process::ExitCode;

use clap::Parser;

use gorag::cli::{self, failure, Cli, Command};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = run(cli).await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One paragraph: what failed, why, what to do; a backtrace only when asked for.
            eprintln!("{}", failure::render(&error));
            if let Some(trace) = failure::backtrace(&error) {
                eprintln!("\nbacktrace:\n{trace}");
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    // The service reports what it does; one-shot commands stay quiet unless asked.
    let default = match cli.command {
        Command::Serve(_) => "gorag=info,warn",
        _ => "warn",
    };
    let telemetry = gorag::telemetry::init(default)?;
    let result = match cli.command {
        Command::Eval(args) => cli::eval(*args).await,
        Command::Serve(args) => cli::serve::serve(args).await,
        Command::Publish(args) => cli::topics::publish(args).await,
        Command::Tail(args) => cli::topics::tail(args).await,
        Command::State(args) => cli::serve::state(args),
        Command::Report(args) => cli::label_report::report(args).await,
        Command::Proposals(args) => cli::proposals::proposals(args).await,
        Command::Schemas(args) => cli::serve::schemas(args),
        Command::Labels(args) => cli::labels::labels(args).await,
    };
    // Export buffered spans before exiting (also after an error).
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .ok();
    result
}
