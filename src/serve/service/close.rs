//! After the loop: commit what is done, read the log to its end, save, flush.

use std::time::{Duration, Instant};

use super::way_out::deliver_all;
use super::{Service, CLOSE_BUDGET, CLOSE_LIMIT};
use crate::broker::TextsConsumer;
use crate::serve::delivery::OutputKind;
use crate::serve::{ServeError, ServeSummary};
use crate::state::State;

impl Service {
    /// After the loop: commit what is done, read the log to its end, save, flush.
    pub(super) async fn close(
        mut self,
        texts: TextsConsumer,
        drained: bool,
    ) -> Result<ServeSummary, ServeError> {
        // Unfinished LLM calls are dropped (their texts stay uncommitted).
        self.step_tasks.clear();
        self.abandon_jobs();
        self.passes.abort(&self.stats);
        for task in self.deliveries.iter() {
            task.abort();
        }
        // Everything below shares one budget, so that drain + close stay inside the pod's grace
        // period (`drain_timeout_secs` + 15 s): cut short, the state is still saved at a
        // consistent log position and the next start reads on from there.
        let deadline = Instant::now() + CLOSE_BUDGET;
        let left = || deadline.saturating_duration_since(Instant::now());
        // A synchronous commit waits for the group coordinator without a deadline: only with a
        // reachable broker. Otherwise the offsets stay uncommitted (re-read later: duplicates).
        let reachable = self
            .health
            .broker_reachable
            .load(std::sync::atomic::Ordering::Relaxed);
        if reachable {
            self.replica.flush()?;
            texts
                .close(
                    Some(self.intake.tracker.watermarks()),
                    CLOSE_LIMIT.min(left()),
                )
                .await;
            // Apply what this instance (and others) logged, so the saved state is the log's.
            // Two seconds kept back for the dead letters it brings, and the flush.
            let catch_up = self.logs.catch_up(&mut self.replica, &mut self.stats);
            let reading = left().saturating_sub(Duration::from_secs(2));
            match tokio::time::timeout(reading, catch_up).await {
                Ok(Ok(None)) => {}
                // Not while draining (the record is left unapplied); but should one start:
                Ok(Ok(Some(job))) => self.logs.abandon(&job),
                Ok(Err(error @ ServeError::StoppedWhile(_))) => {
                    tracing::info!(%error, "changelog not read to its end at shutdown")
                }
                Ok(Err(error)) => {
                    tracing::warn!(%error, "changelog not read to its end at shutdown")
                }
                Err(_) => tracing::warn!("changelog not read to its end at shutdown: out of time"),
            }
            self.send_final_dead_letters(left()).await;
        } else {
            tracing::warn!("broker unreachable at shutdown: offsets not committed");
            texts.close(None, CLOSE_LIMIT).await;
        }
        self.replica.save()?;
        if let Err(error) = self.producer.flush(left().max(Duration::from_secs(1))) {
            tracing::warn!(%error, "producer flush at shutdown");
        }
        Ok(summary(self.replica.state(), self.stats.summary(), drained))
    }

    /// Stopped during the startup sync (a round being described or encoded ahead): no text was
    /// taken in, so there is nothing to commit; what the sync applied is saved and its dead
    /// letters sent.
    pub(super) async fn close_before_serving(mut self) -> Result<ServeSummary, ServeError> {
        self.send_final_dead_letters(CLOSE_LIMIT).await;
        self.replica.save()?;
        if let Err(error) = self.producer.flush(CLOSE_LIMIT) {
            tracing::warn!(%error, "producer flush at shutdown");
        }
        Ok(summary(self.replica.state(), self.stats.summary(), true))
    }

    /// Dead letters for label events that the final catch-up brought: sent before the cursor
    /// that passes them is saved (bounded: the broker may be going away).
    async fn send_final_dead_letters(&mut self, limit: Duration) {
        let letters: Vec<_> = self
            .replica
            .take_outbox()
            .into_iter()
            .map(|record| (OutputKind::DeadLetter, record))
            .collect();
        if !letters.is_empty()
            && tokio::time::timeout(limit, deliver_all(&self.producer, &letters))
                .await
                .is_err()
        {
            tracing::warn!(
                count = letters.len(),
                "label events' dead letters not delivered at shutdown"
            );
        }
    }
}

/// What this run did (`counted` by the loop, and the `state` it ends with), logged as it stops.
fn summary(state: &State, counted: &ServeSummary, drained: bool) -> ServeSummary {
    let engine = state.engine();
    let summary = ServeSummary {
        graph_nodes: engine.graph().node_count(),
        graph_edges: engine.graph().edge_count(),
        labels: engine.labels().len(),
        digest: state.digest(),
        drained,
        ..counted.clone()
    };
    tracing::info!(summary = %serde_json::to_string(&summary).unwrap_or_default(), "stopped");
    summary
}
