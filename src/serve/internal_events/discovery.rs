//! Emerging-class discovery in the service: the pool's size, and each community pass's end.

use tokio::task::JoinError;

use super::texts::gauge;
use super::DISCOVERY_TARGET;
use crate::serve::discovery_pass::{PassError, PassReport};
use crate::telemetry::event::InternalEvent;
use crate::telemetry::metrics::{Instruments, OutcomeLabel, ReasonLabel, StateLabel};

/// The discovery pool's size measured.
#[derive(Debug, Clone, Copy)]
pub struct PoolMeasured {
    pub texts: usize,
    /// What they hold, approximately (`Pool::approximate_bytes`).
    pub bytes: usize,
}

impl InternalEvent for PoolMeasured {
    fn emit(self, instruments: &Instruments) {
        instruments.discovery_pool.set(gauge(self.texts));
        instruments.discovery_pool_bytes.set(gauge(self.bytes));
    }
}

/// A community pass finished: what it found and published, and the proposals on the topic
/// after it.
#[derive(Debug, Clone, Copy)]
pub struct CommunityPassFinished<'a> {
    pub report: &'a PassReport,
}

impl InternalEvent for CommunityPassFinished<'_> {
    fn emit(self, instruments: &Instruments) {
        let report = self.report;
        tracing::info!(
            target: DISCOVERY_TARGET,
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
        instruments
            .proposals_published
            .inc_by(u64::try_from(report.published).unwrap_or(u64::MAX));
        for (reason, count) in [
            ("kept", report.communities),
            ("too_small", report.dropped.small),
            ("loose", report.dropped.loose),
            ("explained", report.dropped.known),
        ] {
            instruments
                .pass_communities
                .get_or_create(&ReasonLabel {
                    reason: reason.into(),
                })
                .set(gauge(count));
        }
        for (state, count) in [
            ("open", report.open),
            ("accepted", report.accepted),
            ("rejected", report.rejected),
            ("withdrawn", report.withdrawn),
        ] {
            instruments
                .proposals
                .get_or_create(&StateLabel {
                    state: state.into(),
                })
                .set(gauge(count));
        }
        instruments
            .discovery_passes
            .get_or_create(&OutcomeLabel {
                outcome: "ok".into(),
            })
            .inc();
    }
}

/// A community pass failed (the next one retries).
#[derive(Debug, Clone, Copy)]
pub struct CommunityPassFailed<'a> {
    pub error: &'a PassError,
}

impl InternalEvent for CommunityPassFailed<'_> {
    fn emit(self, instruments: &Instruments) {
        tracing::warn!(
            target: DISCOVERY_TARGET,
            error = %self.error,
            "community pass failed; the next one retries"
        );
        instruments
            .discovery_passes
            .get_or_create(&OutcomeLabel {
                outcome: "failed".into(),
            })
            .inc();
    }
}

/// A community pass's task died (panicked or was cancelled): a failed pass.
#[derive(Debug, Clone, Copy)]
pub struct CommunityPassDied<'a> {
    pub error: &'a JoinError,
}

impl InternalEvent for CommunityPassDied<'_> {
    fn emit(self, instruments: &Instruments) {
        tracing::error!(
            target: DISCOVERY_TARGET,
            error = %self.error,
            "community pass task died"
        );
        instruments
            .discovery_passes
            .get_or_create(&OutcomeLabel {
                outcome: "failed".into(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::communities::Dropped;
    use crate::telemetry::event::{logged, sample};
    use crate::telemetry::metrics::Metrics;

    #[test]
    fn a_finished_pass_sets_its_gauges_and_counts_what_it_published() {
        let metrics = Metrics::new();
        let report = PassReport {
            pooled: 40,
            communities: 2,
            dropped: Dropped {
                small: 3,
                loose: 1,
                known: 0,
            },
            published: 2,
            open: 2,
            accepted: 1,
            rejected: 0,
            withdrawn: 0,
            seconds: 0.5,
        };
        let log = logged(|| metrics.emit(CommunityPassFinished { report: &report }));
        assert!(
            log.trim_start().starts_with(
                "INFO gorag::serve::service::discover: community pass pooled=40 communities=2"
            ),
            "{log}"
        );
        metrics.emit(CommunityPassFinished { report: &report });
        metrics.emit(PoolMeasured {
            texts: 40,
            bytes: 52_000,
        });
        for (series, value) in [
            ("gorag_proposals_published_total", 4.0),
            ("gorag_discovery_pass_communities{reason=\"kept\"}", 2.0),
            (
                "gorag_discovery_pass_communities{reason=\"too_small\"}",
                3.0,
            ),
            ("gorag_proposals{state=\"accepted\"}", 1.0),
            ("gorag_discovery_passes_total{outcome=\"ok\"}", 2.0),
            ("gorag_discovery_passes_total{outcome=\"failed\"}", 0.0),
            ("gorag_discovery_pool_texts", 40.0),
            ("gorag_discovery_pool_bytes", 52_000.0),
        ] {
            assert_eq!(sample(&metrics, series), Some(value), "{series}");
        }
    }
}
