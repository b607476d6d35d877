//! `gorag topics create`: every topic of the service, created with the layout `gorag serve`
//! needs (the labels and changelog topics with exactly one partition, kept for ever; the
//! proposals topic compacted), then checked — so the order in which an operator starts things
//! does not matter.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};

use super::kafka_clients::KafkaArgs;
use crate::broker::commands::{self, CommandConsumer};

#[derive(Debug, Args)]
pub struct TopicsArgs {
    #[command(subcommand)]
    pub action: TopicsAction,
}

#[derive(Debug, Subcommand)]
pub enum TopicsAction {
    /// Create the service's topics (those the configuration names) with the partitions and
    /// settings serve needs, and check the ones that exist already.
    Create(CreateArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub kafka: KafkaArgs,
}

pub async fn topics(args: TopicsArgs) -> Result<()> {
    let TopicsAction::Create(args) = args.action;
    let config = args.kafka.load()?;
    let consumer = CommandConsumer::new(&config.broker(), "gorag-topics")?;
    commands::ensure_topics(&config.broker()).await?;
    let t = &config.topics;
    let mut wrong = Vec::new();
    for topic in t.names() {
        let partitions = consumer.partitions(topic)?;
        let one = topic == t.labels || topic == t.changelog;
        let shape = if one { "1 (required)" } else { "any" };
        println!("{topic:<32} {:>3} partition(s), {shape}", partitions.len());
        if partitions.is_empty() {
            bail!("{topic} still does not exist after creating it: does the broker allow it?");
        }
        if one && partitions.len() != 1 {
            wrong.push(topic.to_string());
        }
    }
    if !wrong.is_empty() {
        bail!(
            "{} must have exactly 1 partition (its order is the order changes apply in) and \
             cannot be changed: delete it with your broker's tools and run gorag topics create \
             again, or name other topics (--set topics.labels=…, --set topics.changelog=…)",
            wrong.join(", ")
        );
    }
    Ok(())
}
