//! A text's way in: taken from the backlog, decoded, begun, answered by the LLM; and out of
//! the loop's hands when its partition is revoked.

use std::time::Instant;

use super::Service;
use crate::broker::Record;
use crate::events::decode;
use crate::events::InputPosition;
use crate::position::Position;
use crate::serve::internal_events::{InFlight, LlmRequestTimed};
use crate::serve::pipeline::{self, Advanced, ReadText, StepDone, Text};
use crate::serve::stop::Phase;
use crate::serve::ServeError;
use crate::telemetry::admin::Health;

impl Service {
    /// Take texts in from the backlog while the intake has room: in flight are the texts in
    /// slots, plus one place per learn record not yet read back and one for the steps gathering
    /// for the next record (the graph takes a record in at once). So with 1 in flight each text
    /// is classified against a graph that includes the previous one; with N, a text's graph
    /// misses at most the texts of N records, and a record gathers at most N texts.
    pub(super) async fn take_in(&mut self) -> Result<(), ServeError> {
        let capacity = self.config.input.max_in_flight;
        // Under a backlog, wait for a quarter of the intake to be free and take those texts in
        // together: they are begun side by side (taken one by one as places free, they would
        // be begun one at a time).
        let batch_min = (capacity / 4).max(1);
        loop {
            // The phase may change while a batch waits for the labels ahead of it.
            if self.stop.phase() != Phase::Running {
                return Ok(());
            }
            let gathering = usize::from(self.group.gathered() > 0);
            let in_flight = self.slots.len() + self.replica.pending_learns() + gathering;
            let room = capacity
                .saturating_sub(in_flight)
                .min(capacity.saturating_sub(self.group.gathered()));
            if room == 0 || (room < batch_min && self.intake.backlog() > room && in_flight > 0) {
                return Ok(());
            }
            if self.intake.backlog() == 0 {
                return Ok(());
            }
            // Label events published before a text must be applied first. Still waiting for
            // them (a round being prepared), or stopping: the texts stay in the backlog.
            let newest = self.intake.newest_of_next(room);
            if self.logs.older_than(newest) {
                let context = "labels topic unreachable; classifying with the labels known";
                let synced = self.sync_logs(context).await?;
                if !synced || self.stop.phase() != Phase::Running {
                    return Ok(());
                }
            }
            let batch: Vec<Record> = std::iter::from_fn(|| self.intake.next())
                .take(room)
                .collect();
            self.on_texts(batch);
        }
    }

    /// Texts taken in together, once synced with the labels (see [`Service::take_in`]):
    /// decoded, then begun side by side (see [`pipeline::begin_all`]).
    pub(super) fn on_texts(&mut self, batch: Vec<Record>) {
        let mut sources = Vec::with_capacity(batch.len());
        let mut arriving = Vec::with_capacity(batch.len());
        for message in &batch {
            let (source, text) = self.arrive(message);
            sources.push(source);
            arriving.push(text);
        }
        let started: Vec<(tracing::Span, Instant)> = arriving
            .iter()
            .map(|text| (text.span.clone(), text.received))
            .collect();
        let works = pipeline::begin_all(
            &self.classifier,
            self.replica.state().engine(),
            &self.stats,
            arriving,
        );
        let mut partitions = Vec::new();
        for ((source, (span, received)), work) in sources.into_iter().zip(started).zip(works) {
            let (partition, offset) = (source.position.partition, source.position.offset);
            let text = Text {
                span,
                source,
                received,
                work,
            };
            let task = pipeline::step_task(&self.classifier, self.replica.state().engine(), &text);
            let ready = text.work.is_final();
            let id = self.slots.push(partition, offset, text, ready);
            if let Some(task) = task {
                self.step_tasks.push(task(id));
            }
            if !partitions.contains(&partition) {
                partitions.push(partition);
            }
        }
        for partition in partitions {
            self.finish_ready(partition);
        }
    }

    /// A text as read: its source record, its span, and its event decoded.
    pub(super) fn arrive(&mut self, message: &Record) -> (ReadText, pipeline::Arriving) {
        let received = Instant::now();
        self.stats.text_received();
        let source = ReadText {
            position: InputPosition {
                topic: message.topic.clone(),
                partition: message.partition(),
                offset: message.offset(),
            },
            key: message.key.clone(),
            payload: message.payload.clone(),
        };
        let span = tracing::info_span!(
            "text",
            text_id = tracing::field::Empty,
            partition = source.position.partition,
            offset = source.position.offset,
            label = tracing::field::Empty,
            source = tracing::field::Empty,
        );
        let decoded = tracing::info_span!(parent: &span, "decode")
            .in_scope(|| decode::text_event(&source.payload, &self.config.bounds()));
        if let Ok(event) = &decoded {
            span.record("text_id", event.id.as_str());
        }
        let decode_seconds = received.elapsed().as_secs_f64();
        self.stats.stage("decode", decode_seconds);
        let arriving = pipeline::Arriving {
            span,
            decoded,
            decode_ms: decode_seconds * 1000.0,
            received,
        };
        (source, arriving)
    }

    pub(super) fn on_llm_done(&mut self, done: StepDone) {
        if let Some((elapsed, succeeded)) = done.outcome.llm_elapsed() {
            self.stats.emit(LlmRequestTimed {
                seconds: elapsed.as_secs_f64(),
            });
            Health::set(&self.health.llm_reachable, succeeded);
        }
        // None: the text was finished or revoked meanwhile; its answer is not needed.
        let Some(text) = self.slots.get_mut(done.slot) else {
            return;
        };
        let engine = self.replica.state().engine();
        match pipeline::advance(&self.classifier, engine, &self.stats, text, done.outcome) {
            Advanced::Stale => {}
            Advanced::Waiting => {
                if let Some(task) = pipeline::step_task(&self.classifier, engine, text) {
                    self.step_tasks.push(task(done.slot));
                }
            }
            Advanced::Ready => {
                self.slots.set_ready(done.slot);
                self.finish_ready(done.slot.partition);
            }
        }
    }

    /// Partitions are going: drop their texts in flight and held back (the new owner reads
    /// them again), and return their done offsets for the callback to commit, once the state
    /// that includes them is on disk.
    pub(super) fn on_revoked(&mut self, partitions: &[i32]) -> Vec<Position> {
        let in_flight: usize = partitions
            .iter()
            .map(|&partition| self.slots.revoke(partition).len())
            .sum();
        let (held, done) = self.intake.revoke(partitions);
        self.stats.emit(InFlight {
            texts: self.slots.len(),
        });
        tracing::info!(
            ?partitions,
            dropped = in_flight + held,
            "revoking: texts in flight dropped"
        );
        match self.replica.flush() {
            Ok(()) => done,
            Err(error) => {
                tracing::warn!(%error, "state flush on revoke failed; nothing committed");
                Vec::new()
            }
        }
    }
}
