//! The loop's side of emerging-class discovery: start a community pass when one of this
//! instance's records made it due (one at a time; a pass due meanwhile waits for the running
//! one), and collect its report on the tick. The pass itself runs as a task
//! (`serve::discovery_pass`), never on the loop.

use futures::FutureExt;

use super::Service;
use crate::serve::discovery_pass::{self, PassReport};
use crate::telemetry::metrics::{OutcomeLabel, ReasonLabel, StateLabel};

impl Service {
    /// After a changelog record: start a pass if it made one due and none is running.
    pub(super) fn start_pass_if_due(&mut self) {
        if self.replica.take_pass_due() {
            self.pass_waiting = true;
        }
        let Some(settings) = self.pass_settings.as_ref() else {
            return;
        };
        if !self.pass_waiting || self.pass.is_some() {
            return;
        }
        self.pass_waiting = false;
        let texts: Vec<_> = self
            .replica
            .state()
            .pool()
            .texts()
            .iter()
            .cloned()
            .collect();
        tracing::debug!(pooled = texts.len(), "community pass started");
        let material = self
            .replica
            .state()
            .engine()
            .label_material(texts.iter().map(|text| &text.terms));
        self.pass = Some(tokio::spawn(discovery_pass::run(
            texts,
            material,
            settings.clone(),
        )));
    }

    /// On the tick: the finished pass's report, counted and logged, and the next pass if one
    /// is due; the pool's size.
    pub(super) fn collect_pass(&mut self) {
        self.stats
            .metrics()
            .discovery_pool
            .set(self.replica.state().pool().len() as i64);
        self.finish_pass();
        // Also a pass made due while catching up (startup, the tick's sync).
        self.start_pass_if_due();
    }

    /// Count and log the pass if it has finished (true then).
    fn finish_pass(&mut self) -> bool {
        let Some(finished) = self.pass.as_mut().and_then(|pass| pass.now_or_never()) else {
            return false;
        };
        self.pass = None;
        let outcome = match finished {
            Ok(Ok(report)) => {
                count_proposals(self, &report);
                "ok"
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, "community pass failed; the next one retries");
                "failed"
            }
            Err(error) => {
                tracing::error!(%error, "community pass task died");
                "failed"
            }
        };
        self.stats
            .metrics()
            .discovery_passes
            .get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            })
            .inc();
        true
    }

    /// At shutdown: a finished pass is reported; one still running is dropped (the next one,
    /// here or elsewhere, redoes it; publishing is idempotent).
    pub(super) fn abort_pass(&mut self) {
        self.finish_pass();
        if let Some(pass) = self.pass.take() {
            pass.abort();
        }
    }
}

fn count_proposals(service: &Service, report: &PassReport) {
    tracing::info!(
        pooled = report.pooled,
        communities = report.communities,
        dropped_small = report.dropped.small,
        dropped_loose = report.dropped.loose,
        dropped_known = report.dropped.known,
        published = report.published,
        open = report.open,
        withdrawn = report.withdrawn,
        seconds = report.seconds,
        "community pass"
    );
    let metrics = service.stats.metrics();
    metrics.proposals_published.inc_by(report.published as u64);
    for (reason, count) in [
        ("kept", report.communities),
        ("too_small", report.dropped.small),
        ("loose", report.dropped.loose),
        ("explained", report.dropped.known),
    ] {
        metrics
            .pass_communities
            .get_or_create(&ReasonLabel {
                reason: reason.into(),
            })
            .set(count as i64);
    }
    for (state, count) in [
        ("open", report.open),
        ("accepted", report.accepted),
        ("rejected", report.rejected),
        ("withdrawn", report.withdrawn),
    ] {
        metrics
            .proposals
            .get_or_create(&StateLabel {
                state: state.into(),
            })
            .set(count as i64);
    }
}
