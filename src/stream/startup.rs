//! Everything before the loop: restore the replica from its store, create and check the
//! topics, build the clients.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::Consumer;

use super::kafka::{self, MetadataClient, Producer};
use super::replica::sync::{LogClients, LogSync};
use super::replica::{Cursor, LogTopics, Replica, SnapshotPolicy};
use super::stop::Stop;
use super::ServeError;
use crate::classify::Classifier;
use crate::config::ServeConfig;
use crate::store::{SledStore, StateStore};
use crate::telemetry::admin::Health;

/// What the loop starts with.
pub struct Started {
    pub replica: Replica,
    pub logs: LogSync,
    pub classifier: Classifier,
    pub producer: Producer,
    pub watermarks: Arc<MetadataClient>,
}

pub async fn start(
    config: &ServeConfig,
    stop: Stop,
    health: Arc<Health>,
) -> Result<Started, ServeError> {
    let replica = restore(config)?;
    if config.kafka.create_topics {
        kafka::ensure_topics(config).await?;
    }
    let llm = config.llm.settings().client()?;
    let classifier = Classifier::new(llm, config.engine.keywords);
    let producer = kafka::producer(config)?;
    let watermarks: MetadataClient = kafka::client_config(config)
        .set("group.id", format!("{}-watermarks", config.kafka.group_id))
        .set("enable.auto.commit", "false")
        .create_with_context(kafka::Logged)
        .map_err(|e| ServeError::Kafka("creating the watermark client", e))?;
    let watermarks = Arc::new(watermarks);
    for topic in [&config.topics.labels, &config.topics.changelog] {
        check_one_partition(&watermarks, topic).await?;
    }
    let cursor = &replica.cursor;
    let clients = LogClients {
        labels: kafka::log_reader(
            config,
            &config.topics.labels,
            "labels",
            cursor.labels_next,
            100,
        )?,
        changelog: kafka::log_reader(
            config,
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
    );
    Ok(Started {
        replica,
        logs,
        classifier,
        producer,
        watermarks,
    })
}

/// The replica as this instance's store left it.
fn restore(config: &ServeConfig) -> Result<Replica, ServeError> {
    let mut store = SledStore::open_with_cache(
        &config.state.dir,
        config.state.cache_mb.saturating_mul(1 << 20),
    )?;
    let instance = store.instance_id()?;
    let mut saved = store.load()?;
    let engine = saved.restore(config.engine_config())?;
    let topics = LogTopics {
        changelog: config.topics.changelog.clone(),
        labels: config.topics.labels.clone(),
        texts: config.topics.texts.clone(),
    };
    let cursor = Cursor::restore(&saved.offsets, &topics);
    tracing::info!(
        %instance,
        changelog_next = cursor.changelog_next,
        labels = engine.labels().len(),
        nodes = engine.graph().node_count(),
        replayed = saved.log.len(),
        digest = %engine.digest(),
        "state restored"
    );
    let policy = SnapshotPolicy {
        every: config.state.snapshot_every,
        min_interval: Duration::from_secs_f64(config.state.snapshot_min_interval_secs),
    };
    Ok(Replica::new(
        engine,
        Box::new(store),
        cursor,
        topics,
        instance,
        policy,
        config.topics.dead_letter.clone(),
    )
    .with_passes_every(Some(config.discovery.pass_every).filter(|_| config.discovery.enabled)))
}

/// The labels and changelog topics are ordered logs: exactly one partition each.
async fn check_one_partition(client: &Arc<MetadataClient>, topic: &str) -> Result<(), ServeError> {
    let (client, name) = (client.clone(), topic.to_string());
    let metadata = tokio::task::spawn_blocking(move || {
        client.fetch_metadata(Some(&name), Duration::from_secs(10))
    })
    .await?
    .map_err(|e| ServeError::Kafka("reading topic metadata", e))?;
    let partitions = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .map(|t| t.partitions().len())
        .unwrap_or(0);
    if partitions != 1 {
        return Err(ServeError::Topic(format!(
            "topic {topic} has {partitions} partitions; it must have exactly 1 (its order is the \
             order changes apply in)"
        )));
    }
    Ok(())
}
