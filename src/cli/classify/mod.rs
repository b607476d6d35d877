//! `gorag classify`: labels and texts from files (or stdin), one prediction per line out — the
//! service's engine, configuration and LLM options, no broker (docs/guide/classify.md).

mod corrections;
mod output;
mod texts;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use super::config_args::ConfigArgs;
use super::stop::StopSignal;
use crate::bounds::Bounds;
use crate::classify::{sync_taxonomy, Correction, Session};
use crate::events::taxonomy;
use crate::events::{InputPosition, LabelEvent};
use crate::input::Format;
use output::{OutputFormat, Printer, Tally};
use texts::{Item, TextsInput};

/// Texts between two writes of what was learned to the state folder.
const RECORD_EVERY: usize = 100;

#[derive(Debug, Args)]
pub struct ClassifyArgs {
    /// The texts: a CSV file (a `text` column; `id`, `gold_label` optional; other columns are
    /// kept as metadata) or a JSONL file of text events, where label events may come between
    /// texts. `-` or nothing: stdin, read as it comes.
    pub texts: Option<PathBuf>,
    /// The labels: a taxonomy file, CSV or JSONL, as `gorag labels import` reads it (`label`,
    /// `name`, `description`, `example`, `round`; one row per example).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Keep what gorag learns (labels, examples, texts learned online) in this folder between
    /// runs; the labels file then adds only what is new in it.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Reviewers' answers to apply first: a CSV with `id` and `label` (an active label, or
    /// `none_of_these`), and optionally `audit` (true: a text picked at random to check gorag)
    /// and `text` (else it is taken from the texts file, by id). An answer given before is not
    /// applied again.
    #[arg(long)]
    pub corrections: Option<PathBuf>,
    /// How predictions are printed.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub output: OutputFormat,
    /// The texts' format (default: from the file's extension; stdin: jsonl).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// The LLM's OpenAI-compatible base URL, or `none` (the same as `--set llm.url=…`).
    #[arg(long)]
    pub llm: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Csv,
    Jsonl,
}

impl From<FormatArg> for Format {
    fn from(format: FormatArg) -> Self {
        match format {
            FormatArg::Csv => Format::Csv,
            FormatArg::Jsonl => Format::Jsonl,
        }
    }
}

pub async fn classify(args: ClassifyArgs) -> Result<()> {
    let overrides: Vec<String> = args
        .llm
        .iter()
        .map(|url| format!("llm.url={url}"))
        .collect();
    let config = args.config.load(&overrides)?;
    let source = TextsInput::new(args.texts.clone(), args.format.map(Format::from))?;
    let mut session = Session::open(&config, args.state.as_deref())?;
    let taxonomy = match &args.labels {
        Some(path) => Some(read_taxonomy(path, session.bounds())?),
        None => None,
    };
    let sync = taxonomy.map(|events| sync_taxonomy(session.engine(), events));
    let to_apply = sync.as_ref().map_or(&[][..], |s| &s.events[..]);
    if session.engine().labels().active().next().is_none()
        && to_apply.is_empty()
        && source.format == Format::Csv
    {
        bail!(
            "no labels to classify with: give a labels file with --labels FILE (a CSV with \
             `label` and `example` columns, one row per example){}",
            args.state
                .as_ref()
                .map_or(String::new(), |s| format!(" — {} holds none", s.display()))
        );
    }
    let mut llm_checked = false;
    if session.would_describe(to_apply) || session.asks_per_text() {
        check_llm(&session, &config.llm.url).await?;
        llm_checked = true;
    }
    let mut tally = Tally::default();
    if let Some(sync) = sync {
        for notice in &sync.notices {
            eprintln!("{}: {notice}", display(args.labels.as_deref()));
        }
        for event in sync.events {
            session.apply(event).await.map_err(|rejection| {
                anyhow::anyhow!("{}: {rejection}", display(args.labels.as_deref()))
            })?;
            tally.label_events += 1;
        }
        session.record()?;
    }
    if let Some(path) = &args.corrections {
        if args.state.is_none() && args.texts.is_none() {
            bail!(
                "--corrections without --state and without texts changes nothing: give the \
                 state folder the answers are for (--state DIR), or texts to classify with them"
            );
        }
        let applied = corrections::apply(path, &source, &mut session).await?;
        eprintln!(
            "{}: {} correction(s) applied{}",
            path.display(),
            applied.applied,
            if applied.repeated > 0 {
                format!(", {} given before (not applied again)", applied.repeated)
            } else {
                String::new()
            }
        );
        if args.texts.is_none() {
            session.save().context("saving the corrections")?;
            return Ok(());
        }
    }
    let reading = Reading {
        source: &source,
        format: args.output,
        llm_url: &config.llm.url,
        llm_checked,
    };
    // What was learned is saved whatever stopped the run (a closed pipe, an LLM check).
    let ran = run(&mut session, reading, &mut tally).await;
    session.save().context("saving what was learned")?;
    let stopped_by = ran?;
    eprintln!("{}", tally.summary());
    if let Some(signal) = stopped_by {
        bail!("interrupted by {signal}: what was read so far is classified and saved");
    }
    if tally.classified == 0 && tally.unusable == 0 {
        bail!("{}: no texts in it", source.name());
    }
    if tally.unusable > 0 {
        bail!(
            "{}: {} line(s) could not be used (each named above)",
            source.name(),
            tally.unusable
        );
    }
    Ok(())
}

fn display(path: Option<&Path>) -> String {
    path.map_or(String::new(), |p| p.display().to_string())
}

fn read_taxonomy(path: &Path, bounds: &Bounds) -> Result<Vec<crate::events::LabelEvent>> {
    let format = super::labels::format_of(path)?;
    let text = super::labels::read_text_file(path)?;
    let default_round = path
        .file_stem()
        .map_or("labels".to_string(), |s| s.to_string_lossy().into_owned());
    taxonomy::rounds(&text, format, &default_round, bounds)
        .with_context(|| format!("{} is not a labels file gorag can read", path.display()))
}

async fn check_llm(session: &Session, url: &str) -> Result<()> {
    let Some(llm) = session.llm() else {
        return Ok(());
    };
    if let Err(error) = llm.check_endpoint().await {
        bail!(
            "the LLM endpoint {url} did not answer a test request ({error}). gorag classify asks \
             it to describe named labels without a description (llm.describe_labels) and, with \
             llm.ask_below above 0, to choose. Start it (scripts/llm.sh start runs the local \
             model), point --llm at another OpenAI-compatible endpoint (its key in \
             $GORAG_LLM_API_KEY, $OPENAI_API_KEY or llm.api_key_file), or classify by \
             retrieval alone with --llm none"
        );
    }
    Ok(())
}

/// What [`run`] reads and how it prints.
struct Reading<'a> {
    source: &'a TextsInput,
    format: OutputFormat,
    llm_url: &'a str,
    /// Whether the LLM endpoint answered already (else it is asked before the first round
    /// whose labels it is to describe).
    llm_checked: bool,
}

/// Classify what `source` holds, in order; the signal that stopped it, if one did.
async fn run(
    session: &mut Session,
    reading: Reading<'_>,
    tally: &mut Tally,
) -> Result<Option<StopSignal>> {
    let Reading {
        source,
        format,
        llm_url,
        mut llm_checked,
    } = reading;
    let mut items = source.read()?;
    let mut printer = Printer::new(format)?;
    let name = source.name();
    let mut since_recorded = 0;
    // Listening from here on, to SIGTERM as to Ctrl-C (a job scheduler's stop, `kill`): one
    // that comes while a text is classified is seen at the next one.
    let stop = super::stop::listen();
    tokio::pin!(stop);
    loop {
        let item = tokio::select! {
            item = items.recv() => item,
            signal = &mut stop => return Ok(Some(signal)),
        };
        let Some(item) = item else {
            return Ok(None);
        };
        match item {
            Item::Unreadable(error) => {
                eprintln!("{name}:{error}");
                tally.unusable += 1;
            }
            Item::Label { line, json } => {
                let event = Session::decode_label(&json);
                if let Ok(event) = &event {
                    if !llm_checked && session.would_describe(std::slice::from_ref(event)) {
                        check_llm(session, llm_url).await?;
                        llm_checked = true;
                    }
                }
                let applied = match event {
                    // A correction goes through the state's record of answers: given again
                    // (the same file run twice), it is not applied twice.
                    Ok(LabelEvent::Correct {
                        text_id,
                        label,
                        none_of_these,
                        text,
                        audit,
                        ..
                    }) if label.is_some() != none_of_these => session
                        .correct(Correction {
                            text_id,
                            label,
                            text,
                            audit,
                        })
                        .await
                        .map(|_| ()),
                    Ok(event) => session.apply(event).await.map(|_| ()),
                    Err(rejection) => Err(rejection),
                };
                match applied {
                    Ok(()) => {
                        tally.label_events += 1;
                        session.record()?;
                    }
                    Err(rejection) => {
                        eprintln!("{name}:line {line}: {rejection}");
                        tally.unusable += 1;
                    }
                }
            }
            Item::Text { line, json } => {
                let position = InputPosition {
                    topic: name.clone(),
                    partition: 0,
                    offset: line as i64,
                };
                let predicted = match session.decode_text(&json) {
                    Ok(event) => session
                        .classify(&event, position)
                        .await
                        .map(|prediction| (prediction, event.text)),
                    Err(rejection) => Err(rejection),
                };
                match predicted {
                    Ok((prediction, text)) => {
                        printer.print(&prediction, &text)?;
                        tally.count(&prediction);
                        since_recorded += 1;
                        if since_recorded >= RECORD_EVERY {
                            session.record()?;
                            since_recorded = 0;
                        }
                    }
                    Err(rejection) => {
                        eprintln!("{name}:line {line}: {rejection}");
                        tally.unusable += 1;
                    }
                }
            }
        }
    }
}
