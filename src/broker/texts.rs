//! The texts consumer: events for the loop ([`TextsEvent`]), commits and pauses from it.
//!
//! On Kafka it is polled in a thread of its own (Quickwit's pattern). The service loop never
//! polls librdkafka itself: a thread polls continuously and hands
//! records, assignments and revocations to the loop as [`TextsEvent`]s. The consumer therefore
//! stays in its group whatever the loop is waiting for (an LLM slower than
//! `max.poll.interval.ms` under a full intake included); when the loop has taken in enough, it
//! pauses the partitions instead of not polling. The loop owns every piece of state (offset
//! tracker, slots): a revocation reaches it as a message and waits for its answer — the done
//! offsets of the revoked partitions, which the callback commits synchronously before the
//! partitions go (Vector's "flush on revoke").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as std_mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaError;
use rdkafka::producer::Producer as _;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use tokio::sync::mpsc;

use super::client::{self, KafkaProducer, Logged};
use super::BrokerSettings;
use super::ClientError;
use super::{BrokerError, Record};
use crate::position::Position;

/// How long a revocation waits for the loop's answer before giving the partitions up with
/// nothing committed (their texts are then read again: duplicates, never a loss).
pub(super) const REVOKE_ANSWER_WAIT: Duration = Duration::from_secs(30);
/// Poll timeout: how soon the thread notices it should stop.
const POLL_WAIT: Duration = Duration::from_millis(100);
/// Events queued between the thread and the loop.
const EVENT_QUEUE: usize = 64;

/// What the texts consumer tells the loop.
#[derive(Debug)]
pub enum TextsEvent {
    Record(Record),
    Assigned(Vec<i32>),
    /// The partitions are going: answer with (partition, next offset) to commit for them.
    Revoked {
        partitions: Vec<i32>,
        answer: std_mpsc::SyncSender<Vec<Position>>,
    },
    Error(BrokerError),
}

struct TextsContext {
    topic: String,
    events: mpsc::Sender<TextsEvent>,
    /// Flushed on revoke, so this instance's learn records for the partitions it gives up are
    /// in the changelog before the new owner writes any.
    producer: KafkaProducer,
}

impl ClientContext for TextsContext {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        client::log_librdkafka(level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        Logged.error(error, reason);
    }
}

impl TextsContext {
    fn partitions(&self, list: &TopicPartitionList) -> Vec<i32> {
        list.elements_for_topic(&self.topic)
            .iter()
            .map(|e| e.partition())
            .collect()
    }
}

impl ConsumerContext for TextsContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Rebalance::Revoke(revoked) = rebalance else {
            return;
        };
        let partitions = self.partitions(revoked);
        // Off the poll thread (the consumer dropped by an async task as the service stops):
        // blocking here would stall the runtime, and the loop has committed what it will.
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        if let Err(error) = self.producer.flush(Duration::from_secs(10)) {
            tracing::warn!(%error, "producer flush on revoke");
        }
        let (answer, answered) = std_mpsc::sync_channel(1);
        let event = TextsEvent::Revoked {
            partitions: partitions.clone(),
            answer,
        };
        // The loop is gone (shutting down): nothing more to commit from here.
        if self.events.blocking_send(event).is_err() {
            return;
        }
        let done = match answered.recv_timeout(REVOKE_ANSWER_WAIT) {
            Ok(done) => done,
            Err(_) => {
                tracing::warn!(?partitions, "no answer to a revocation; nothing committed");
                return;
            }
        };
        if done.is_empty() {
            tracing::info!(?partitions, "partitions revoked");
            return;
        }
        match commit_list(&self.topic, &done) {
            Ok(list) => {
                if let Err(error) = consumer.commit(&list, CommitMode::Sync) {
                    tracing::warn!(%error, "commit on revoke failed");
                }
            }
            Err(error) => tracing::warn!(%error, "commit on revoke failed"),
        }
        tracing::info!(?partitions, "partitions revoked");
    }

    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(list) = rebalance {
            let partitions = self.partitions(list);
            tracing::info!(?partitions, "partitions assigned");
            if tokio::runtime::Handle::try_current().is_err() {
                let _ = self.events.blocking_send(TextsEvent::Assigned(partitions));
            }
        }
    }
}

/// (partition, next offset) pairs as a commit list for `topic`.
fn commit_list(topic: &str, offsets: &[Position]) -> Result<TopicPartitionList, KafkaError> {
    let mut list = TopicPartitionList::new();
    for position in offsets {
        list.add_partition_offset(topic, position.partition, Offset::Offset(position.offset))?;
    }
    Ok(list)
}

/// The texts consumer: its events, and the commits and pauses the loop asks for.
pub struct TextsConsumer {
    events: mpsc::Receiver<TextsEvent>,
    control: Control,
}

enum Control {
    Kafka(KafkaTexts),
    #[cfg(any(test, feature = "memory-broker"))]
    Memory(Box<dyn Membership>),
}

/// A group membership other than Kafka's — the in-process broker's — driven through the texts
/// consumer (a trait, so that this file knows nothing of that broker).
#[cfg(any(test, feature = "memory-broker"))]
pub(super) trait Membership: Send + Sync {
    fn commit(&self, offsets: &[Position]);
    fn pause(&self, partitions: &[i32], pause: bool);
    fn positions(&self) -> Vec<Position>;
    fn leave(&self, offsets: Option<Vec<Position>>);
}

/// Event queue between a consumer and the loop.
pub(super) fn event_queue() -> (mpsc::Sender<TextsEvent>, mpsc::Receiver<TextsEvent>) {
    mpsc::channel(EVENT_QUEUE)
}

impl TextsConsumer {
    #[cfg(any(test, feature = "memory-broker"))]
    pub(super) fn memory(events: mpsc::Receiver<TextsEvent>, member: Box<dyn Membership>) -> Self {
        Self {
            events,
            control: Control::Memory(member),
        }
    }

    /// The next event; None once the consumer has stopped.
    pub async fn recv(&mut self) -> Option<TextsEvent> {
        self.events.recv().await
    }

    /// Commit without waiting (the next tick retries what fails).
    pub fn commit_async(&self, offsets: &[Position]) -> Result<(), BrokerError> {
        match &self.control {
            Control::Kafka(kafka) => kafka.commit_async(offsets).map_err(BrokerError::from),
            #[cfg(any(test, feature = "memory-broker"))]
            Control::Memory(member) => {
                member.commit(offsets);
                Ok(())
            }
        }
    }

    /// Stop or restart fetching `partitions` (the consumer stays in its group either way).
    pub fn pause(&self, partitions: &[i32], pause: bool) -> Result<(), BrokerError> {
        match &self.control {
            Control::Kafka(kafka) => kafka.pause(partitions, pause).map_err(BrokerError::from),
            #[cfg(any(test, feature = "memory-broker"))]
            Control::Memory(member) => {
                member.pause(partitions, pause);
                Ok(())
            }
        }
    }

    /// (partition, position) of every assigned partition that has one.
    pub fn positions(&self) -> Vec<Position> {
        match &self.control {
            Control::Kafka(kafka) => kafka.positions(),
            #[cfg(any(test, feature = "memory-broker"))]
            Control::Memory(member) => member.positions(),
        }
    }

    /// Stop reading, commit `offsets` and leave the group, waiting at most `limit`.
    pub async fn close(mut self, offsets: Option<Vec<Position>>, limit: Duration) {
        // Closing the queue first answers any revocation waiting on the loop.
        self.events.close();
        while self.events.try_recv().is_ok() {}
        match self.control {
            Control::Kafka(kafka) => kafka.close(offsets, limit).await,
            #[cfg(any(test, feature = "memory-broker"))]
            Control::Memory(member) => member.leave(offsets),
        }
    }
}

/// Subscribe to the texts topic on Kafka and start polling.
pub(super) fn start_kafka(
    config: &BrokerSettings,
    producer: KafkaProducer,
) -> Result<TextsConsumer, ClientError> {
    let (sender, events) = event_queue();
    let kafka = KafkaTexts::start(config, producer, sender)?;
    Ok(TextsConsumer {
        events,
        control: Control::Kafka(kafka),
    })
}

/// The Kafka texts consumer and its poll thread.
struct KafkaTexts {
    topic: String,
    consumer: Arc<BaseConsumer<TextsContext>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl KafkaTexts {
    fn start(
        config: &BrokerSettings,
        producer: KafkaProducer,
        sender: mpsc::Sender<TextsEvent>,
    ) -> Result<Self, ClientError> {
        let topic = config.topics.texts.clone();
        let consumer: BaseConsumer<TextsContext> = client::client_config(config)
            .set("group.id", &config.kafka.group_id)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("enable.partition.eof", "false")
            .create_with_context(TextsContext {
                topic: topic.clone(),
                events: sender.clone(),
                producer,
            })
            .map_err(|e| ClientError::Kafka("creating the texts consumer", e.into()))?;
        consumer
            .subscribe(&[&topic])
            .map_err(|e| ClientError::Kafka("subscribing to the texts topic", e.into()))?;
        let consumer = Arc::new(consumer);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let consumer = consumer.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("texts-poll".into())
                .spawn(move || poll_until_stopped(&consumer, &sender, &stop))
                .map_err(ClientError::PollThread)?
        };
        Ok(Self {
            topic,
            consumer,
            stop,
            thread: Some(thread),
        })
    }

    fn commit_async(&self, offsets: &[Position]) -> Result<(), KafkaError> {
        let list = commit_list(&self.topic, offsets)?;
        self.consumer.commit(&list, CommitMode::Async)
    }

    fn pause(&self, partitions: &[i32], pause: bool) -> Result<(), KafkaError> {
        let mut list = TopicPartitionList::new();
        for &partition in partitions {
            list.add_partition(&self.topic, partition);
        }
        if pause {
            self.consumer.pause(&list)
        } else {
            self.consumer.resume(&list)
        }
    }

    fn positions(&self) -> Vec<Position> {
        let Ok(list) = self.consumer.position() else {
            return Vec::new();
        };
        list.elements_for_topic(&self.topic)
            .iter()
            .filter_map(|e| {
                e.offset()
                    .to_raw()
                    .filter(|&o| o >= 0)
                    .map(|o| Position::new(e.partition(), o))
            })
            .collect()
    }

    /// Stop the poll thread, then commit `offsets` synchronously and leave the group — on a
    /// thread of its own, waited for at most `limit`: with the broker gone a synchronous
    /// commit (and librdkafka's close) can wait a long time, and the process must still end.
    async fn close(mut self, offsets: Option<Vec<Position>>, limit: Duration) {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take();
        let consumer = self.consumer.clone();
        let topic = self.topic.clone();
        // Only the closing thread may hold the consumer when it is dropped (librdkafka's close
        // runs in the drop).
        drop(self);
        let (done, closed) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("texts-close".into())
            .spawn(move || {
                if let Some(thread) = thread {
                    let _ = thread.join();
                }
                if let Some(offsets) = offsets.filter(|o| !o.is_empty()) {
                    match commit_list(&topic, &offsets) {
                        Ok(list) => {
                            if let Err(error) = consumer.commit(&list, CommitMode::Sync) {
                                tracing::warn!(%error, "final offset commit failed");
                            }
                        }
                        Err(error) => tracing::warn!(%error, "final offset commit failed"),
                    }
                }
                consumer.unsubscribe();
                drop(consumer);
                let _ = done.send(());
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "closing the texts consumer");
            return;
        }
        if tokio::time::timeout(limit, closed).await.is_err() {
            tracing::warn!(
                seconds = limit.as_secs(),
                "the texts consumer did not close in time (broker unreachable?); offsets may \
                 stay uncommitted"
            );
        }
    }
}

impl Drop for KafkaTexts {
    /// However the service ends, the poll thread stops (it holds the consumer).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn poll_until_stopped(
    consumer: &BaseConsumer<TextsContext>,
    events: &mpsc::Sender<TextsEvent>,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        let event = match consumer.poll(POLL_WAIT) {
            None => continue,
            Some(Ok(message)) => TextsEvent::Record(client::record_of(&message)),
            Some(Err(error)) => TextsEvent::Error(error.into()),
        };
        if events.blocking_send(event).is_err() {
            return;
        }
    }
}
