//! `gorag labels import`: a label taxonomy kept as a CSV or JSONL file becomes round events on
//! the labels topic (see [`crate::events::taxonomy`] for the layout).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};

use super::kafka_clients::KafkaArgs;
use super::labels_topic::{label_topic_ids, labels_config, labels_producer, send};
use crate::config::ServeConfig;
use crate::events::taxonomy::{self, Format};
use crate::events::LabelEvent;

#[derive(Debug, Args)]
pub struct LabelsArgs {
    #[command(subcommand)]
    pub action: LabelsAction,
}

#[derive(Debug, Subcommand)]
pub enum LabelsAction {
    /// Turn a taxonomy file (CSV or JSONL: label, name, description, example, round) into round
    /// events, check them as the service would, and publish them (or print them: --dry-run).
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The taxonomy file: one row per example (or per label without examples).
    pub file: PathBuf,
    /// csv or jsonl (default: from the file's extension).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// The round of rows without a `round` value (default: the file's name without extension).
    #[arg(long)]
    pub round: Option<String>,
    /// Print the events (JSONL, one per round) instead of publishing them.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// The labels topic (default: the configuration's `topics.labels`).
    #[arg(long)]
    pub topic: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Csv,
    Jsonl,
}

pub async fn labels(args: LabelsArgs) -> Result<()> {
    match args.action {
        LabelsAction::Import(args) => import(args).await,
    }
}

async fn import(args: ImportArgs) -> Result<()> {
    let format = match args.format {
        Some(FormatArg::Csv) => Format::Csv,
        Some(FormatArg::Jsonl) => Format::Jsonl,
        None => format_of(&args.file)?,
    };
    let default_round = match &args.round {
        Some(round) => round.clone(),
        None => args
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "r1".to_string()),
    };
    let text = read_text_file(&args.file)?;
    // The service's bounds (`[input]`, `[labels]`): what it would dead-letter is refused here.
    let config = labels_config(&args.kafka, args.topic.as_deref())?;
    let events = taxonomy::rounds(&text, format, &default_round, &config.bounds())
        .with_context(|| format!("{} is not a taxonomy gorag can import", args.file.display()))?;
    let summary = summary(&events);
    if args.dry_run {
        for event in &events {
            println!("{}", serde_json::to_string(event)?);
        }
        eprintln!("{summary}; checked, not published (--dry-run)");
        return Ok(());
    }
    let topic = config.topics.labels.clone();
    // Before reading the topic: a labels topic the broker would auto-create on that read
    // would not have the layout the service needs.
    let producer = labels_producer(&config).await?;
    refuse_known(&events, &config, &topic).await?;
    for event in &events {
        if let LabelEvent::Round { round, .. } = event {
            send(&producer, &topic, round, &serde_json::to_vec(event)?).await?;
        }
    }
    eprintln!("{summary}; published to {topic}");
    Ok(())
}

/// A labels or texts file read whole, as text: bytes that are not UTF-8 stop it with the line,
/// column and value of the first, how many lines hold one, and how to convert the file.
pub(crate) fn read_text_file(path: &std::path::Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if let Err(error) = crate::input::text_of(&bytes) {
        bail!("{}: {error}", path.display());
    }
    String::from_utf8(bytes).with_context(|| format!("reading {}", path.display()))
}

pub(crate) fn format_of(path: &std::path::Path) -> Result<Format> {
    match Format::of_path(path) {
        Some(format) => Ok(format),
        None => bail!(
            "{}: cannot tell the format from the extension; pass --format csv or --format jsonl",
            path.display()
        ),
    }
}

/// Round and label ids the labels topic already has would be dead-lettered by the service:
/// refuse them before anything is sent.
async fn refuse_known(events: &[LabelEvent], config: &ServeConfig, topic: &str) -> Result<()> {
    let (known_rounds, known_labels) = label_topic_ids(config, topic).await?;
    let mut clashes = Vec::new();
    for event in events {
        let LabelEvent::Round { round, labels, .. } = event else {
            continue;
        };
        if known_rounds.contains(round) {
            clashes.push(format!("round {round:?}"));
        }
        clashes.extend(
            labels
                .iter()
                .filter(|l| known_labels.contains(&l.id))
                .map(|l| format!("label {:?}", l.id)),
        );
    }
    if !clashes.is_empty() {
        bail!(
            "{topic} already has {}: nothing published (a round id is announced once, a label \
             once; use add_examples events for more examples of a known label)",
            clashes.join(", ")
        );
    }
    Ok(())
}

fn summary(events: &[LabelEvent]) -> String {
    let (mut labels, mut examples) = (0, 0);
    for event in events {
        if let LabelEvent::Round { labels: specs, .. } = event {
            labels += specs.len();
            examples += specs.iter().map(|s| s.examples.len()).sum::<usize>();
        }
    }
    format!(
        "{} round(s), {labels} label(s), {examples} example(s)",
        events.len()
    )
}
