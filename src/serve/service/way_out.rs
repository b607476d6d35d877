//! A text's way out: finished in offset order, its learn step gathered into a record, its
//! outputs delivered and acknowledged.

use std::time::Instant;

use tracing::Instrument;

use super::{Delivered, Service};
use crate::broker::{self, BrokerError, BrokerErrorKind, Outgoing, Producer};
use crate::position::Position;
use crate::serve::delivery::{self, OutputKind};
use crate::serve::outputs;
use crate::serve::pipeline::finish::{finish, Finishing, Learning};

impl Service {
    /// Finish the partition's texts whose turn it is (the head of its queue, while ready) and
    /// start delivering their outputs.
    pub(super) fn finish_ready(&mut self, partition: i32) {
        while let Some((_, text)) = self.slots.pop_ready(partition) {
            self.stall.progressed();
            let offset = text.source.position.offset;
            let learning = if self
                .replica
                .cursor()
                .is_learned(Position::new(partition, offset))
            {
                Learning::AlreadyLearned
            } else if !self.intake.tracker.is_assigned(partition) {
                Learning::Revoked
            } else {
                Learning::Allowed
            };
            let finishing = Finishing {
                topics: &self.config.topics,
                on_llm_failure: self.config.llm.on_failure,
                online_indexing: self.config.engine.online_indexing,
                discovery: Some(&self.config.discovery).filter(|d| d.enabled),
                holding: self
                    .passes
                    .holding(self.replica.state().engine().labels().version())
                    .filter(|_| self.config.discovery.hold_open),
                model: self
                    .classifier
                    .llm()
                    .map(|_| self.config.llm.model.as_str()),
                record_limit: self.record_limit,
            };
            let span = text.span.clone();
            let finished = finish(&finishing, self.replica.state().engine(), text, learning);
            finished.tally.count(&mut self.stats);
            let learned = finished.learn.map(|text| self.group.gather(text));
            let producer = self.producer.clone();
            let (records, source) = (finished.records, finished.source);
            let produce_span = tracing::info_span!(parent: &span, "produce");
            self.deliveries.push(tokio::spawn(
                async move {
                    // The text's span ends when its outputs are acknowledged.
                    let _text = span;
                    let started = Instant::now();
                    let mut refused = Vec::new();
                    // Its learn record first (the batch's own task delivers it).
                    if let Some(learned) = learned {
                        if !learned.await.unwrap_or(false) {
                            refused.push(OutputKind::Learn);
                        }
                    }
                    refused.extend(deliver_all(&producer, &records).await);
                    Delivered {
                        text: Some(Position::new(partition, offset)),
                        learn_record: false,
                        produce_seconds: started.elapsed().as_secs_f64(),
                        refused,
                        source,
                    }
                }
                .instrument(produce_span),
            ));
        }
    }

    /// Send the learn steps of the texts finished since the last turn, as few records as fit
    /// under the size limit. Each record holds one intake place until it is read back from the
    /// changelog (or refused).
    pub(super) fn send_learns(&mut self) {
        // Each record's retry waits for the one before it (see `Ordered::confirm_after`): the
        // replicas skip a learn that arrives after a later one of its partition as a copy.
        let mut previous = None;
        for record in self.group.take(self.replica.instance()) {
            let (settled, next) = tokio::sync::oneshot::channel::<()>();
            let after = previous.replace(next);
            self.replica.learn_record_sent();
            let ordered = self.ordered.send(Outgoing {
                topic: self.config.topics.changelog.clone(),
                key: None,
                payload: record.payload,
                headers: Vec::new(),
            });
            let (producer, waiting) = (self.producer.clone(), record.waiting);
            self.deliveries.push(tokio::spawn(async move {
                let started = Instant::now();
                let delivered = match ordered.confirm_after(after, &producer).await {
                    Ok(()) => true,
                    Err(error) => {
                        let texts = waiting.len();
                        tracing::error!(%error, texts, "learn record refused by the broker");
                        false
                    }
                };
                drop(settled);
                for text in waiting {
                    // The text's own task may be gone (aborted at shutdown).
                    let _ = text.send(delivered);
                }
                Delivered {
                    text: None,
                    learn_record: true,
                    produce_seconds: started.elapsed().as_secs_f64(),
                    refused: if delivered {
                        Vec::new()
                    } else {
                        vec![OutputKind::Learn]
                    },
                    source: None,
                }
            }));
        }
    }

    /// Deliver what the replica asks for (dead letters of label events the log refused).
    /// In the labels topic's order, like the changelog records they come from.
    pub(super) fn send_outbox(&mut self) {
        for record in self.replica.take_outbox() {
            let producer = self.producer.clone();
            let ordered = self.ordered.send(record.clone());
            self.deliveries.push(tokio::spawn(async move {
                let refused = match ordered.confirm(&producer).await {
                    Ok(()) => Vec::new(),
                    // Its topic takes less than the producer sends: its headers alone.
                    Err(error) if error.kind() == BrokerErrorKind::TooLarge => {
                        deliver_smaller(&producer, &record, &error).await
                    }
                    Err(error) => {
                        tracing::error!(%error, "label event's dead letter refused by the broker");
                        vec![OutputKind::DeadLetter]
                    }
                };
                Delivered {
                    text: None,
                    learn_record: false,
                    produce_seconds: 0.0,
                    refused,
                    source: None,
                }
            }));
        }
    }

    pub(super) fn on_delivered(&mut self, delivered: Delivered) {
        let settled = delivery::settle(&delivered.refused);
        if delivered.learn_record {
            self.group.acknowledged();
            self.stats.stage("learn_produce", delivered.produce_seconds);
        }
        let Some(Position { partition, offset }) = delivered.text else {
            // A learn record (or a label event's dead letter): a refused learn record will
            // never be read back, so its intake place is free again.
            if settled.learn_refused {
                self.replica.learn_record_refused();
            }
            return;
        };
        if settled.learn_refused {
            self.stats.learn_refused();
        }
        if let (Some(rejection), Some(source)) = (settled.dead_letter, delivered.source) {
            // An output was refused: the text goes to the dead letters instead, and is done
            // once that is delivered.
            self.stats.dead_letter(rejection.reason);
            let record = outputs::dead_letter(
                &self.config.topics.dead_letter,
                &source.position,
                source.key,
                source.payload,
                "produce",
                &rejection,
                self.record_limit,
            );
            let producer = self.producer.clone();
            self.deliveries.push(tokio::spawn(async move {
                Delivered {
                    text: Some(Position::new(partition, offset)),
                    learn_record: false,
                    produce_seconds: 0.0,
                    refused: deliver_all(&producer, &[(OutputKind::DeadLetter, record)]).await,
                    source: None,
                }
            }));
            return;
        }
        self.stats.stage("produce", delivered.produce_seconds);
        self.intake.tracker.done(partition, offset);
    }
}

/// Send each record until the broker acknowledges it; return the kinds it refused. A dead
/// letter refused as too large (its topic takes less than the producer sends) is sent again
/// without its value: refused outputs end as a dead letter, never as a retry for ever.
pub(super) async fn deliver_all(
    producer: &Producer,
    records: &[(OutputKind, Outgoing)],
) -> Vec<OutputKind> {
    let mut refused = Vec::new();
    for (kind, record) in records {
        match broker::deliver(producer, record).await {
            Ok(()) => {}
            Err(error) if *kind == OutputKind::DeadLetter => {
                refused.extend(deliver_smaller(producer, record, &error).await);
            }
            Err(error) => {
                tracing::error!(%error, topic = %record.topic, "output refused by the broker");
                refused.push(*kind);
            }
        }
    }
    refused
}

/// Send `letter`, a dead letter the broker refused with `error`, without its value (only a
/// record its size refuses is sent again); the kind refused if even that is.
async fn deliver_smaller(
    producer: &Producer,
    letter: &Outgoing,
    error: &BrokerError,
) -> Vec<OutputKind> {
    tracing::warn!(
        %error,
        topic = %letter.topic,
        size = letter.size(),
        "dead letter refused by the broker; sending it without the rejected value"
    );
    let smaller = outputs::without_value(letter);
    match broker::deliver(producer, &smaller).await {
        Ok(()) => Vec::new(),
        Err(error) => {
            tracing::error!(%error, topic = %letter.topic, "dead letter refused by the broker");
            vec![OutputKind::DeadLetter]
        }
    }
}
