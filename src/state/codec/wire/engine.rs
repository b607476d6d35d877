//! The engine's persisted state, the snapshot's leaves (store formats 2 and 3 alike): the
//! keyword graph, the corpus statistics, the labels, the retrieval index's documents, the
//! label spread and the confidence outcomes.

use serde::{Deserialize, Serialize};

use super::leaves::TermCountsWire;
use crate::engine::confidence::Outcome;
use crate::engine::graph::{EdgeCost, Node};
use crate::engine::index::{DocKind, IndexDoc, LabelPos, SpreadState};
use crate::engine::saved::GraphState;
use crate::engine::tfidf::CorpusStats;
use crate::engine::LabelInfo;

/// [`GraphState`]: nodes and edges in index order (a restored graph is the same petgraph).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GraphStateWire {
    pub nodes: Vec<NodeWire>,
    pub edges: Vec<(u32, u32, EdgeCostWire)>,
    pub shared: Vec<(u32, Vec<(u32, u32)>)>,
}

/// [`Node`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum NodeWire {
    Keyword(String),
    Label(String),
    Hub,
}

/// [`EdgeCost`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct EdgeCostWire {
    pub total: f64,
    pub count: u32,
}

/// [`CorpusStats`]: its document frequencies as (phrase, df) pairs (a map in postcard); written
/// sorted by phrase, so equal states write equal bytes; read in any order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CorpusStatsWire {
    pub documents: u64,
    pub document_frequency: Vec<(String, u64)>,
}

/// [`LabelInfo`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LabelInfoWire {
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub active: bool,
    pub examples: u32,
}

/// [`IndexDoc`]; `label` is a [`LabelPos`], the bare number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IndexDocWire {
    pub kind: DocKindWire,
    pub label: u32,
    pub terms: TermCountsWire,
    pub text: Option<String>,
}

/// [`DocKind`], by place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum DocKindWire {
    Example,
    Name,
    Description,
    Seen,
    Tentative,
}

/// [`SpreadState`]: (term, label positions), sorted as the engine writes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SpreadStateWire {
    pub folded: Vec<(String, Vec<u32>)>,
    pub pending: Vec<(String, Vec<u32>)>,
    pub folded_texts: u64,
    pub pending_texts: u64,
}

/// [`Outcome`]: the calibrator's 12 features (a fixed array: no length is written), so a change
/// of `engine::confidence::FEATURES` fails to compile here.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct OutcomeWire {
    pub features: [f64; 12],
    pub right: bool,
}

impl From<GraphState> for GraphStateWire {
    fn from(graph: GraphState) -> Self {
        let GraphState {
            nodes,
            edges,
            shared,
        } = graph;
        Self {
            nodes: nodes.into_iter().map(Into::into).collect(),
            edges: edges
                .into_iter()
                .map(|(a, b, EdgeCost { total, count })| (a, b, EdgeCostWire { total, count }))
                .collect(),
            shared,
        }
    }
}

impl From<GraphStateWire> for GraphState {
    fn from(wire: GraphStateWire) -> Self {
        let GraphStateWire {
            nodes,
            edges,
            shared,
        } = wire;
        Self {
            nodes: nodes.into_iter().map(Into::into).collect(),
            edges: edges
                .into_iter()
                .map(|(a, b, EdgeCostWire { total, count })| (a, b, EdgeCost { total, count }))
                .collect(),
            shared,
        }
    }
}

impl From<Node> for NodeWire {
    fn from(node: Node) -> Self {
        match node {
            Node::Keyword(phrase) => Self::Keyword(phrase),
            Node::Label(id) => Self::Label(id),
            Node::Hub => Self::Hub,
        }
    }
}

impl From<NodeWire> for Node {
    fn from(wire: NodeWire) -> Self {
        match wire {
            NodeWire::Keyword(phrase) => Self::Keyword(phrase),
            NodeWire::Label(id) => Self::Label(id),
            NodeWire::Hub => Self::Hub,
        }
    }
}

impl From<CorpusStats> for CorpusStatsWire {
    fn from(stats: CorpusStats) -> Self {
        let CorpusStats {
            documents,
            document_frequency,
        } = stats;
        let mut document_frequency: Vec<(String, u64)> = document_frequency.into_iter().collect();
        // Phrases are distinct: the order is total.
        document_frequency.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Self {
            documents,
            document_frequency,
        }
    }
}

impl From<CorpusStatsWire> for CorpusStats {
    fn from(wire: CorpusStatsWire) -> Self {
        let CorpusStatsWire {
            documents,
            document_frequency,
        } = wire;
        Self {
            documents,
            document_frequency: document_frequency.into_iter().collect(),
        }
    }
}

impl From<LabelInfo> for LabelInfoWire {
    fn from(label: LabelInfo) -> Self {
        let LabelInfo {
            id,
            name,
            description,
            active,
            examples,
        } = label;
        Self {
            id,
            name,
            description,
            active,
            examples,
        }
    }
}

impl From<LabelInfoWire> for LabelInfo {
    fn from(wire: LabelInfoWire) -> Self {
        let LabelInfoWire {
            id,
            name,
            description,
            active,
            examples,
        } = wire;
        Self {
            id,
            name,
            description,
            active,
            examples,
        }
    }
}

impl From<IndexDoc> for IndexDocWire {
    fn from(doc: IndexDoc) -> Self {
        let IndexDoc {
            kind,
            label: LabelPos(label),
            terms,
            text,
        } = doc;
        let kind = match kind {
            DocKind::Example => DocKindWire::Example,
            DocKind::Name => DocKindWire::Name,
            DocKind::Description => DocKindWire::Description,
            DocKind::Seen => DocKindWire::Seen,
            DocKind::Tentative => DocKindWire::Tentative,
        };
        Self {
            kind,
            label,
            terms: terms.into(),
            text,
        }
    }
}

impl From<IndexDocWire> for IndexDoc {
    fn from(wire: IndexDocWire) -> Self {
        let IndexDocWire {
            kind,
            label,
            terms,
            text,
        } = wire;
        let kind = match kind {
            DocKindWire::Example => DocKind::Example,
            DocKindWire::Name => DocKind::Name,
            DocKindWire::Description => DocKind::Description,
            DocKindWire::Seen => DocKind::Seen,
            DocKindWire::Tentative => DocKind::Tentative,
        };
        Self {
            kind,
            label: LabelPos(label),
            terms: terms.into(),
            text,
        }
    }
}

/// Label positions as bare numbers, and back.
fn positions(labels: Vec<LabelPos>) -> Vec<u32> {
    labels.into_iter().map(|LabelPos(label)| label).collect()
}

fn labels(positions: Vec<u32>) -> Vec<LabelPos> {
    positions.into_iter().map(LabelPos).collect()
}

impl From<SpreadState> for SpreadStateWire {
    fn from(spread: SpreadState) -> Self {
        let SpreadState {
            folded,
            pending,
            folded_texts,
            pending_texts,
        } = spread;
        let wire = |terms: Vec<(String, Vec<LabelPos>)>| {
            terms
                .into_iter()
                .map(|(term, labels)| (term, positions(labels)))
                .collect()
        };
        Self {
            folded: wire(folded),
            pending: wire(pending),
            folded_texts,
            pending_texts,
        }
    }
}

impl From<SpreadStateWire> for SpreadState {
    fn from(wire: SpreadStateWire) -> Self {
        let SpreadStateWire {
            folded,
            pending,
            folded_texts,
            pending_texts,
        } = wire;
        let engine = |terms: Vec<(String, Vec<u32>)>| {
            terms
                .into_iter()
                .map(|(term, positions)| (term, labels(positions)))
                .collect()
        };
        Self {
            folded: engine(folded),
            pending: engine(pending),
            folded_texts,
            pending_texts,
        }
    }
}

impl From<Outcome> for OutcomeWire {
    fn from(outcome: Outcome) -> Self {
        let Outcome { features, right } = outcome;
        Self { features, right }
    }
}

impl From<OutcomeWire> for Outcome {
    fn from(wire: OutcomeWire) -> Self {
        let OutcomeWire { features, right } = wire;
        Self { features, right }
    }
}
