//! A log's reader as the sync uses it: the next record, with a stall noticed; the reader
//! pointed back at a record it left; and a reader that could not be, never read on.

use std::time::Duration;

use crate::broker::{LogReader, Record};
use crate::serve::stop::Phase;
use crate::serve::ServeError;

/// How long the labels or changelog topic may stay silent while we know records are there.
const STALL_SECS: u64 = 30;

/// A log's reader as the sync uses it, and the record it could not be pointed back at, if
/// any: then it must not be read on — the record would be skipped.
pub(super) struct SyncReader {
    reader: LogReader,
    ahead: Option<i64>,
}

impl SyncReader {
    pub(super) fn new(reader: LogReader) -> Self {
        Self {
            reader,
            ahead: None,
        }
    }

    pub(super) fn reader(&self) -> &LogReader {
        &self.reader
    }

    /// The next record of the log (`topic`), which we know holds `next`. Nothing for
    /// `STALL_SECS`: the reader is pointed at `next` again (a fresh fetch, in case its fetch
    /// state went wrong across a broker outage) and the stall reported; the caller retries at
    /// the next tick.
    pub(super) async fn next(
        &self,
        topic: &str,
        next: i64,
        context: &'static str,
    ) -> Result<Record, ServeError> {
        let reader = &self.reader;
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

    /// Point the reader back at `message`, left unprocessed (reading on would process the
    /// records after it and skip it for good). If it cannot be (logged), the log is not read on.
    pub(super) fn point_back(&mut self, message: &Record) {
        if let Err(error) = self.reader.seek(message.offset(), Duration::from_secs(5)) {
            tracing::error!(%error, topic = message.topic, offset = message.offset(),
                "a reader could not be pointed back at a record it left; it is not read on");
            self.ahead = Some(message.offset());
        }
    }

    /// Refuse to read the log (`topic`) if its reader is ahead of a record it left: while
    /// stopping (`phase`), a stop; while serving, fatal (a restart resumes from the saved state).
    pub(super) fn check(&self, topic: &str, phase: Phase) -> Result<(), ServeError> {
        match self.ahead {
            None => Ok(()),
            Some(_) if phase != Phase::Running => Err(ServeError::StoppedWhile(
                "a reader could not be pointed back",
            )),
            Some(offset) => Err(ServeError::ReaderAhead(topic.to_string(), offset)),
        }
    }
}
