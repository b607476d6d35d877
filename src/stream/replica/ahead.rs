//! Encoding a label event's material ahead of applying it (with the embedding signal): a
//! round's names and examples cost ≈ 0.1 s of CPU each, seconds to minutes a round, which the
//! loop must not spend on its own thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::Replica;
use crate::engine::embedding::Embeddings;
use crate::stream::changelog::ChangeRecord;
use crate::stream::stop::{Phase, Stop};
use crate::stream::ServeError;

/// Encode the labelled material of the changelog record `record` (see
/// [`Replica::material_ahead`]) on the blocking pool, into the encoder that keeps material, so
/// that applying the record on the loop reads the vectors back instead of running the model
/// there. The loop waits for it as it waits for the log — without holding a runtime thread, but
/// committing, answering rebalances and finishing texts only afterwards — and only while the
/// service runs: once the drain begins (or whoever waits gives up) the encoding stops after the
/// texts in hand and this returns [`ServeError::StoppedWhile`]. A task that died is no error:
/// applying encodes whatever was not kept.
pub async fn encode_ahead(
    stop: &Stop,
    replica: &Replica,
    record: &Result<ChangeRecord, String>,
) -> Result<(), ServeError> {
    let Some((encoder, texts)) = replica.material_ahead(record) else {
        return Ok(());
    };
    let stopped =
        || ServeError::StoppedWhile("encoding a round's labelled material ahead of applying it");
    if stop.phase() != Phase::Running {
        return Err(stopped());
    }
    let cancelled = CancelOnDrop::default();
    let flag = cancelled.0.clone();
    let started = Instant::now();
    let count = texts.len();
    tracing::info!(
        texts = count,
        "encoding labelled material ahead of applying it"
    );
    let encoding = tokio::task::spawn_blocking(move || {
        Embeddings::encode_ahead(encoder.as_ref(), texts, &flag)
    });
    let reached = match stop.unless_stopping(encoding).await.ok_or_else(stopped)? {
        Ok(reached) => reached,
        Err(error) => {
            // Encoding ahead only saves the loop the work: applying encodes what is not kept.
            tracing::warn!(%error, "encoding ahead failed; the round is encoded as it is applied");
            return Ok(());
        }
    };
    tracing::info!(
        texts = count,
        reached,
        seconds = started.elapsed().as_secs_f64(),
        "labelled material encoded ahead of applying it"
    );
    Ok(())
}

/// Set when dropped: tells the encoding on the blocking pool to stop once whoever waited for
/// it is gone.
#[derive(Default)]
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
