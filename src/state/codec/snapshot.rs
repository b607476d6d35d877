//! The replicated state as the store persists it: one layout, that of store format
//! [`super::STORE_FORMAT`] (the policy, and what older layouts were dropped: `mod.rs`).

use serde::{Deserialize, Serialize};

use crate::discovery::Pool;
use crate::engine::confidence::Outcome;
use crate::engine::index::{IndexDoc, SpreadState};
use crate::engine::state::{EngineState, GraphState};
use crate::engine::tfidf::CorpusStats;
use crate::engine::LabelInfo;

/// The engine's state with the discovery pool between its fields: each field sits where it was
/// added (the pool, then the label spread, then the outcomes, last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    graph: GraphState,
    stats: CorpusStats,
    labels: Vec<LabelInfo>,
    index: Vec<IndexDoc>,
    label_version: u64,
    last_round: Option<String>,
    /// Texts the active labels explain poorly (emerging-class discovery).
    pool: Pool,
    spread: SpreadState,
    /// Confidence outcomes (the refit's data).
    outcomes: Vec<Outcome>,
}

impl Snapshot {
    pub fn new(engine: EngineState, pool: Pool) -> Self {
        Self {
            graph: engine.graph,
            stats: engine.stats,
            labels: engine.labels,
            index: engine.index,
            label_version: engine.label_version,
            last_round: engine.last_round,
            pool,
            spread: engine.spread,
            outcomes: engine.outcomes,
        }
    }

    pub fn into_parts(self) -> (EngineState, Pool) {
        let engine = EngineState {
            graph: self.graph,
            stats: self.stats,
            labels: self.labels,
            index: self.index,
            label_version: self.label_version,
            last_round: self.last_round,
            spread: self.spread,
            outcomes: self.outcomes,
        };
        (engine, self.pool)
    }

    /// Decode a postcard snapshot of this layout.
    pub fn decode(bytes: &[u8]) -> Result<Self, postcard::Error> {
        postcard::from_bytes::<Self>(bytes)
    }
}
