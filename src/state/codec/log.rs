//! The store's logged updates: [`UpdateV9`], the changelog's own layout of an [`Update`]
//! (store formats 2 and 3 alike). A learned text, most of the log, is written from the borrowed
//! update (`wire::learn_view`).

use thiserror::Error;

use super::wire::learn_view::LearnUpdateRef;
use super::wire::update::UpdateV9;
use super::wire::WireError;
use crate::state::Update;

/// Why a logged update cannot be read.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LogDecodeError {
    #[error("postcard: {0}")]
    Postcard(String),
    #[error(transparent)]
    Wire(#[from] WireError),
}

/// `update` as the store logs it.
pub fn encode_logged(update: &Update) -> Result<Vec<u8>, postcard::Error> {
    match update {
        Update::Learn {
            analysis,
            label,
            confident,
        } => postcard::to_stdvec(&LearnUpdateRef {
            analysis,
            label,
            confident: *confident,
        }),
        // Rare and small (label events, corrections, pooled texts): through the owned layout.
        other => postcard::to_stdvec(&UpdateV9::from(other.clone())),
    }
}

/// A logged update.
pub fn decode_logged(bytes: &[u8]) -> Result<Update, LogDecodeError> {
    let wire: UpdateV9 =
        postcard::from_bytes(bytes).map_err(|e| LogDecodeError::Postcard(e.to_string()))?;
    Ok(wire.try_into()?)
}
