//! Turning the embedding signal on for a restored state: the model loaded, the labels' vectors
//! read back from the state store where it keeps them (or encoded), for `gorag serve` and
//! `gorag classify` alike. It joins three rooms that know nothing of each other — the encoder
//! (`embed`), the state and its store — so it sits above all three.

use std::sync::Arc;
use std::time::Instant;

use thiserror::Error;

use crate::embed::{
    EmbeddingModel, LoadError, NoVectorStore, RememberingEncoder, SentenceModel, VectorStore,
};
use crate::engine::EngineConfig;
use crate::state::{RestoreError, State};
use crate::store::{Saved, SledStore};

/// The encoder that keeps the labels' vectors in the state store.
pub type KeptVectors = Arc<RememberingEncoder<SentenceModel>>;

/// How a saved state comes back (the configuration's `ServeConfig::restoring`).
pub struct Restoring<'a> {
    pub engine: EngineConfig,
    /// `discovery.pool_capacity`.
    pub pool_capacity: usize,
    /// `engine.embedding_model`.
    pub model: &'a EmbeddingModel,
    /// `engine.embedding_max_tokens`.
    pub max_tokens: usize,
}

#[derive(Debug, Error)]
pub enum OpenError {
    #[error(transparent)]
    Restore(#[from] RestoreError),
    #[error(transparent)]
    Embedding(#[from] LoadError),
}

/// The state `saved` holds (its snapshot, taken out of `saved`, and the updates logged after
/// it), reading meaning as [`read_meaning`] does with the vectors `store` kept: what
/// `gorag serve` and `gorag classify` start from.
pub fn restore(
    saved: &mut Saved,
    how: Restoring<'_>,
    store: Option<&SledStore>,
) -> Result<(State, Option<KeptVectors>), OpenError> {
    let restored = State::restore(
        saved.snapshot.take(),
        &saved.log,
        how.engine,
        how.pool_capacity,
    )?;
    Ok(read_meaning(restored, how.model, how.max_tokens, store)?)
}

/// `state`'s engine reading meaning with `setting` (`engine.embedding_model`, reading at most
/// `max_tokens` of a text: `engine.embedding_max_tokens`), when its strategy reads meaning
/// (`ranked`, `hybrid` and `nearest` do: the other strategies need no model).
/// Every label's examples and names get their vectors here, before the first text; those
/// `store` kept from earlier runs are read back, not encoded again.
pub fn read_meaning(
    state: State,
    setting: &EmbeddingModel,
    max_tokens: usize,
    store: Option<&SledStore>,
) -> Result<(State, Option<KeptVectors>), LoadError> {
    let started = Instant::now();
    let model = if state.engine().config().strategy.reads_meaning() {
        setting.load(max_tokens)?
    } else {
        None
    };
    let Some(model) = model else {
        return Ok((state, None));
    };
    let (engine, pool) = state.into_parts();
    let kept: Box<dyn VectorStore> = match store.map(|s| s.vectors(model.fingerprint())) {
        Some(Ok(kept)) => Box::new(kept),
        Some(Err(error)) => {
            tracing::warn!(%error, "no kept sentence vectors: every label's material is encoded");
            Box::new(NoVectorStore)
        }
        None => Box::new(NoVectorStore),
    };
    let dimension = model.dimension();
    let encoder = Arc::new(RememberingEncoder::new(model, kept, dimension));
    let (engine, unencoded) = engine.with_encoder(encoder.clone());
    let (read_back, encoded) = encoder.material_counts();
    tracing::info!(
        model = %setting,
        seconds = started.elapsed().as_secs_f64(),
        read_back,
        encoded,
        unencoded,
        "embedding signal on"
    );
    Ok((State::from_parts(engine, pool), Some(encoder)))
}
