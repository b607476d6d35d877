//! Forwarding the labels topic to the changelog: each label event, decoded and checked, goes
//! to the changelog as the update every replica applies (or as a rejection, dead-lettered
//! through it); a round whose labels the LLM is to describe waits for a [`Job`] first.

use super::{LogSync, UnderWay};
use crate::broker::{self, BrokerError, Outgoing, Record};
use crate::engine::NewLabel;
use crate::events::decode::{self, Reason, Rejection};
use crate::serve::replica::job::Job;
use crate::serve::replica::Replica;
use crate::serve::stop::Phase;
use crate::serve::ServeError;
use crate::state::codec::{Change, ChangeRecord, LabelOutcome, RejectStage, CHANGELOG_VERSION};
use crate::state::from_event::LabelChecks;
use crate::state::Update;

/// How much of a label event too large for the changelog its dead letter keeps.
const TOO_LARGE_EXCERPT: usize = 64 * 1024;

impl LogSync {
    /// Forward labels-topic records not yet in the changelog, up to a round whose labels the
    /// LLM is to describe first (the job that describes them is returned; [`LogSync::finish`]
    /// forwards the round).
    pub(super) async fn forward_labels(
        &mut self,
        replica: &Replica,
    ) -> Result<Forwarded, ServeError> {
        let topic = replica.topics().labels.clone();
        self.labels.check(&topic, self.stop.phase())?;
        let (low, high) = self.log_bounds(&topic).await?;
        let under_way = self.under_way.get_or_insert_with(UnderWay::now);
        let end = *under_way.labels_end.get_or_insert(high);
        let mut forwarded = Forwarded::Nothing;
        // The events forwarded before one count towards its bounds, applied or not yet.
        let mut checks = LabelChecks::new(replica.state.engine(), self.bounds);
        self.labels_forward_next = self
            .labels_forward_next
            .max(replica.cursor.labels_next)
            .max(low);
        while self.labels_forward_next < end {
            let next = self.labels_forward_next;
            let message = self
                .labels
                .next(&topic, next, "reading the labels topic")
                .await?;
            self.labels_forward_next = message.offset() + 1;
            if message.offset() < replica.cursor.labels_next {
                continue; // someone forwarded it already
            }
            let outcome = match decode::label_event(&message.payload) {
                Err(rejection) => reject(RejectStage::Decode, rejection),
                Ok(event) => match checks.update(event) {
                    Ok(Update::Round { round, labels }) if self.to_describe(&labels) => {
                        return self.describe_first(message, round, labels);
                    }
                    Ok(update) => LabelOutcome::Apply(update),
                    Err(rejection) => reject(RejectStage::Apply, rejection),
                },
            };
            if self
                .forward_outcome(replica, &message, outcome)
                .await
                .is_none()
            {
                // The drain deadline passed: the next start forwards it again.
                return Err(ServeError::StoppedWhile("forwarding label events"));
            }
            forwarded = Forwarded::Records;
        }
        Ok(forwarded)
    }

    /// Whether a round's labels are described before it is forwarded.
    fn to_describe(&self, labels: &[NewLabel]) -> bool {
        self.describe_labels && Job::needs_describing(&self.classifier, labels)
    }

    /// The job that describes the round in `message`, to forward it once described: the
    /// service asks a call fewer than the LLM allows, leaving one to the texts begun; startup
    /// asks them all. Not once the drain has begun: the next start describes and forwards it.
    fn describe_first(
        &mut self,
        message: Record,
        round: String,
        labels: Vec<NewLabel>,
    ) -> Result<Forwarded, ServeError> {
        if self.stop.phase() != Phase::Running {
            self.labels_back(&message);
            return Err(ServeError::StoppedWhile("describing a round's labels"));
        }
        let at_once = if self.serving {
            self.classifier.describing_beside_texts()
        } else {
            usize::MAX
        };
        let job = Job::describe(&self.classifier, labels, at_once, message, round);
        Ok(Forwarded::Waiting(job))
    }

    /// Send the changelog record forwarding the labels-topic record `message` with `outcome`;
    /// one too large for the changelog is dead-lettered through it instead. None when the
    /// drain deadline passed first.
    pub(super) async fn forward_outcome(
        &self,
        replica: &Replica,
        message: &Record,
        outcome: LabelOutcome,
    ) -> Option<()> {
        let payload = message.payload.as_slice();
        let (offset, key) = (message.offset(), message.key.clone());
        // A rejected event keeps its own reason should its record be cut.
        let rejected = match &outcome {
            LabelOutcome::Reject { .. } => Some(outcome.clone()),
            LabelOutcome::Apply(_) => None,
        };
        let record = label_record(replica, offset, key.clone(), payload.to_vec(), outcome);
        let mut delivered = self.forward(record).await;
        // Larger than the changelog takes (it carries the event and its decoded update):
        // dead-lettered once, through the log like any rejected event, with its first 64 KiB —
        // or none of it and at most 256 bytes of its key, should the changelog take even less.
        for excerpt in [TOO_LARGE_EXCERPT, 0] {
            let Some(Err(error)) = &delivered else { break };
            let size = payload.len();
            tracing::error!(%error, offset, size, excerpt, "label event too large for the changelog");
            let outcome = rejected.clone().unwrap_or_else(|| {
                reject(
                    RejectStage::Apply,
                    Rejection::new(
                        Reason::OutputTooLarge,
                        format!(
                            "the label event ({size} bytes) is larger than the changelog accepts"
                        ),
                    ),
                )
            });
            let kept = payload[..size.min(excerpt)].to_vec();
            let key = match &key {
                Some(key) if excerpt == 0 => Some(key[..key.len().min(256)].to_vec()),
                key => key.clone(),
            };
            let record = label_record(replica, offset, key, kept, outcome);
            delivered = self.forward(record).await;
        }
        if let Err(error) = delivered? {
            tracing::error!(%error, offset, "label event not forwarded");
        }
        Some(())
    }

    /// Send a changelog record, unless the drain deadline passes first.
    async fn forward(&self, record: Outgoing) -> Option<Result<(), BrokerError>> {
        self.stop
            .unless_expired(broker::deliver(&self.producer, &record))
            .await
    }
}

/// What forwarding the labels topic did.
pub(super) enum Forwarded {
    Nothing,
    /// Some records, whose changelog copies are still to apply.
    Records,
    /// Up to a round that waits for this job.
    Waiting(Box<Job>),
}

/// The changelog record forwarding the labels topic's record at `offset`.
fn label_record(
    replica: &Replica,
    offset: i64,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    outcome: LabelOutcome,
) -> Outgoing {
    let record = ChangeRecord {
        version: CHANGELOG_VERSION,
        origin: replica.instance.clone(),
        change: Change::Label {
            offset,
            key: key.clone(),
            payload,
            outcome,
        },
    };
    Outgoing {
        topic: replica.topics().changelog.clone(),
        key,
        payload: record.encode(),
        headers: Vec::new(),
    }
}

fn reject(stage: RejectStage, rejection: Rejection) -> LabelOutcome {
    LabelOutcome::Reject {
        stage,
        reason: rejection.reason,
        message: rejection.message,
    }
}
