//! A broker in this process, for tests of the service loop without Kafka: topics of
//! partitioned, append-only records; log readers; and one consumer group per group id with
//! Kafka's eager rebalance — when a member joins or leaves, every member's partitions are
//! revoked (each answering with the offsets to commit, as the texts consumer's callback does)
//! and then all are assigned again, in ranges, each from its committed offset (the beginning
//! when none). Records are acknowledged as they are appended.
//!
//! Like Kafka's consumer, a member hands over records, assignments and revocations in one
//! sequence (its feeder task is the only sender), so no record of a partition arrives after
//! the partition was revoked.
//!
//! Like Kafka's `message.max.bytes`, a record larger than the broker's limit (or its topic's,
//! [`MemoryBroker::limit_topic`]) is refused as [`BrokerErrorKind::TooLarge`]; the size is
//! counted as Kafka counts a one-record batch (key, value, headers and their framing).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::texts::{event_queue, Membership, TextsConsumer, REVOKE_ANSWER_WAIT};
use super::BrokerSettings;
use super::{topic_layouts, BrokerError, BrokerErrorKind, Outgoing, Record};
use crate::clock::now_ms;
use crate::position::Position;

mod member;

use member::{feed, GroupMember};

/// Topics and groups shared by every client made from it (clones share them).
#[derive(Clone)]
pub struct MemoryBroker {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Bumped on every append, pause and assignment: what readers and feeders wait on.
    version: watch::Sender<u64>,
    /// One rebalance at a time.
    rebalancing: tokio::sync::Mutex<()>,
}

/// Kafka's broker default `message.max.bytes` (the largest record batch it takes).
pub const KAFKA_DEFAULT_MAX_MESSAGE_BYTES: usize = 1_048_588;

#[derive(Default)]
struct State {
    topics: BTreeMap<String, Vec<Vec<Stored>>>,
    /// The largest record batch taken (Kafka's `message.max.bytes`), and per topic when set
    /// lower (a topic's `max.message.bytes`).
    max_message_bytes: usize,
    topic_max_message_bytes: BTreeMap<String, usize>,
    groups: BTreeMap<String, Group>,
    next_member: u64,
    /// Round-robin partition for records without a key.
    unkeyed: usize,
}

struct Stored {
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    headers: Vec<(String, String)>,
    timestamp_ms: i64,
}

#[derive(Default)]
struct Group {
    topic: String,
    members: BTreeMap<u64, mpsc::UnboundedSender<Command>>,
    committed: BTreeMap<i32, i64>,
    /// Each member's partitions as the last rebalance assigned them.
    assigned: BTreeMap<u64, Vec<i32>>,
}

/// What a rebalance asks of a member's feeder.
enum Command {
    /// Give every partition up: answered with the offsets to commit for them.
    Revoke(oneshot::Sender<Vec<Position>>),
    /// Read these partitions from these offsets.
    Assign(Vec<Position>),
}

impl Default for MemoryBroker {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBroker {
    /// A broker taking records up to Kafka's default size.
    pub fn new() -> Self {
        Self::with_max_message_bytes(KAFKA_DEFAULT_MAX_MESSAGE_BYTES)
    }

    /// A broker taking records up to `max_bytes` (its `message.max.bytes`).
    pub fn with_max_message_bytes(max_bytes: usize) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    max_message_bytes: max_bytes,
                    ..State::default()
                }),
                version: watch::Sender::new(0),
                rebalancing: tokio::sync::Mutex::new(()),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn poke(&self) {
        self.shared.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Create `topic` with `partitions` partitions unless it exists.
    pub fn create_topic(&self, topic: &str, partitions: usize) {
        self.state()
            .topics
            .entry(topic.to_string())
            .or_insert_with(|| (0..partitions.max(1)).map(|_| Vec::new()).collect());
        self.poke();
    }

    /// The service's topics, with the partitions Kafka's are made with.
    pub fn ensure_topics(&self, config: &BrokerSettings) {
        for topic in topic_layouts(config) {
            self.create_topic(topic.name, usize::try_from(topic.partitions).unwrap_or(1));
        }
    }

    /// Take records of `topic` only up to `max_bytes` (its `max.message.bytes`).
    pub fn limit_topic(&self, topic: &str, max_bytes: usize) {
        self.state()
            .topic_max_message_bytes
            .insert(topic.to_string(), max_bytes);
    }

    /// Append a record (keyed records by the key's hash, others in turn): its position. A
    /// record over the limit is refused as [`BrokerErrorKind::TooLarge`].
    pub fn append(&self, outgoing: &Outgoing) -> Result<Position, BrokerError> {
        let position = {
            let mut state = self.state();
            let State {
                topics,
                unkeyed,
                max_message_bytes,
                topic_max_message_bytes,
                ..
            } = &mut *state;
            let limit = topic_max_message_bytes
                .get(&outgoing.topic)
                .map_or(*max_message_bytes, |topic| (*topic).min(*max_message_bytes));
            let size = outgoing.batch_bytes();
            if size > limit {
                return Err(BrokerError::new(
                    BrokerErrorKind::TooLarge,
                    format!(
                        "Broker: Message size too large: a record of {size} bytes for {} (the \
                         limit is {limit})",
                        outgoing.topic
                    ),
                ));
            }
            let Some(partitions) = topics.get_mut(&outgoing.topic) else {
                return Err(BrokerError::new(
                    BrokerErrorKind::UnknownTopic,
                    format!("topic {} does not exist", outgoing.topic),
                ));
            };
            let partition = match &outgoing.key {
                Some(key) => {
                    let mut hasher = std::hash::DefaultHasher::new();
                    key.hash(&mut hasher);
                    (hasher.finish() % partitions.len() as u64) as usize
                }
                None => {
                    *unkeyed = unkeyed.wrapping_add(1);
                    *unkeyed % partitions.len()
                }
            };
            let log = &mut partitions[partition];
            log.push(Stored {
                key: outgoing.key.clone(),
                payload: outgoing.payload.clone(),
                headers: outgoing.headers.clone(),
                timestamp_ms: now_ms(),
            });
            Position::new(partition as i32, log.len() as i64 - 1)
        };
        self.poke();
        Ok(position)
    }

    /// The record at `position` of `topic`, if there is one.
    pub fn record(&self, topic: &str, position: Position) -> Option<Record> {
        let state = self.state();
        let stored = state
            .topics
            .get(topic)?
            .get(usize::try_from(position.partition).ok()?)?
            .get(usize::try_from(position.offset).ok()?)?;
        Some(Record {
            topic: topic.to_string(),
            position,
            key: stored.key.clone(),
            payload: stored.payload.clone(),
            timestamp_ms: Some(stored.timestamp_ms),
            headers: stored.headers.clone(),
        })
    }

    /// Every record of `topic`, partition by partition (None when it does not exist).
    pub fn records(&self, topic: &str) -> Option<Vec<Record>> {
        let ends: Vec<i64> = self
            .state()
            .topics
            .get(topic)?
            .iter()
            .map(|log| log.len() as i64)
            .collect();
        let positions = ends.iter().enumerate().flat_map(|(partition, &end)| {
            (0..end).map(move |offset| Position::new(partition as i32, offset))
        });
        Some(
            positions
                .filter_map(|position| self.record(topic, position))
                .collect(),
        )
    }

    /// Every value of `topic` (None when it does not exist).
    pub fn read_to_end(&self, topic: &str) -> Option<Vec<Vec<u8>>> {
        self.records(topic)
            .map(|records| records.into_iter().map(|r| r.payload).collect())
    }

    /// (low, high) watermarks of a partition.
    pub fn watermarks(&self, topic: &str, partition: i32) -> Result<(i64, i64), BrokerError> {
        let state = self.state();
        state
            .topics
            .get(topic)
            .and_then(|partitions| partitions.get(usize::try_from(partition).ok()?))
            .map(|log| (0, log.len() as i64))
            .ok_or_else(|| {
                BrokerError::new(
                    BrokerErrorKind::UnknownTopic,
                    format!("{topic} partition {partition} does not exist"),
                )
            })
    }

    /// Partition counts of `topic`, or of every topic.
    pub fn partition_counts(&self, topic: Option<&str>) -> Vec<(String, usize)> {
        self.state()
            .topics
            .iter()
            .filter(|(name, _)| topic.is_none_or(|t| t == name.as_str()))
            .map(|(name, partitions)| (name.clone(), partitions.len()))
            .collect()
    }

    /// The offsets `group` committed, by partition.
    pub fn committed(&self, group: &str) -> BTreeMap<i32, i64> {
        self.state()
            .groups
            .get(group)
            .map(|g| g.committed.clone())
            .unwrap_or_default()
    }

    /// The partitions of each member of `group` (in the order they joined), as the last
    /// rebalance assigned them.
    pub fn assignment(&self, group: &str) -> Vec<Vec<i32>> {
        self.state()
            .groups
            .get(group)
            .map(|g| g.assigned.values().cloned().collect())
            .unwrap_or_default()
    }

    /// A reader of partition 0 of `topic`, from `next`.
    pub fn log_reader(&self, topic: &str, next: i64) -> MemoryReader {
        MemoryReader {
            broker: self.clone(),
            topic: topic.to_string(),
            next: Mutex::new(next.max(0)),
        }
    }

    /// A new member of `group`, reading `topic`: its partitions come with the rebalance its
    /// joining starts.
    pub fn join(&self, group: &str, topic: &str) -> TextsConsumer {
        let (sender, events) = event_queue();
        let (commands, received) = mpsc::unbounded_channel();
        let member = {
            let mut state = self.state();
            state.next_member += 1;
            let id = state.next_member;
            let group = state.groups.entry(group.to_string()).or_default();
            group.topic = topic.to_string();
            group.members.insert(id, commands);
            id
        };
        let handle = GroupMember::new(self.clone(), group, topic, member);
        let feeder = handle.clone();
        tokio::spawn(async move {
            feed(feeder.clone(), received, sender).await;
            // Its consumer is gone (closed, or dropped without leaving): so is the member.
            feeder.leave(None);
        });
        self.rebalance_later(group);
        TextsConsumer::memory(events, Box::new(handle))
    }

    fn rebalance_later(&self, group: &str) {
        let (broker, group) = (self.clone(), group.to_string());
        tokio::spawn(async move { broker.rebalance(&group).await });
    }

    /// Revoke every member's partitions (committing what each answers), then assign the
    /// topic's partitions in ranges over the members, each from its committed offset.
    async fn rebalance(&self, group: &str) {
        let _one_at_a_time = self.shared.rebalancing.lock().await;
        let members: Vec<mpsc::UnboundedSender<Command>> = self
            .state()
            .groups
            .get(group)
            .map(|g| g.members.values().cloned().collect())
            .unwrap_or_default();
        for member in members {
            let (answer, answered) = oneshot::channel();
            if member.send(Command::Revoke(answer)).is_ok() {
                // Bounded like the member's own wait: a feeder stuck handing a record to a
                // loop that no longer reads must not hold every later rebalance.
                let limit = REVOKE_ANSWER_WAIT + Duration::from_secs(1);
                if let Ok(Ok(done)) = tokio::time::timeout(limit, answered).await {
                    self.commit(group, &done);
                }
            }
        }
        let (members, partitions, committed) = {
            let mut state = self.state();
            let State { groups, topics, .. } = &mut *state;
            let Some(g) = groups.get_mut(group) else {
                return;
            };
            // A member whose consumer was dropped without leaving (its feeder ended) is gone.
            g.members.retain(|_, member| !member.is_closed());
            let partitions = topics.get(&g.topic).map_or(0, Vec::len);
            let members: Vec<_> = g.members.iter().map(|(id, m)| (*id, m.clone())).collect();
            (members, partitions, g.committed.clone())
        };
        let per_member = partitions.div_ceil(members.len().max(1));
        let mut assigned = BTreeMap::new();
        for (index, (id, member)) in members.iter().enumerate() {
            let range =
                (index * per_member).min(partitions)..((index + 1) * per_member).min(partitions);
            let positions: Vec<Position> = range
                .map(|p| {
                    let partition = p as i32;
                    Position::new(partition, committed.get(&partition).copied().unwrap_or(0))
                })
                .collect();
            assigned.insert(*id, positions.iter().map(|p| p.partition).collect());
            let _ = member.send(Command::Assign(positions));
        }
        if let Some(g) = self.state().groups.get_mut(group) {
            g.assigned = assigned;
        }
        self.poke();
    }

    /// Commit `offsets` for `group` (what a member does on revocation, and at close).
    pub fn commit(&self, group: &str, offsets: &[Position]) {
        let mut state = self.state();
        let committed = &mut state.groups.entry(group.to_string()).or_default().committed;
        for position in offsets {
            committed.insert(position.partition, position.offset);
        }
    }
}

/// A reader of partition 0 of a topic.
pub struct MemoryReader {
    broker: MemoryBroker,
    topic: String,
    next: Mutex<i64>,
}

impl MemoryReader {
    /// The next record, waiting for it to be appended.
    pub async fn recv(&self) -> Record {
        let mut version = self.broker.shared.version.subscribe();
        loop {
            let next = *self.next.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(record) = self.broker.record(&self.topic, Position::new(0, next)) {
                *self.next.lock().unwrap_or_else(|p| p.into_inner()) = next + 1;
                return record;
            }
            if version.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    pub fn seek(&self, offset: i64) {
        *self.next.lock().unwrap_or_else(|p| p.into_inner()) = offset.max(0);
    }
}
