use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use gorag::cli::{self, failure, Cli, Command};

/// mimalloc rather than the system's allocator: why in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long the runtime waits, once `run` returned, for blocking tasks still running.
const BLOCKING_GRACE: Duration = Duration::from_secs(1);

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // By now the service has drained, committed, saved its state and flushed telemetry; a
    // community pass's blocking step (Leiden, reading the proposals topic back) cannot be
    // interrupted, and waiting for it could outlast the pod's grace period.
    runtime.shutdown_timeout(BLOCKING_GRACE);
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
    // The service and the desk report what they do (starting, ready, stopping); one-shot
    // commands stay quiet unless asked.
    let default = match cli.command {
        Command::Serve(_) | Command::Review(_) => "gorag=info,warn",
        _ => "warn",
    };
    let telemetry = gorag::telemetry::init(default)?;
    let result = match cli.command {
        Command::Classify(args) => cli::classify::classify(*args).await,
        Command::Eval(args) => cli::eval(*args).await,
        Command::Calibrate(args) => cli::calibrate::calibrate(args),
        Command::Serve(args) => cli::serve::serve(args).await,
        Command::Topics(args) => cli::topics::topics(args).await,
        Command::Publish(args) => cli::publish::publish(args).await,
        Command::Tail(args) => cli::tail::tail(args).await,
        Command::State(args) => cli::state::state(args),
        Command::Report(args) => cli::report::report(args).await,
        Command::Proposals(args) => cli::proposals::proposals(args).await,
        Command::Schemas(args) => cli::schemas::schemas(args),
        Command::Labels(args) => cli::labels::labels(args).await,
        Command::Correct(args) => cli::correct::correct(args).await,
        Command::Review(args) => cli::review::review(args).await,
    };
    // Export buffered spans before exiting (also after an error).
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .ok();
    result
}
