//! Trouble reaching the logs: a broker away for a moment is logged and retried; a log that was
//! lost, or a reader that cannot go on, stops the service.

use std::time::{Duration, Instant};

use crate::broker::BrokerErrorKind;
use crate::serve::ServeError;
use crate::telemetry::admin::Health;

/// How long the changelog topic may be missing, after this instance applied records from it,
/// before that counts as a lost log rather than a broker still loading its metadata.
const LOG_MISSING_GRACE: Duration = Duration::from_secs(30);

/// Trouble reaching the logs is logged at most this often.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Trouble reaching the logs, as last seen.
#[derive(Debug, Default)]
pub(super) struct Trouble {
    /// Since when the changelog topic has been reported missing (see [`Trouble::tolerate`]).
    log_missing_since: Option<Instant>,
    /// When a sync failure was last logged (they repeat every tick while the broker is away).
    warned_at: Option<Instant>,
}

impl Trouble {
    /// The broker answered a watermark query: the changelog topic is there.
    pub(super) fn log_found(&mut self) {
        self.log_missing_since = None;
    }

    /// Trouble reaching the labels or changelog topic is logged (at most every 10 s) and
    /// retried at the next tick: the clients reconnect by themselves. A changelog shorter than
    /// what this instance has `applied`, or gone altogether for `LOG_MISSING_GRACE`, is not
    /// transient: the broker lost the log (a restarted memory-storage broker has no topics at
    /// all), and going on would let the replicas diverge silently, so the service stops and
    /// says how to recover (`health` says the changelog is not consistent); so does a reader
    /// that cannot be pointed back at a record it left unprocessed, and a changelog record of a
    /// version this build does not read (skipping it would do the same).
    pub(super) fn tolerate(
        &mut self,
        error: ServeError,
        health: &Health,
        changelog: &str,
        applied: i64,
        context: &str,
    ) -> Result<(), ServeError> {
        if matches!(
            error,
            ServeError::ChangelogBehind { .. }
                | ServeError::ReaderAhead(..)
                | ServeError::ChangelogVersion { .. }
        ) {
            return Err(error);
        }
        if applied > 0 && topic_missing(&error) {
            let since = *self.log_missing_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= LOG_MISSING_GRACE {
                Health::set(&health.changelog_consistent, false);
                return Err(ServeError::ChangelogBehind {
                    topic: changelog.to_string(),
                    end: 0,
                    applied,
                });
            }
        }
        if self.warned_at.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
            tracing::warn!(%error, "{context}");
            self.warned_at = Some(Instant::now());
        }
        Ok(())
    }
}

/// Whether `error` says the topic (or its partition) does not exist.
fn topic_missing(error: &ServeError) -> bool {
    matches!(error, ServeError::Kafka(_, e) if e.kind() == BrokerErrorKind::UnknownTopic)
}
