//! `gorag tail`: a topic's records, raw or readable.

use std::io::Write;
use std::time::{Duration, Instant};

use super::kafka_clients::KafkaArgs;
use super::printable::{printable, printable_json};
use crate::broker::commands::CommandConsumer;
use crate::broker::Record;
use crate::events::Prediction;
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TailFormat {
    /// The record value as it is (control characters as `\u{…}` escapes, as in every format).
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
    let consumer = CommandConsumer::new(&config.broker(), "gorag-tail")?;
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
        let line = line(&message, args.format);
        // JSON stays JSON (its escapes); the readable formats get `\u{…}`.
        let shown = match args.format {
            TailFormat::Raw | TailFormat::Json => printable_json(&line),
            TailFormat::Prediction | TailFormat::DeadLetter => printable(&line),
        };
        writeln!(out, "{shown}")?;
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
