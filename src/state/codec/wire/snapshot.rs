//! The snapshot's layouts, by version: [`VersionedSnapshot`]: 2 (bare postcard, told apart by
//! the store's `format` key alone), 3 (inside the envelope of `envelope.rs`, which carries the
//! version itself; store format 3 brought it), 4 (version 3's layout, then the probe's fitted
//! weight; within store format 3) and 5 (version 4's layout, the `doubt` pooling reason
//! appended to a leaf).

use serde::{Deserialize, Serialize};

use super::engine::{
    CorpusStatsWire, GraphStateWire, IndexDocWire, LabelInfoWire, OutcomeWire, SpreadStateWire,
};
use super::leaves::PooledTextWire;
use crate::discovery::pool::PoolParts;
use crate::discovery::Pool;
use crate::engine::saved::EngineState;

/// The layouts this build reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum VersionedSnapshot {
    V2(SnapshotV2),
    V3(SnapshotV3),
    V4(SnapshotV4),
}

impl VersionedSnapshot {
    /// The newest layout: each older one converts to the next.
    pub fn into_newest(self) -> SnapshotV4 {
        match self {
            Self::V2(v2) => SnapshotV3::from(v2).into(),
            Self::V3(v3) => v3.into(),
            Self::V4(v4) => v4,
        }
    }
}

/// Snapshot version 4: version 3's fields, then the probe's weight as last fitted to the
/// stream (None: never fitted; docs/design/fitted-probe.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SnapshotV4 {
    pub v3: SnapshotV3,
    pub fitted_probe_weight: Option<f64>,
}

/// A version 3 snapshot was written by a build that fitted no weight: none until the next
/// round or new examples (a weight fitted at restore would read a later index than the other
/// replicas' fits, and they would diverge).
impl From<SnapshotV3> for SnapshotV4 {
    fn from(v3: SnapshotV3) -> Self {
        Self {
            v3,
            fitted_probe_weight: None,
        }
    }
}

impl SnapshotV4 {
    pub fn new(engine: EngineState, pool: Pool) -> Self {
        let fitted_probe_weight = engine.fitted_probe_weight;
        Self {
            v3: SnapshotV3::new(engine, pool),
            fitted_probe_weight,
        }
    }

    pub fn into_parts(self) -> (EngineState, Pool) {
        let (mut engine, pool) = self.v3.into_parts();
        engine.fitted_probe_weight = self.fitted_probe_weight;
        (engine, pool)
    }
}

/// Store format 2's snapshot: the engine's state with the discovery pool between its fields,
/// each field where it was added (the pool, then the label spread, then the outcomes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SnapshotV2 {
    pub graph: GraphStateWire,
    pub stats: CorpusStatsWire,
    pub labels: Vec<LabelInfoWire>,
    pub index: Vec<IndexDocWire>,
    pub label_version: u64,
    pub last_round: Option<String>,
    pub pool: PoolV2,
    pub spread: SpreadStateWire,
    pub outcomes: Vec<OutcomeWire>,
}

/// Store format 2's pool: the texts' arrival scores last, in text order (added after the
/// texts' own layout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PoolV2 {
    pub texts: Vec<PooledTextWire>,
    pub capacity: u64,
    pub pushed: u64,
    pub arrival_scores: Vec<Option<f64>>,
}

/// Store format 3's snapshot: the engine's state in [`EngineState`]'s order, then the pool,
/// each pooled text with its arrival score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SnapshotV3 {
    pub graph: GraphStateWire,
    pub stats: CorpusStatsWire,
    pub labels: Vec<LabelInfoWire>,
    pub index: Vec<IndexDocWire>,
    pub label_version: u64,
    pub last_round: Option<String>,
    pub spread: SpreadStateWire,
    pub outcomes: Vec<OutcomeWire>,
    pub pool: PoolV3,
}

/// Store format 3's pool, oldest text first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PoolV3 {
    pub texts: Vec<PooledEntryV3>,
    pub capacity: u64,
    pub pushed: u64,
}

/// A pooled text and its arrival score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PooledEntryV3 {
    pub text: PooledTextWire,
    pub arrival_score: Option<f64>,
}

impl From<SnapshotV2> for SnapshotV3 {
    fn from(v2: SnapshotV2) -> Self {
        let SnapshotV2 {
            graph,
            stats,
            labels,
            index,
            label_version,
            last_round,
            pool,
            spread,
            outcomes,
        } = v2;
        let PoolV2 {
            texts,
            capacity,
            pushed,
            arrival_scores,
        } = pool;
        // As format 2 read it: a text past the scores has none.
        let scores = arrival_scores.into_iter().chain(std::iter::repeat(None));
        let texts = texts
            .into_iter()
            .zip(scores)
            .map(|(text, arrival_score)| PooledEntryV3 {
                text,
                arrival_score,
            })
            .collect();
        Self {
            graph,
            stats,
            labels,
            index,
            label_version,
            last_round,
            spread,
            outcomes,
            pool: PoolV3 {
                texts,
                capacity,
                pushed,
            },
        }
    }
}

impl SnapshotV3 {
    pub fn new(engine: EngineState, pool: Pool) -> Self {
        let EngineState {
            graph,
            stats,
            labels,
            index,
            label_version,
            last_round,
            spread,
            outcomes,
            fitted_probe_weight: _,
        } = engine;
        let PoolParts {
            texts,
            capacity,
            pushed,
        } = pool.into_parts();
        let texts = texts
            .into_iter()
            .map(|text| {
                let (text, arrival_score) = PooledTextWire::split(text);
                PooledEntryV3 {
                    text,
                    arrival_score,
                }
            })
            .collect();
        Self {
            graph: graph.into(),
            stats: stats.into(),
            labels: labels.into_iter().map(Into::into).collect(),
            index: index.into_iter().map(Into::into).collect(),
            label_version,
            last_round,
            spread: spread.into(),
            outcomes: outcomes.into_iter().map(Into::into).collect(),
            pool: PoolV3 {
                texts,
                capacity: capacity as u64,
                pushed,
            },
        }
    }

    pub fn into_parts(self) -> (EngineState, Pool) {
        let Self {
            graph,
            stats,
            labels,
            index,
            label_version,
            last_round,
            spread,
            outcomes,
            pool,
        } = self;
        let PoolV3 {
            texts,
            capacity,
            pushed,
        } = pool;
        let engine = EngineState {
            graph: graph.into(),
            stats: stats.into(),
            labels: labels.into_iter().map(Into::into).collect(),
            index: index.into_iter().map(Into::into).collect(),
            label_version,
            last_round,
            spread: spread.into(),
            outcomes: outcomes.into_iter().map(Into::into).collect(),
            fitted_probe_weight: None,
        };
        let pool = Pool::from_parts(PoolParts {
            texts: texts
                .into_iter()
                .map(|entry| entry.text.join(entry.arrival_score))
                .collect(),
            // A restored pool takes the configured capacity (`State::from_snapshot`): one
            // larger than this machine's addresses only needs to be "as large as can be".
            capacity: usize::try_from(capacity).unwrap_or(usize::MAX),
            pushed,
        });
        (engine, pool)
    }
}
