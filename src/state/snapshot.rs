//! The replicated state as the store persists it, and the layouts older builds wrote.
//!
//! Compatibility policy: a build reads every snapshot layout listed here, oldest first in
//! [`Snapshot::decode`]; postcard writes a struct as its fields in order, so each layout is a
//! prefix of the next and a snapshot decodes as one layout only. A layout is dropped only with a
//! note in the release notes saying how to rebuild a state folder (delete it: a replica rebuilds
//! from the changelog topic, which is kept for ever). The log's updates follow the same rule
//! (variants keep their place: [`super::Update`]).

use serde::{Deserialize, Serialize};

use crate::discovery::{Pool, PoolV1};
use crate::engine::confidence::Outcome;
use crate::engine::index::{IndexDoc, SpreadState};
use crate::engine::state::{EngineState, GraphState};
use crate::engine::tfidf::CorpusStats;
use crate::engine::LabelInfo;

/// This build's layout: the engine's state with the discovery pool between its fields (where
/// the pool was added), so older snapshots stay its prefixes.
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
    /// Last: a snapshot written before confidence refits decodes with none.
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

    /// Decode a postcard snapshot: this build's, one written before confidence refits (then
    /// with no outcome), one written before the label spread (then with nothing learned into
    /// the weights), one written before arrival scores (its pooled texts without them), or one
    /// written before the pool existed (then with an empty pool).
    pub fn decode(bytes: &[u8]) -> Result<Self, postcard::Error> {
        let error = match postcard::from_bytes::<Self>(bytes) {
            Ok(state) => return Ok(state),
            Err(error) => error,
        };
        type WithoutOutcomes = (WithoutPool, Pool, SpreadState);
        if let Ok((old, pool, spread)) = postcard::from_bytes::<WithoutOutcomes>(bytes) {
            return Ok(Self {
                spread,
                ..old.with_pool(pool)
            });
        }
        if let Ok((old, pool)) = postcard::from_bytes::<(WithoutPool, Pool)>(bytes) {
            return Ok(old.with_pool(pool));
        }
        if let Ok((old, pool)) = postcard::from_bytes::<(WithoutPool, PoolV1)>(bytes) {
            return Ok(old.with_pool(Pool::from_v1(pool)));
        }
        postcard::from_bytes::<WithoutPool>(bytes)
            .map(|old| old.with_pool(Pool::default()))
            .map_err(|_| error)
    }
}

/// A snapshot as builds before the discovery pool wrote it. Followed by a [`Pool`] and a
/// [`SpreadState`], it is the layout of snapshots written before confidence outcomes; followed by
/// a [`Pool`], that of snapshots written before the label spread; and followed by a [`PoolV1`],
/// that of snapshots written before arrival scores (a pair of structs reads as one with both
/// sets of fields).
#[derive(Deserialize)]
struct WithoutPool {
    graph: GraphState,
    stats: CorpusStats,
    labels: Vec<LabelInfo>,
    index: Vec<IndexDoc>,
    label_version: u64,
    last_round: Option<String>,
}

impl WithoutPool {
    fn with_pool(self, pool: Pool) -> Snapshot {
        Snapshot {
            graph: self.graph,
            stats: self.stats,
            labels: self.labels,
            index: self.index,
            label_version: self.label_version,
            last_round: self.last_round,
            pool,
            spread: SpreadState::default(),
            outcomes: Vec::new(),
        }
    }
}
