//! A state restored from what a store saved: its snapshot, then every update logged since.

use thiserror::Error;

use super::{Snapshot, State, Update};
use crate::engine::saved::StateError;
use crate::engine::{Engine, EngineConfig, EngineError};

#[derive(Debug, Error)]
pub enum RestoreError {
    #[error("restoring the saved state: {0}")]
    State(#[from] StateError),
    #[error("replaying the saved update log: {0}")]
    Replay(#[from] EngineError),
}

impl State {
    /// The state a store saved: `snapshot` (a new state without one), then every update of
    /// `log` in order; the engine with `config`, the pool holding `pool_capacity` texts.
    pub fn restore(
        snapshot: Option<Snapshot>,
        log: &[Update],
        config: EngineConfig,
        pool_capacity: usize,
    ) -> Result<Self, RestoreError> {
        let mut state = match snapshot {
            Some(snapshot) => Self::from_snapshot(config, pool_capacity, snapshot)?,
            None => Self::new(Engine::new(config), pool_capacity),
        };
        for update in log {
            state.apply(update)?;
        }
        Ok(state)
    }
}
