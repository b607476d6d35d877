//! `gorag publish`: JSONL lines to a topic, for operators and the quick start.

use std::io::BufRead;
use std::path::PathBuf;

use super::kafka_clients::KafkaArgs;
use crate::broker::commands::{self, CommandProducer};
use anyhow::{Context, Result};
use clap::Args;

#[derive(Debug, Args)]
pub struct PublishArgs {
    #[command(flatten)]
    pub kafka: KafkaArgs,
    #[arg(long)]
    pub topic: String,
    /// JSON field whose string value keys each record (default: `id`, else `round`, else
    /// `label`; none if absent).
    #[arg(long)]
    pub key_field: Option<String>,
    /// JSONL files, one record per non-empty line (`-` for stdin). Lines are sent as they are,
    /// valid or not: the service judges them.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

fn record_key(line: &str, field: Option<&str>) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let fields: Vec<&str> = match field {
        Some(field) => vec![field],
        None => vec!["id", "round", "label"],
    };
    fields
        .iter()
        .find_map(|f| value.get(*f).and_then(|v| v.as_str()).map(str::to_string))
}

pub async fn publish(args: PublishArgs) -> Result<()> {
    let config = args.kafka.load()?;
    let producer = CommandProducer::new(&config.broker())?;
    if config.kafka.create_topics && config.topics.names().contains(&args.topic.as_str()) {
        // One of the service's topics: made as the service needs it, whoever comes first.
        commands::ensure_topics(&config.broker()).await?;
    }
    let mut lines = Vec::new();
    for path in &args.files {
        let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            Box::new(std::io::BufReader::new(
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?,
            ))
        };
        for line in reader.lines() {
            let line = line.with_context(|| format!("reading {}", path.display()))?;
            if !line.trim().is_empty() {
                lines.push(line);
            }
        }
    }
    // Many records in flight at once (the idempotent producer keeps their order), in chunks so
    // the local queue never fills.
    let mut sent = 0usize;
    for chunk in lines.chunks(10_000) {
        let sends = chunk.iter().map(|line| {
            let key = record_key(line, args.key_field.as_deref());
            let producer = &producer;
            let topic = &args.topic;
            async move {
                producer
                    .send(topic, key.as_deref().map(str::as_bytes), line.as_bytes())
                    .await
            }
        });
        for result in futures::future::join_all(sends).await {
            result?;
            sent += 1;
        }
    }
    eprintln!("published {sent} record(s) to {}", args.topic);
    Ok(())
}
