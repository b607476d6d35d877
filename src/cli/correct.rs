//! `gorag correct`: an operator's label for a text gorag classified — or `--none`, no active
//! label fits it — published to the labels topic as a `correct` event (every replica applies it
//! in the log's order, like any label event; a bad one goes to the dead-letter topic with its
//! reason).

use anyhow::{bail, Result};
use clap::Args;

use super::kafka_clients::KafkaArgs;
use super::labels_topic::{active_label_ids, labels_config, labels_producer, send};
use crate::events::{LabelEvent, EVENT_VERSION, NONE_OF_THESE_VERSION};

/// Active labels a refused label's message lists.
const LISTED_LABELS: usize = 20;

#[derive(Debug, Args)]
pub struct CorrectArgs {
    /// The text's id, as its prediction gave it.
    pub text_id: String,
    /// The right label (an active label id); leave it out with --none.
    #[arg(required_unless_present = "none")]
    pub label: Option<String>,
    /// No active label fits the text ("none of these"): it becomes no label's example, what
    /// gorag learned from it is taken back, and it joins the discovery pool.
    #[arg(long, conflicts_with = "label")]
    pub none: bool,
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
    /// outcome also refits the confidence (docs/design/decisions.md, "Refitting where gorag runs").
    #[arg(long)]
    pub audit: bool,
}

pub async fn correct(args: CorrectArgs) -> Result<()> {
    for (what, value) in [
        ("TEXT_ID", Some(&args.text_id)),
        ("LABEL", args.label.as_ref()),
        ("--text", Some(&args.text)),
    ] {
        if value.is_some_and(|v| v.trim().is_empty()) {
            bail!("{what}: must not be empty");
        }
    }
    let config = labels_config(&args.kafka, args.topic.as_deref())?;
    let topic = config.topics.labels.clone();
    if let Some(label) = &args.label {
        // The service would dead-letter a correction to a label it does not know: say so now.
        let active = active_label_ids(&config, &topic).await?;
        if !active.contains(label) {
            bail!("{}", unknown_label(label, &active, &topic));
        }
    }
    let event = LabelEvent::Correct {
        // A correction to none of the labels is version 2: an older build refuses it as
        // unsupported rather than as a field it does not know.
        version: if args.none {
            NONE_OF_THESE_VERSION
        } else {
            EVENT_VERSION
        },
        text_id: args.text_id.clone(),
        label: args.label.clone(),
        none_of_these: args.none,
        text: args.text,
        audit: args.audit,
        reviewer: None,
        proposal: None,
    };
    let payload = serde_json::to_vec(&event)?;
    send(
        &labels_producer(&config).await?,
        &topic,
        &args.text_id,
        &payload,
    )
    .await?;
    let what = args.label.as_deref().unwrap_or("none of the labels");
    println!(
        "sent: {} is {} ({topic} at {})",
        super::printable::printable(&args.text_id),
        super::printable::printable(what),
        config.kafka.brokers
    );
    Ok(())
}

/// Why a correction to `label` is refused before it is sent.
fn unknown_label(label: &str, active: &std::collections::BTreeSet<String>, topic: &str) -> String {
    let hint = if label.trim().eq_ignore_ascii_case("none") {
        " (to say that no label fits the text, use --none)"
    } else {
        ""
    };
    let label = crate::bounds::excerpt(label);
    if active.is_empty() {
        return format!("LABEL {label}: {topic} announces no active label yet{hint}");
    }
    // Ids from the topic: quoted and cut, as an error text quotes any input.
    let mut listed: Vec<String> = active
        .iter()
        .take(LISTED_LABELS)
        .map(|id| crate::bounds::excerpt(id))
        .collect();
    if active.len() > LISTED_LABELS {
        listed.push("…".into());
    }
    format!(
        "LABEL {label}: not an active label on {topic}{hint}; active: {}",
        listed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_label_says_which_are_active_and_none_points_at_the_flag() {
        let active: std::collections::BTreeSet<String> = ["billing", "shipping"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let message = unknown_label("none", &active, "gorag.labels");
        assert!(message.contains("use --none"), "{message}");
        assert!(
            message.contains(r#"active: "billing", "shipping""#),
            "{message}"
        );
        let message = unknown_label("biling", &active, "gorag.labels");
        assert!(!message.contains("--none"), "{message}");
        let empty = unknown_label("billing", &Default::default(), "gorag.labels");
        assert!(empty.contains("no active label yet"), "{empty}");
    }
}
