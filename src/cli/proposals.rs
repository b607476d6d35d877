//! `gorag proposals`: list the proposed classes on the proposals topic; accept one (a round
//! with its label goes to the labels topic) or reject it (it is not proposed again).

use anyhow::{bail, Result};
use clap::{Args, Subcommand, ValueEnum};

use super::kafka_clients::KafkaArgs;
use super::labels_topic::{label_topic_ids, labels_producer, read_to_end, send};
use super::printable::printable;
use crate::broker::commands::CommandProducer;
use crate::config::ServeConfig;
use crate::events::proposal::{self, ProposalEvent, ProposalStatus};
use crate::events::{decode, LabelEvent};

#[derive(Debug, Args)]
pub struct ProposalsArgs {
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// The proposals topic (default: the configuration's `topics.proposals`).
    #[arg(long)]
    pub topic: Option<String>,
    #[command(subcommand)]
    pub action: Option<ProposalsAction>,
}

#[derive(Debug, Subcommand)]
pub enum ProposalsAction {
    /// List the open proposals (the default).
    List {
        /// Accepted, rejected and withdrawn ones too.
        #[arg(long)]
        all: bool,
        #[arg(long, value_enum, default_value = "table")]
        format: ListFormat,
    },
    /// Accept a proposal: publish a round with its label (its representatives' excerpts as
    /// examples) to the labels topic, and mark it accepted.
    Accept {
        id: String,
        /// The new label's id (default: the proposal's name, lower case, words joined by `_`).
        #[arg(long)]
        name: Option<String>,
        /// The labels topic (default: the configuration's `topics.labels`).
        #[arg(long)]
        labels_topic: Option<String>,
    },
    /// Reject a proposal: it is not proposed again.
    Reject { id: String },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

pub async fn proposals(args: ProposalsArgs) -> Result<()> {
    let ProposalsArgs {
        kafka,
        topic,
        action,
    } = args;
    // The topics named by flags are the configuration's, so that those created first get the
    // layout the service needs.
    let mut flags: Vec<String> = topic
        .iter()
        .map(|t| format!("topics.proposals={t}"))
        .collect();
    if let Some(ProposalsAction::Accept {
        labels_topic: Some(labels),
        ..
    }) = &action
    {
        flags.push(format!("topics.labels={labels}"));
    }
    let config = kafka.load_with(&flags)?;
    let topic = config.topics.proposals.clone();
    let action = action.unwrap_or(ProposalsAction::List {
        all: false,
        format: ListFormat::Table,
    });
    let current = proposal::current(read_proposals(&config, &topic).await?);
    match action {
        ProposalsAction::List { all, format } => {
            let shown: Vec<&ProposalEvent> = current
                .values()
                .filter(|p| all || p.status == ProposalStatus::Open)
                .collect();
            match format {
                ListFormat::Json => println!("{}", serde_json::to_string_pretty(&shown)?),
                ListFormat::Table => print!("{}", table(&shown)),
            }
        }
        ProposalsAction::Accept {
            id,
            name,
            labels_topic,
        } => {
            let open = open_proposal(&current, &id)?;
            // A --labels-topic is in the configuration already (above).
            let _ = labels_topic;
            let labels_topic = config.topics.labels.clone();
            let label = accept(&config, &topic, open, name.as_deref(), &labels_topic).await?;
            println!(
                "accepted {}: label {} published in round {} to {labels_topic}",
                printable(&id),
                printable(&label),
                printable(&open.accepting_round_id())
            );
        }
        ProposalsAction::Reject { id } => {
            let decided = open_proposal(&current, &id)?.decided(ProposalStatus::Rejected, None)?;
            let producer = CommandProducer::new(&config.broker())?;
            let key = decided.record_key();
            send(&producer, &topic, &key, &serde_json::to_vec(&decided)?).await?;
            println!("rejected {}", printable(&id));
        }
    }
    Ok(())
}

/// Publish the accepting round (unless an earlier, interrupted accept already did), then the
/// accepted revision. A label id the labels topic already has is refused before anything is
/// sent: the service would dead-letter the round.
async fn accept(
    config: &ServeConfig,
    topic: &str,
    open: &ProposalEvent,
    name: Option<&str>,
    labels_topic: &str,
) -> Result<String> {
    let round = open.accepting_round(name)?;
    let LabelEvent::Round { labels, .. } = &round else {
        bail!("accepting {} did not make a round", open.proposal);
    };
    // Past a bound the service would dead-letter the round (docs/guide/bounds.md).
    if let Err(rejection) = crate::events::bounds::label_event(&round, &config.bounds()) {
        bail!(
            "accepting {} would publish a round the service refuses: {}",
            open.proposal,
            rejection.message
        );
    }
    let label = labels.first().map(|l| l.id.clone()).unwrap_or_default();
    // The topics first: reading a missing labels topic could have the broker create it with
    // its default partition count.
    let producer = labels_producer(config).await?;
    let (rounds, label_ids) = label_topic_ids(config, labels_topic).await?;
    let round_id = open.accepting_round_id();
    if !rounds.contains(&round_id) {
        if label_ids.contains(&label) {
            bail!("label {label} already exists on {labels_topic}: choose another with --name");
        }
        send(
            &producer,
            labels_topic,
            &round_id,
            &serde_json::to_vec(&round)?,
        )
        .await?;
    }
    let decided = open.decided(ProposalStatus::Accepted, Some(label.clone()))?;
    send(
        &producer,
        topic,
        &decided.record_key(),
        &serde_json::to_vec(&decided)?,
    )
    .await?;
    Ok(label)
}

/// Every proposal event on the topic; records that are not one are skipped with a warning.
async fn read_proposals(config: &ServeConfig, topic: &str) -> Result<Vec<ProposalEvent>> {
    let payloads = read_to_end(config, topic).await?;
    Ok(payloads
        .iter()
        .filter_map(|payload| match decode::proposal_event(payload) {
            Ok(event) => Some(event),
            Err(error) => {
                tracing::warn!(%error, topic, "not a proposal event; skipped");
                None
            }
        })
        .collect())
}

fn open_proposal<'a>(
    current: &'a std::collections::BTreeMap<String, ProposalEvent>,
    id: &str,
) -> Result<&'a ProposalEvent> {
    let Some(found) = current.get(id) else {
        bail!("no proposal {id} on the proposals topic");
    };
    if found.status != ProposalStatus::Open {
        bail!("proposal {id} is already {}", found.status.as_str());
    }
    Ok(found)
}

/// One line per proposal: id, status, size (growth), name, keywords (each printable).
pub fn table(proposals: &[&ProposalEvent]) -> String {
    if proposals.is_empty() {
        return "no proposals\n".to_string();
    }
    let mut out = format!(
        "{:<16} {:<9} {:>5} {:>6}  {:<40} keywords\n",
        "id", "status", "size", "growth", "name"
    );
    for p in proposals {
        // Accepted: the label it became, which the reviewer may have named otherwise.
        let name = match &p.label {
            Some(label) => format!("{} → {label}", p.name),
            None => p.name.clone(),
        };
        out.push_str(&format!(
            "{:<16} {:<9} {:>5} {:>+6}  {:<40} {}\n",
            printable(&p.proposal),
            p.status.as_str(),
            p.size,
            p.growth as i64,
            printable(&name),
            printable(&p.keywords.join(", "))
        ));
        if let Some(description) = &p.description {
            out.push_str(&format!("{:<16} {}\n", "", printable(description)));
        }
        if let Some(closest) = &p.closest_label {
            out.push_str(&format!(
                "{:<16} closest known label: {} ({:.2})\n",
                "",
                printable(&closest.label),
                closest.similarity
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::Proposal;

    #[test]
    fn the_table_shows_one_line_per_proposal() {
        let proposal = Proposal {
            id: "p-1".into(),
            name: "crater, lava flow".into(),
            keywords: vec!["crater".into(), "lava flow".into()],
            members: vec!["a".into(), "b".into()],
            representatives: vec!["a".into()],
            excerpts: vec!["Lava".into()],
            size: 2,
            cohesion: 0.5,
        };
        let mut event = proposal.open_event(None).unwrap();
        let text = table(&[&event]);
        assert_eq!(text.lines().count(), 2);
        event.closest_label = Some(crate::events::proposal::ClosestLabel {
            label: "geology".into(),
            similarity: 0.4213,
        });
        assert!(table(&[&event]).contains("closest known label: geology (0.42)"));
        event.closest_label = None;
        assert!(text.contains("p-1"));
        assert!(text.contains("open"));
        assert!(text.contains("crater, lava flow"));
        assert_eq!(table(&[]), "no proposals\n");
        // Accepted under a name of the reviewer's: the table says which label it became, and
        // a name carrying a terminal command prints escaped.
        let mut accepted = event
            .decided(ProposalStatus::Accepted, Some("volcanoes".into()))
            .unwrap();
        accepted.name.push_str("\u{1b}[2J");
        let text = table(&[&accepted]);
        assert!(text.contains("→ volcanoes"), "{text}");
        assert!(
            text.contains("\\u{1b}[2J") && !text.contains('\u{1b}'),
            "{text}"
        );
    }
}
