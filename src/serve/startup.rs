//! Everything before the loop: restore the replica from its store, create and check the
//! topics, build the clients.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::replica::sync::{LogClients, LogSync};
use super::replica::{Cursor, LogTopics, Replica, SnapshotPolicy};
use super::stop::{Phase, Stop};
use super::ServeError;
use crate::broker::{self, Broker, MetadataClient, Producer, RecordLimit};
use crate::config::ServeConfig;
use crate::embed::{RememberingEncoder, SentenceModel};
use crate::one_text::TextSteps;
use crate::reopen;
use crate::store::{SledStore, StateStore};
use crate::telemetry::admin::Health;

/// What the loop starts with.
pub struct Started {
    pub replica: Replica,
    pub logs: LogSync,
    pub classifier: TextSteps,
    pub producer: Producer,
    pub watermarks: MetadataClient,
    /// With the embedding signal, the encoder that keeps the labels' vectors (see
    /// [`forget_unasked_vectors`]).
    pub kept_vectors: Option<KeptVectors>,
}

pub use crate::reopen::KeptVectors;

/// Drop the kept vectors no label asked for: called after the first catch-up, so that a round
/// a stop cut short keeps what was encoded of it for the start that applies it.
pub fn forget_unasked_vectors(encoder: &RememberingEncoder<SentenceModel>) {
    match encoder.forget_unasked() {
        Ok(forgotten) => tracing::info!(
            forgotten,
            "kept sentence vectors no label asked for dropped"
        ),
        Err(error) => tracing::warn!(%error, "dropping unused kept sentence vectors"),
    }
}

pub async fn start(
    broker: &Broker,
    config: &ServeConfig,
    stop: Stop,
    health: Arc<Health>,
) -> Result<Started, ServeError> {
    let (replica, kept_vectors) = restore(config)?;
    let watermarks = broker.metadata_client("watermarks")?;
    wait_for_brokers(config, &watermarks, &stop, &health).await?;
    if config.kafka.create_topics {
        broker.ensure_topics().await?;
    } else {
        check_topics_exist(config, &watermarks).await?;
    }
    let llm = config.llm.settings().client()?;
    warn_about_asking(config, llm.is_some());
    if let Some(llm) = &llm {
        check_llm_endpoint(llm.clone(), config.llm.url.clone());
    }
    let classifier = TextSteps::new(llm, config.engine.keywords);
    let producer = broker.producer()?;
    for topic in [&config.topics.labels, &config.topics.changelog] {
        check_one_partition(&watermarks, topic).await?;
    }
    let cursor = replica.cursor();
    let clients = LogClients {
        labels: broker.log_reader(&config.topics.labels, "labels", cursor.labels_next, 100)?,
        changelog: broker.log_reader(
            &config.topics.changelog,
            "changelog",
            cursor.changelog_next,
            20,
        )?,
        watermarks: watermarks.clone(),
        producer: producer.clone(),
    };
    let logs = LogSync::new(
        clients,
        stop,
        health,
        classifier.clone(),
        config.llm.describe_labels,
        cursor.labels_next,
        config.bounds(),
    );
    Ok(Started {
        replica,
        logs,
        classifier,
        producer,
        watermarks,
        kept_vectors,
    })
}

/// The replica as this instance's store left it, and the encoder keeping its labels' vectors.
fn restore(config: &ServeConfig) -> Result<(Replica, Option<KeptVectors>), ServeError> {
    let mut store = SledStore::open_with_cache(
        config.state.dir()?,
        config.state.cache_mb.saturating_mul(1 << 20),
    )?;
    let instance = store.instance_id()?;
    let mut saved = store.load()?;
    let (state, kept_vectors) = reopen::restore(&mut saved, config.restoring(), Some(&store))?;
    let topics = LogTopics {
        changelog: config.topics.changelog.clone(),
        labels: config.topics.labels.clone(),
        texts: config.topics.texts.clone(),
    };
    let cursor = Cursor::restore(&saved.offsets, &topics);
    tracing::info!(
        %instance,
        changelog_next = cursor.changelog_next,
        labels = state.engine().labels().len(),
        nodes = state.engine().graph().node_count(),
        replayed = saved.log.len(),
        digest = %state.digest(),
        "state restored"
    );
    let policy = SnapshotPolicy {
        every: config.state.snapshot_every,
        min_interval: Duration::from_secs_f64(config.state.snapshot_min_interval_secs),
    };
    let replica = Replica::new(
        state,
        Box::new(store),
        cursor,
        topics,
        instance,
        policy,
        config.topics.dead_letter.clone(),
    )
    .with_passes_every(Some(config.discovery.pass_every).filter(|_| config.discovery.enabled))
    .with_dead_letter_limit(RecordLimit::of(&config.broker()));
    Ok((replica, kept_vectors))
}

/// How long one metadata request of the wait may take.
const BROKER_PROBE: Duration = Duration::from_secs(2);
/// How often the wait says it is still waiting.
const SAY_WAITING_EVERY: Duration = Duration::from_secs(5);

/// Wait until the brokers answer, for at most `kafka.startup_wait_secs`, saying at once and
/// then every few seconds which address is tried and librdkafka's reason (connection refused,
/// name not resolved, authentication failed, …); `/readyz` carries the same reason. A stop
/// signal ends the wait.
async fn wait_for_brokers(
    config: &ServeConfig,
    client: &MetadataClient,
    stop: &Stop,
    health: &Health,
) -> Result<(), ServeError> {
    let brokers = &config.kafka.brokers;
    let limit = Duration::from_secs_f64(config.kafka.startup_wait_secs);
    let started = Instant::now();
    let mut said: Option<Instant> = None;
    loop {
        let error = match client.probe(BROKER_PROBE).await {
            Ok(brokers_known) => {
                broker::broker_answered();
                health.set_broker(None);
                tracing::info!(
                    %brokers,
                    brokers_known,
                    waited_secs = started.elapsed().as_secs(),
                    "Kafka brokers answered"
                );
                return Ok(());
            }
            Err(error) => error,
        };
        let trouble = broker::broker_trouble();
        if let Some(trouble) = trouble.as_ref().filter(|t| t.kind.is_settled()) {
            return Err(ServeError::BrokerRefused {
                brokers: brokers.clone(),
                reason: trouble.reason.clone(),
                fix: trouble.kind.fix(),
            });
        }
        let reason = trouble.map_or_else(|| error.to_string(), |t| t.reason);
        health.set_broker(Some(reason.clone()));
        let waited = started.elapsed();
        if waited >= limit {
            return Err(ServeError::BrokersUnreachable {
                brokers: brokers.clone(),
                waited_secs: waited.as_secs(),
                reason,
            });
        }
        if said.is_none_or(|at| at.elapsed() >= SAY_WAITING_EVERY) {
            tracing::warn!(
                %brokers,
                %reason,
                waited_secs = waited.as_secs(),
                gives_up_after_secs = limit.as_secs(),
                "waiting for the Kafka brokers (kafka.brokers)"
            );
            said = Some(Instant::now());
        }
        if stop.phase() != Phase::Running {
            return Err(ServeError::StoppedWhileStarting);
        }
        let mut watch = stop.clone();
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = watch.changed() => return Err(ServeError::StoppedWhileStarting),
        }
    }
}

/// With `kafka.create_topics = false` the operator made the topics: name every one missing,
/// at once, rather than fail later on the first record.
async fn check_topics_exist(
    config: &ServeConfig,
    client: &MetadataClient,
) -> Result<(), ServeError> {
    let existing = client.partitions(None, Duration::from_secs(10)).await?;
    let t = &config.topics;
    let mut wanted = vec![
        &t.labels,
        &t.changelog,
        &t.texts,
        &t.predictions,
        &t.hallucinations,
        &t.dead_letter,
    ];
    if config.discovery.enabled {
        wanted.push(&t.proposals);
    }
    let missing: Vec<String> = wanted
        .into_iter()
        .filter(|name| !existing.iter().any(|(t, _)| t == name.as_str()))
        .cloned()
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ServeError::TopicMissing(missing.join(", ")))
    }
}

/// The labels and changelog topics are ordered logs: exactly one partition each.
async fn check_one_partition(client: &MetadataClient, topic: &str) -> Result<(), ServeError> {
    let partitions = client
        .partitions(Some(topic), Duration::from_secs(10))
        .await?
        .into_iter()
        .find(|(name, _)| name == topic)
        .map_or(0, |(_, partitions)| partitions);
    if partitions == 0 {
        return Err(ServeError::TopicMissing(topic.to_string()));
    }
    if partitions != 1 {
        return Err(ServeError::TopicLayout {
            topic: topic.to_string(),
            partitions,
        });
    }
    Ok(())
}

/// Ask the LLM endpoint once, in the background, and say at once when it does not answer:
/// the service runs without it (texts are decided by retrieval; labels go undescribed), so
/// this warns rather than stops, with the URL, the error and the fix in one line.
fn check_llm_endpoint(llm: crate::llm::LlmClient, url: String) {
    // Scheme, host and port: a URL may carry a user and password.
    let url = crate::llm::key::shown(&url);
    tokio::spawn(async move {
        match llm.check_endpoint().await {
            Ok(()) => tracing::info!(%url, "the LLM endpoint answered"),
            Err(error) => tracing::warn!(
                %url,
                %error,
                "the LLM endpoint did not answer a test request: while it does not, labels are \
                 indexed without descriptions and texts are decided by retrieval. Start it (scripts/llm.sh start \
                 runs the local model), set llm.url to another OpenAI-compatible endpoint (its \
                 key in llm.api_key_file, $GORAG_LLM_API_KEY or $OPENAI_API_KEY), or set \
                 llm.url = \"none\""
            ),
        }
    });
}

/// Settings of `llm.ask_below` that cannot do what an operator likely meant.
fn warn_about_asking(config: &ServeConfig, llm: bool) {
    let engine = config.engine_config();
    if !llm || engine.ask_below <= 0.0 {
        return;
    }
    if !engine.calibrator.reads_llm() && engine.ask_below <= engine.abstain_below {
        // The LLM is asked only below `ask_below`, and a calibrator that does not weigh its
        // belief leaves the confidence there: every such text stays under review.
        tracing::warn!(
            ask_below = engine.ask_below,
            abstain_below = engine.abstain_below,
            "texts the LLM is asked about will all need review: the calibrator does not weigh \
             the LLM's answer (fit one on a `gorag eval --ask-below 1` run with `gorag \
             calibrate` and set engine.calibrator; docs/design/decisions.md)"
        );
    }
}
