//! One community pass of `gorag serve`, in a task of its own (never on the loop): the proposals
//! topic read first (the open proposals' members anchor their themes' parts), communities
//! over a copy of the pool, reconciled with what the topic held, an LLM
//! report for each new proposal, then the proposal events published keyed by proposal id.
//!
//! Every replica holds the same pool at the same changelog position, so the pass runs only on
//! the instance that wrote the record that made it due; should that instance die first, the
//! next pass catches up. Publishing is idempotent (revisions), so a pass repeated after a
//! restart publishes nothing new.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::broker::read_back::ReadBackError;
use crate::broker::{self, Broker, BrokerError, Outgoing, Producer};
use crate::discovery::{
    self, communities, proposal, reconcile, report, DiscoveryConfig, Holding, OpenProposal,
    PooledText,
};
use crate::engine::embedding::TextEncoder;
use crate::engine::LabelMaterial;
use crate::events::decode;
use crate::events::proposal::{
    current, ClosestLabel, ProposalEvent, ProposalStatus, PROPOSAL_EVENT_VERSION,
};
use crate::llm::LlmClient;

/// How long reading the proposals topic, and publishing one event, may take.
const TOPIC_LIMIT: Duration = Duration::from_secs(30);

#[derive(Debug, Error)]
pub enum PassError {
    #[error("finding communities: {0}")]
    Communities(#[from] leiden_rs::LeidenError),
    #[error(transparent)]
    ReadBack(#[from] ReadBackError),
    #[error("publishing proposal {0}: {1}")]
    Publish(String, BrokerError),
    #[error("publishing proposal {0}: no acknowledgement within {1:?}")]
    PublishTimeout(String, Duration),
    #[error("a pass task died: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// What a pass needs besides the pool.
#[derive(Clone)]
pub struct PassSettings {
    pub config: DiscoveryConfig,
    /// Where the proposals topic is read from.
    pub broker: Broker,
    /// Names the proposals topic's reader (it commits nothing).
    pub group: String,
    pub topic: String,
    pub producer: Producer,
    pub llm: Option<LlmClient>,
}

impl PassSettings {
    /// The service's settings (None when discovery is off); the proposals topic is read with
    /// a group id of its own, which commits nothing.
    pub fn of(
        config: &crate::config::ServeConfig,
        broker: &Broker,
        producer: &Producer,
        llm: Option<&LlmClient>,
    ) -> Option<Self> {
        config.discovery.enabled.then(|| Self {
            config: config.discovery.clone(),
            broker: broker.clone(),
            group: format!("{}-proposals", config.kafka.group_id),
            topic: config.topics.proposals.clone(),
            producer: producer.clone(),
            llm: llm.cloned(),
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassReport {
    pub pooled: usize,
    pub communities: usize,
    /// Communities found and not proposed, by rule.
    pub dropped: communities::Dropped,
    pub published: usize,
    /// Proposals on the topic after the pass, by status.
    pub open: usize,
    pub accepted: usize,
    pub rejected: usize,
    /// Withdrawn: every member left the pool.
    pub withdrawn: usize,
    pub seconds: f64,
}

/// One pass over `texts` (a copy of the pool, oldest first), with the active labels' own
/// material as the pass started; and the open proposals after it, to hold texts for.
pub async fn run(
    texts: Vec<PooledText>,
    material: LabelMaterial,
    encoder: Option<Arc<dyn TextEncoder>>,
    settings: PassSettings,
) -> Result<(PassReport, Holding), PassError> {
    let started = Instant::now();
    let pooled = texts.len();
    let pooled_ids: Vec<String> = texts.iter().map(|t| t.id.clone()).collect();
    let mut published = read_proposals(&settings).await?;
    let open = open_proposal_of(&texts, &published);
    let config = settings.config.clone();
    let pass_encoder = encoder.clone();
    let (found, dropped, texts, material) = tokio::task::spawn_blocking(move || {
        let encoder = pass_encoder;
        let refs: Vec<&PooledText> = texts.iter().collect();
        let meaning = discovery::meaning_of(&refs, encoder.as_ref(), &config, &material);
        let failed = discovery::meaning::failed(&refs, &meaning, &config, &material);
        if failed > 0 {
            tracing::warn!(
                texts = failed,
                "the sentence encoder gave no vector for some pooled texts; they are grouped by \
                 their words alone"
            );
        }
        let found = communities::find(&refs, &meaning, &open, &config, &material)?;
        let proposals = found
            .communities
            .iter()
            .map(|c| proposal::propose(&refs, c))
            .collect::<Vec<_>>();
        Ok::<_, PassError>((proposals, found.dropped, texts, material))
    })
    .await??;
    let pooled_ids: HashSet<&str> = pooled_ids.iter().map(String::as_str).collect();
    let (mut changed, refused) = reconcile::reconcile(&found, &published, &pooled_ids);
    for error in refused {
        tracing::warn!(%error, topic = %settings.topic, "proposal not republished");
    }
    // The open proposals after this pass, to hold texts for and to say which label each is
    // closest to.
    let mut after = published.clone();
    for event in &changed {
        after.insert(event.proposal.clone(), event.clone());
    }
    // Optional: should it fail, the pass publishes all the same and holds no text.
    let (mut holding, material) = match holding_of(&after, texts, material.clone(), encoder).await {
        Ok(held) => held,
        Err(error) => {
            tracing::warn!(%error, "the open proposals' meaning failed; no text is held");
            (Holding::default(), material)
        }
    };
    for event in &mut changed {
        if event.status == ProposalStatus::Open {
            say_closest_label(event, &holding, &material);
            if event.description.is_none() {
                write_report(settings.llm.as_ref(), event).await;
            }
            // Held texts name it as published (the LLM's name, when it wrote one).
            holding.rename(&event.proposal, &event.name);
        }
    }
    for event in &changed {
        publish(&settings, event).await?;
        published.insert(event.proposal.clone(), event.clone());
    }
    let count = |status| published.values().filter(|p| p.status == status).count();
    let report = PassReport {
        pooled,
        communities: found.len(),
        dropped,
        published: changed.len(),
        open: count(ProposalStatus::Open),
        accepted: count(ProposalStatus::Accepted),
        rejected: count(ProposalStatus::Rejected),
        withdrawn: count(ProposalStatus::Withdrawn),
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((report, holding))
}

/// The open proposals, to hold texts for, on an instance whose pool made a pass due on another
/// (which runs it): read from the proposals topic, their members encoded here. It reads the
/// topic as the other instance starts its pass, so it holds texts for the proposals as of the
/// pass before.
pub async fn refresh(
    texts: Vec<PooledText>,
    material: LabelMaterial,
    encoder: Option<Arc<dyn TextEncoder>>,
    settings: PassSettings,
) -> Result<Holding, PassError> {
    let published = read_proposals(&settings).await?;
    Ok(holding_of(&published, texts, material, encoder).await?.0)
}

/// Name the active label `event`'s members read most like (version 2 of the event then).
fn say_closest_label(event: &mut ProposalEvent, holding: &Holding, material: &LabelMaterial) {
    let closest = holding
        .closest_label(&event.proposal)
        .and_then(|(at, similarity)| Some((material.label_id(at)?, similarity)));
    if let Some((label, similarity)) = closest {
        event.closest_label = Some(ClosestLabel {
            label: label.to_string(),
            similarity: (similarity * 10_000.0).round() / 10_000.0,
        });
        event.version = PROPOSAL_EVENT_VERSION;
    }
}

/// The proposals topic's current record of each proposal (records that are not proposal
/// events are logged and skipped).
async fn read_proposals(
    settings: &PassSettings,
) -> Result<std::collections::BTreeMap<String, ProposalEvent>, PassError> {
    let payloads = settings
        .broker
        .read_to_end(&settings.group, &settings.topic, TOPIC_LIMIT)
        .await?;
    let events = payloads
        .iter()
        .filter_map(|p| match decode::proposal_event(p) {
            Ok(event) => Some(event),
            Err(error) => {
                tracing::warn!(%error, topic = %settings.topic, "not a proposal event; skipped");
                None
            }
        });
    Ok(current(events))
}

/// What the open proposals among `published` hold texts for, from their members among `texts`
/// (encoded here, off the loop); `material` handed back.
async fn holding_of(
    published: &std::collections::BTreeMap<String, ProposalEvent>,
    texts: Vec<PooledText>,
    material: LabelMaterial,
    encoder: Option<Arc<dyn TextEncoder>>,
) -> Result<(Holding, LabelMaterial), PassError> {
    let open: Vec<ProposalEvent> = published
        .values()
        .filter(|p| p.status == ProposalStatus::Open)
        .cloned()
        .collect();
    if open.is_empty() || encoder.is_none() {
        return Ok((Holding::default(), material));
    }
    Ok(tokio::task::spawn_blocking(move || {
        let refs: Vec<&PooledText> = texts.iter().collect();
        let open: Vec<OpenProposal> = open.iter().map(OpenProposal::from).collect();
        let holding = Holding::of_members(&open, &refs, encoder.as_ref(), &material);
        (holding, material)
    })
    .await?)
}

/// Each pooled text's open proposal (numbered in proposal-id order; a text in two goes to the
/// first), where it is a member of one: the pass joins the parts of that theme to it.
fn open_proposal_of(
    texts: &[PooledText],
    published: &std::collections::BTreeMap<String, ProposalEvent>,
) -> Vec<Option<u32>> {
    let mut member_of: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    for (n, event) in published
        .values()
        .filter(|p| p.status == ProposalStatus::Open)
        .enumerate()
    {
        for member in &event.members {
            member_of.entry(member.as_str()).or_insert(n as u32);
        }
    }
    texts
        .iter()
        .map(|text| member_of.get(text.id.as_str()).copied())
        .collect()
}

/// Ask the LLM to name and describe `event`'s theme; on failure the keyword name stays.
async fn write_report(llm: Option<&LlmClient>, event: &mut ProposalEvent) {
    let Some(llm) = llm else {
        return;
    };
    let excerpts: Vec<String> = event
        .representatives
        .iter()
        .map(|r| r.excerpt.clone())
        .collect();
    match llm
        .complete(&report::prompt(&event.keywords, &excerpts))
        .await
    {
        Ok(answer) => match report::parse(&answer.text) {
            Some((name, description)) => {
                event.name = name;
                event.description = description;
            }
            None => tracing::warn!(
                proposal = %event.proposal,
                answer = %answer.text,
                "community report without a name; keeping the keywords"
            ),
        },
        Err(error) => tracing::warn!(
            proposal = %event.proposal,
            %error,
            "community report failed; keeping the keywords"
        ),
    }
}

async fn publish(settings: &PassSettings, event: &ProposalEvent) -> Result<(), PassError> {
    let outgoing = Outgoing {
        topic: settings.topic.clone(),
        key: Some(event.record_key().into_bytes()),
        // Plain data: serialising cannot fail.
        payload: serde_json::to_vec(event).unwrap_or_default(),
        headers: Vec::new(),
    };
    let id = event.proposal.clone();
    match tokio::time::timeout(TOPIC_LIMIT, broker::deliver(&settings.producer, &outgoing)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(PassError::Publish(id, error)),
        Err(_) => Err(PassError::PublishTimeout(id, TOPIC_LIMIT)),
    }
}
