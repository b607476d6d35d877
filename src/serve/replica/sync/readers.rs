//! The two logs' readers as the sync uses them: the next record, with a stall noticed; a
//! reader pointed back at a record it left; and a reader that could not be, never read on.

use std::time::Duration;

use crate::broker::{LogReader, Record};
use crate::serve::stop::Phase;
use crate::serve::ServeError;

/// How long the labels or changelog topic may stay silent while we know records are there.
const STALL_SECS: u64 = 30;

/// One of the two logs the sync reads.
#[derive(Debug, Clone, Copy)]
pub(super) enum Log {
    Changelog,
    Labels,
}

/// The two logs' readers, and the record each could not be pointed back at, if any: that
/// reader must not be read on — the record would be skipped.
pub(super) struct Readers {
    changelog: LogReader,
    labels: LogReader,
    changelog_ahead: Option<i64>,
    labels_ahead: Option<i64>,
}

impl Readers {
    pub(super) fn new(changelog: LogReader, labels: LogReader) -> Self {
        Self {
            changelog,
            labels,
            changelog_ahead: None,
            labels_ahead: None,
        }
    }

    pub(super) fn reader(&self, log: Log) -> &LogReader {
        match log {
            Log::Changelog => &self.changelog,
            Log::Labels => &self.labels,
        }
    }

    /// The next record of `log` (`topic`), which we know holds `next` ([`next_record`]).
    pub(super) async fn next(
        &self,
        log: Log,
        topic: &str,
        next: i64,
        context: &'static str,
    ) -> Result<Record, ServeError> {
        next_record(self.reader(log), topic, next, context).await
    }

    /// Point `log`'s reader back at `message`, left unprocessed (reading on would process the
    /// records after it and skip it for good). If it cannot be, that log is not read on.
    pub(super) fn point_back(&mut self, log: Log, message: &Record) {
        if point_back(self.reader(log), message) {
            return;
        }
        let ahead = match log {
            Log::Changelog => &mut self.changelog_ahead,
            Log::Labels => &mut self.labels_ahead,
        };
        *ahead = Some(message.offset());
    }

    /// Refuse to read `log` (`topic`) if its reader is ahead of a record it left: while
    /// stopping (`phase`), a stop; while serving, fatal (a restart resumes from the saved state).
    pub(super) fn check(&self, log: Log, topic: &str, phase: Phase) -> Result<(), ServeError> {
        let ahead = match log {
            Log::Changelog => self.changelog_ahead,
            Log::Labels => self.labels_ahead,
        };
        match ahead {
            None => Ok(()),
            Some(_) if phase != Phase::Running => Err(ServeError::StoppedWhile(
                "a reader could not be pointed back",
            )),
            Some(offset) => Err(ServeError::ReaderAhead(topic.to_string(), offset)),
        }
    }
}

/// Point `reader` back at `message`, for it to hand the record out again; false (logged) when
/// it cannot be.
fn point_back(reader: &LogReader, message: &Record) -> bool {
    match reader.seek(message.offset(), Duration::from_secs(5)) {
        Ok(()) => true,
        Err(error) => {
            tracing::error!(%error, topic = message.topic, offset = message.offset(),
                "a reader could not be pointed back at a record it left; it is not read on");
            false
        }
    }
}

/// The next record of a one-partition log we know holds `next`. Nothing for `STALL_SECS`:
/// point the reader at `next` again (a fresh fetch, in case its fetch state went wrong across
/// a broker outage) and report the stall; the caller retries at the next tick.
async fn next_record(
    reader: &LogReader,
    topic: &str,
    next: i64,
    context: &'static str,
) -> Result<Record, ServeError> {
    match tokio::time::timeout(Duration::from_secs(STALL_SECS), reader.recv()).await {
        Ok(Ok(message)) => Ok(message),
        Ok(Err(error)) => Err(ServeError::Kafka(context, error)),
        Err(_) => {
            if let Err(error) = reader.seek(next, Duration::from_secs(5)) {
                tracing::warn!(%error, topic, next, "seek after a stall failed");
            }
            Err(ServeError::Stalled(topic.to_string(), STALL_SECS))
        }
    }
}
