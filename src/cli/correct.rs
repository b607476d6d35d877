//! `gorag correct`: an operator's label for a text gorag classified, published to the labels
//! topic as a `correct` event (every replica applies it in the log's order, like any label
//! event; a bad one goes to the dead-letter topic with its reason).

use anyhow::{bail, Result};
use clap::Args;

use super::kafka_clients::KafkaArgs;
use super::labels_topic::{labels_config, labels_producer, send};
use crate::events::{LabelEvent, EVENT_VERSION};

#[derive(Debug, Args)]
pub struct CorrectArgs {
    /// The text's id, as its prediction gave it.
    pub text_id: String,
    /// The right label (an active label id).
    pub label: String,
    /// The text itself, as it was sent (gorag does not keep texts).
    #[arg(long)]
    pub text: String,
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// The labels topic of the service to correct (default: the configuration's
    /// `topics.labels`).
    #[arg(long)]
    pub topic: Option<String>,
    /// The text was picked at random to check gorag, not because it needed review: its
    /// outcome also refits the confidence (docs/decisions.md, "Refitting where gorag runs").
    #[arg(long)]
    pub audit: bool,
}

pub async fn correct(args: CorrectArgs) -> Result<()> {
    for (what, value) in [
        ("TEXT_ID", &args.text_id),
        ("LABEL", &args.label),
        ("--text", &args.text),
    ] {
        if value.trim().is_empty() {
            bail!("{what}: must not be empty");
        }
    }
    let event = LabelEvent::Correct {
        version: EVENT_VERSION,
        text_id: args.text_id.clone(),
        label: args.label.clone(),
        text: args.text,
        audit: args.audit,
    };
    let payload = serde_json::to_vec(&event)?;
    let config = labels_config(&args.kafka, args.topic.as_deref())?;
    let topic = config.topics.labels.clone();
    send(
        &labels_producer(&config).await?,
        &topic,
        &args.text_id,
        &payload,
    )
    .await?;
    println!(
        "sent: {} is {} ({topic} at {})",
        args.text_id, args.label, config.kafka.brokers
    );
    Ok(())
}
