//! One member of a consumer group of the in-process broker: the partitions it reads and the
//! ones paused, and its feeder — the only sender of its events (records, assignments,
//! revocations), carrying out what a rebalance asks of it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{mpsc as std_mpsc, Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use super::{Command, MemoryBroker};
use crate::broker::texts::{Membership, TextsEvent, REVOKE_ANSWER_WAIT};
use crate::broker::Record;
use crate::position::Position;

/// A member's partitions: where it reads each, and which are paused.
#[derive(Default)]
struct Reading {
    assigned: BTreeMap<i32, i64>,
    paused: BTreeSet<i32>,
}

/// One member of a group, as its texts consumer controls it.
#[derive(Clone)]
pub(super) struct GroupMember {
    broker: MemoryBroker,
    group: String,
    topic: String,
    member: u64,
    reading: Arc<Mutex<Reading>>,
}

impl GroupMember {
    /// Member `member` of `group`, reading `topic` (its partitions come with a rebalance).
    pub(super) fn new(broker: MemoryBroker, group: &str, topic: &str, member: u64) -> Self {
        Self {
            broker,
            group: group.to_string(),
            topic: topic.to_string(),
            member,
            reading: Arc::new(Mutex::new(Reading::default())),
        }
    }

    fn reading(&self) -> MutexGuard<'_, Reading> {
        self.reading.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Membership for GroupMember {
    fn commit(&self, offsets: &[Position]) {
        self.broker.commit(&self.group, offsets);
    }

    fn pause(&self, partitions: &[i32], pause: bool) {
        {
            let mut reading = self.reading();
            for &partition in partitions {
                if pause {
                    reading.paused.insert(partition);
                } else {
                    reading.paused.remove(&partition);
                }
            }
        }
        self.broker.poke();
    }

    fn positions(&self) -> Vec<Position> {
        self.reading()
            .assigned
            .iter()
            .map(|(&partition, &offset)| Position::new(partition, offset))
            .collect()
    }

    /// Commit `offsets` and leave the group (the others rebalance).
    fn leave(&self, offsets: Option<Vec<Position>>) {
        if let Some(offsets) = offsets {
            self.commit(&offsets);
        }
        self.reading().assigned.clear();
        let left = self
            .broker
            .state()
            .groups
            .get_mut(&self.group)
            .and_then(|g| {
                g.assigned.remove(&self.member);
                g.members.remove(&self.member)
            })
            .is_some();
        if left {
            self.broker.rebalance_later(&self.group);
        }
    }
}

impl GroupMember {
    /// The next record to hand over: from the first assigned, unpaused partition that has one.
    fn next_record(&self) -> Option<Record> {
        let candidates: Vec<Position> = {
            let reading = self.reading();
            reading
                .assigned
                .iter()
                .filter(|(p, _)| !reading.paused.contains(p))
                .map(|(&partition, &offset)| Position::new(partition, offset))
                .collect()
        };
        candidates
            .into_iter()
            .find_map(|position| self.broker.record(&self.topic, position))
    }
}

/// A member's feeder: the only sender of its events (records, assignments, revocations).
pub(super) async fn feed(
    member: GroupMember,
    mut commands: mpsc::UnboundedReceiver<Command>,
    events: mpsc::Sender<TextsEvent>,
) {
    let mut version = member.broker.shared.version.subscribe();
    loop {
        while let Ok(command) = commands.try_recv() {
            if !obey(&member, command, &events).await {
                return;
            }
        }
        if let Some(record) = member.next_record() {
            let position = record.position;
            if events.send(TextsEvent::Record(record)).await.is_err() {
                return;
            }
            if let Some(next) = member.reading().assigned.get_mut(&position.partition) {
                *next = position.offset + 1;
            }
            continue;
        }
        tokio::select! {
            command = commands.recv() => match command {
                Some(command) => {
                    if !obey(&member, command, &events).await {
                        return;
                    }
                }
                None => return,
            },
            changed = version.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = events.closed() => return,
        }
    }
}

/// Carry out a rebalance's command; false when the loop is gone.
async fn obey(member: &GroupMember, command: Command, events: &mpsc::Sender<TextsEvent>) -> bool {
    match command {
        Command::Revoke(reply) => {
            let partitions: Vec<i32> = std::mem::take(&mut member.reading().assigned)
                .into_keys()
                .collect();
            if partitions.is_empty() {
                let _ = reply.send(Vec::new());
                return true;
            }
            let (answer, answered) = std_mpsc::sync_channel(1);
            let event = TextsEvent::Revoked { partitions, answer };
            if events.send(event).await.is_err() {
                let _ = reply.send(Vec::new());
                return false;
            }
            let done =
                tokio::task::spawn_blocking(move || answered.recv_timeout(REVOKE_ANSWER_WAIT))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or_default();
            let _ = reply.send(done);
            true
        }
        Command::Assign(positions) => {
            let partitions: Vec<i32> = positions.iter().map(|p| p.partition).collect();
            member.reading().assigned = positions
                .into_iter()
                .map(|p| (p.partition, p.offset))
                .collect();
            events.send(TextsEvent::Assigned(partitions)).await.is_ok()
        }
    }
}
