//! `gorag report`: the label space of a stopped service's state, as an HTML map and JSON — with
//! the stream's traffic and the open proposals when the broker is given.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;

use super::kafka_clients::KafkaArgs;
use crate::broker::commands;
use crate::config::ServeConfig;
use crate::discovery::label_map::{self, LabelMap, LabelTraffic};
use crate::discovery::{map_html, Proposal};
use crate::events::proposal::{self, ProposalEvent, ProposalStatus};
use crate::events::{decode, Prediction};

/// How long reading a topic to its end may take (the predictions topic of a busy stream is
/// the long one).
const READ_LIMIT: Duration = Duration::from_secs(300);

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The service's state directory (stop the service first: one process per database).
    #[arg(long)]
    pub dir: PathBuf,
    /// The HTML page to write; the same data goes beside it as JSON (`.json`).
    #[arg(long, default_value = "labels.html")]
    pub out: PathBuf,
    /// Also read the stream from these brokers: per-label volume and hallucinations, and the
    /// LLM's confusions, from the predictions topic; the open proposals from the proposals topic.
    /// The rest of the Kafka settings (`kafka.client`, topic names) come from the configuration.
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// The predictions topic (default: the configuration's `topics.predictions`).
    #[arg(long)]
    pub predictions_topic: Option<String>,
    /// The proposals topic (default: the configuration's `topics.proposals`).
    #[arg(long)]
    pub proposals_topic: Option<String>,
}

/// The JSON written beside the page.
#[derive(Serialize)]
struct ReportJson<'a> {
    #[serde(flatten)]
    map: &'a LabelMap,
    /// Poorly explained texts in the state's discovery pool.
    pooled_texts: usize,
    /// Open proposals (None: the broker was not read).
    proposals: Option<Vec<ProposalEvent>>,
}

/// What the stream says, read from the broker.
#[derive(Default)]
struct Stream {
    traffic: HashMap<String, LabelTraffic>,
    confusions: BTreeMap<(String, String), u64>,
    proposals: Option<Vec<ProposalEvent>>,
}

/// Draw the active labels of a state directory, grouped by the keywords they share (and the
/// confusions observed), with the stream's traffic and proposals when `--brokers` is given.
pub async fn report(args: ReportArgs) -> Result<()> {
    if args.out.extension().is_some_and(|e| e == "json") {
        bail!("--out is the HTML page; the JSON goes beside it (give e.g. labels.html)");
    }
    let (state, _) = super::state::load_state(&args.dir)?;
    let engine = state.engine();
    let given = args.kafka.brokers.is_some() || std::env::var_os("GORAG_BROKERS").is_some();
    let stream = match given {
        true => read_stream(&args).await?,
        false => Stream::default(),
    };
    let map = label_map::label_map(engine, &stream.confusions, &stream.traffic)
        .context("grouping the labels")?;
    let title = format!("{} active labels", map.labels.len());
    let listed: Option<Vec<_>> = stream
        .proposals
        .as_ref()
        .map(|open| open.iter().map(Proposal::from_event).collect());
    std::fs::write(&args.out, map_html::html(&title, &map, listed.as_deref()))
        .with_context(|| format!("writing {}", args.out.display()))?;
    let json = args.out.with_extension("json");
    let data = ReportJson {
        map: &map,
        pooled_texts: state.pool().len(),
        proposals: stream.proposals,
    };
    std::fs::write(&json, serde_json::to_string_pretty(&data)?)
        .with_context(|| format!("writing {}", json.display()))?;
    println!(
        "{} labels in {} communities: wrote {} and {}",
        map.labels.len(),
        map.groups,
        args.out.display(),
        json.display()
    );
    Ok(())
}

async fn read_stream(args: &ReportArgs) -> Result<Stream> {
    let config = args.kafka.load()?;
    let topics = &config.topics;
    let predictions_topic = args
        .predictions_topic
        .as_ref()
        .unwrap_or(&topics.predictions);
    let proposals_topic = args.proposals_topic.as_ref().unwrap_or(&topics.proposals);
    let predictions: Vec<Prediction> = read_topic(&config, predictions_topic)
        .await?
        .iter()
        .filter_map(|payload| serde_json::from_slice(payload).ok())
        .collect();
    let (traffic, confusions) = label_map::observed(&predictions);
    let events = read_topic(&config, proposals_topic)
        .await?
        .into_iter()
        .filter_map(|payload| decode::proposal_event(&payload).ok());
    let open = proposal::current(events)
        .into_values()
        .filter(|p| p.status == ProposalStatus::Open)
        .collect();
    Ok(Stream {
        traffic,
        confusions,
        proposals: Some(open),
    })
}

/// Every record's value on `topic`; a topic that does not exist has none (the proposals
/// topic of a service run without discovery, created by hand).
async fn read_topic(config: &ServeConfig, topic: &str) -> Result<Vec<Vec<u8>>> {
    Ok(commands::read_topic_if_any(&config.broker(), "gorag-report", topic, READ_LIMIT).await?)
}
