//! `gorag publish` and `gorag tail`: small Kafka helpers for operators and the quick start.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::kafka_clients::KafkaArgs;
use crate::events::Prediction;
use crate::stream::kafka::commands::{self, CommandConsumer, CommandProducer};
use crate::stream::kafka::Record;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

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
    let producer = CommandProducer::new(&config)?;
    if config.kafka.create_topics && config.topics.names().contains(&args.topic.as_str()) {
        // One of the service's topics: made as the service needs it, whoever comes first.
        commands::ensure_topics(&config).await?;
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

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TailFormat {
    /// The record value as it is.
    Raw,
    /// JSON object with key, partition, offset, headers and value.
    Json,
    /// One readable line per prediction.
    Prediction,
    /// One line per dead letter: reason, message and the original record.
    DeadLetter,
}

#[derive(Debug, Args)]
pub struct TailArgs {
    #[command(flatten)]
    pub kafka: KafkaArgs,
    #[arg(long)]
    pub topic: String,
    /// Start at the beginning of every partition (default: only new records).
    #[arg(long)]
    pub from_beginning: bool,
    /// Stop after this many records.
    #[arg(long)]
    pub count: Option<usize>,
    /// Stop when nothing arrives for this many seconds.
    #[arg(long)]
    pub idle_timeout: Option<f64>,
    #[arg(long, value_enum, default_value = "raw")]
    pub format: TailFormat,
}

pub async fn tail(args: TailArgs) -> Result<()> {
    let config = args.kafka.load()?;
    let consumer = CommandConsumer::new(&config, "gorag-tail")?;
    if consumer
        .read_every_partition(&args.topic, args.from_beginning)?
        .is_empty()
    {
        bail!("topic {} does not exist", args.topic);
    }

    let mut seen = 0usize;
    let mut out = std::io::stdout().lock();
    let idle = args.idle_timeout.map(Duration::from_secs_f64);
    let mut last = Instant::now();
    while args.count.is_none_or(|count| seen < count) {
        let wait = idle.map(|d| d.saturating_sub(last.elapsed()));
        let message = match wait {
            Some(wait) => match tokio::time::timeout(wait, consumer.recv()).await {
                Ok(message) => message,
                Err(_) => break,
            },
            None => consumer.recv().await,
        }?;
        last = Instant::now();
        seen += 1;
        writeln!(out, "{}", line(&message, args.format))?;
        out.flush()?;
    }
    Ok(())
}

/// One record as `gorag tail` prints it.
fn line(message: &Record, format: TailFormat) -> String {
    let value = String::from_utf8_lossy(&message.payload).into_owned();
    let header = |name: &str| {
        message
            .headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    };
    match format {
        TailFormat::Raw => value,
        TailFormat::Json => json_line(message, value),
        TailFormat::DeadLetter => format!(
            "{}: {} ← {}",
            header("gorag.reason"),
            header("__connect.errors.exception.message"),
            value
        ),
        TailFormat::Prediction => match serde_json::from_str::<Prediction>(&value) {
            Ok(prediction) => super::prediction_view::line(&prediction),
            Err(_) => value,
        },
    }
}

/// The record with its key, position and headers, as one JSON object.
fn json_line(message: &Record, value: String) -> String {
    let headers: serde_json::Map<String, serde_json::Value> = message
        .headers
        .iter()
        .map(|(key, value)| (key.clone(), value.clone().into()))
        .collect();
    serde_json::json!({
        "key": message.key.as_ref().map(|k| String::from_utf8_lossy(k).into_owned()),
        "partition": message.partition(),
        "offset": message.offset(),
        "headers": headers,
        "value": value,
    })
    .to_string()
}
