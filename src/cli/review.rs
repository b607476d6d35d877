//! `gorag review`: serve the review desk (docs/guide/review.md).

use anyhow::Result;
use clap::Args;

use super::kafka_clients::KafkaArgs;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// The page's address (the same as `--set review.listen=…`; port 0 picks a free one).
    #[arg(long)]
    pub listen: Option<String>,
    /// The reviewers' logins, one `name:token` a line (`--set review.tokens_file=…`).
    #[arg(long)]
    pub tokens_file: Option<std::path::PathBuf>,
}

pub async fn review(args: ReviewArgs) -> Result<()> {
    let mut flags: Vec<String> = args
        .listen
        .iter()
        .map(|l| format!("review.listen={l}"))
        .collect();
    flags.extend(
        args.tokens_file
            .iter()
            .map(|f| format!("review.tokens_file={}", f.display())),
    );
    let config = args.kafka.load_with(&flags)?;
    let stop = super::stop::listen();
    let bound = crate::review::Bound::new(config).await?;
    if let Some(address) = bound.address() {
        // Scripts (the quick start, the tests) read the address from this line.
        println!("review desk: http://{address}/");
        tracing::info!(%address, "the review desk listens");
    }
    bound
        .run(async move {
            let signal = stop.await;
            tracing::info!(%signal, "stopping the review desk");
        })
        .await?;
    tracing::info!("the review desk stopped");
    Ok(())
}
