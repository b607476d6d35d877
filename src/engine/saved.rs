//! The engine's whole state as plain data: what the store persists, and a digest that two
//! engines share exactly when their states are equal.
//!
//! The graph is kept with its node and edge order, so a restored engine is the same petgraph
//! (same indices, same adjacency order) and breaks retrieval ties the same way as the engine
//! that was saved. That is what makes a restarted service reproduce an uninterrupted one.

use foldhash::{HashMap, HashSet};
use petgraph::graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use super::confidence::Outcome;
use super::graph::{EdgeCost, KeywordGraph, Node};
use super::index::{IndexDoc, SpreadState, TextIndex};
use super::refit::OutcomeLog;
use super::tfidf::CorpusStats;
use super::{Engine, EngineConfig, LabelInfo, Labels};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphState {
    pub nodes: Vec<Node>,
    /// (endpoint, endpoint, cost) in edge index order.
    pub edges: Vec<(u32, u32, EdgeCost)>,
    /// Per label node, its (keyword node, edge) pairs that relay to other labels, in order.
    pub shared: Vec<(u32, Vec<(u32, u32)>)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineState {
    pub graph: GraphState,
    pub stats: CorpusStats,
    pub labels: Vec<LabelInfo>,
    /// The retrieval index's documents, in order (weights are derived from them).
    pub index: Vec<IndexDoc>,
    pub label_version: u64,
    pub last_round: Option<String>,
    /// What classified texts taught the index's term weights (its label spread).
    pub spread: SpreadState,
    /// The labelled outcomes the confidence is refitted on (oldest first; derived, not in the
    /// digest).
    pub outcomes: Vec<Outcome>,
    /// The probe's weight as last fitted (derived, not in the digest; kept because a refit
    /// would read a later index).
    pub fitted_probe_weight: Option<f64>,
}

#[derive(Debug, Error, PartialEq)]
pub enum StateError {
    #[error("graph state has no hub node")]
    NoHub,
    #[error("graph state edge {0} joins a node that does not exist")]
    DanglingEdge(usize),
    #[error("graph state lists label {0} twice")]
    DuplicateNode(String),
    #[error("label {0:?} has no node in the graph state")]
    MissingLabel(String),
    #[error("index document refers to label position {0}, which does not exist")]
    BadExample(usize),
}

/// The keyword graph's part of a snapshot, taken and restored here (the graph's own type keeps
/// to the graph).
impl GraphState {
    pub fn of(keyword_graph: &KeywordGraph) -> Self {
        let graph = keyword_graph.inner();
        let nodes = graph.node_weights().cloned().collect();
        let edges = graph
            .edge_references()
            .map(|e| {
                (
                    e.source().index() as u32,
                    e.target().index() as u32,
                    *e.weight(),
                )
            })
            .collect();
        let mut shared: Vec<(u32, Vec<(u32, u32)>)> = keyword_graph
            .shared_keywords()
            .lists()
            .map(|(label, list)| {
                (
                    label.index() as u32,
                    list.iter()
                        .map(|(k, e)| (k.index() as u32, e.index() as u32))
                        .collect(),
                )
            })
            .collect();
        shared.sort_by_key(|(label, _)| *label);
        Self {
            nodes,
            edges,
            shared,
        }
    }

    /// The graph this state describes; an error names what is inconsistent in it.
    pub fn restore(&self) -> Result<KeywordGraph, StateError> {
        let state = self;
        let mut graph = petgraph::graph::UnGraph::default();
        let mut keywords = HashSet::default();
        let mut labels = HashMap::default();
        let mut hub = None;
        for node in &state.nodes {
            let index = graph.add_node(node.clone());
            let duplicate = match node {
                Node::Keyword(k) => !keywords.insert(k.as_str()),
                Node::Label(l) => labels.insert(l.clone(), index).is_some(),
                Node::Hub => hub.replace(index).is_some(),
            };
            if duplicate {
                return Err(StateError::DuplicateNode(format!("{node:?}")));
            }
        }
        let hub = hub.ok_or(StateError::NoHub)?;
        let count = state.nodes.len();
        let mut hub_edges = HashMap::default();
        for (position, &(a, b, cost)) in state.edges.iter().enumerate() {
            let (a, b) = (a as usize, b as usize);
            if a >= count || b >= count {
                return Err(StateError::DanglingEdge(position));
            }
            let (a, b) = (NodeIndex::new(a), NodeIndex::new(b));
            let edge = graph.add_edge(a, b, cost);
            if a == hub {
                hub_edges.insert(b, edge);
            } else if b == hub {
                hub_edges.insert(a, edge);
            }
        }
        let edge_total = state.edges.len();
        let mut shared = HashMap::default();
        for (label, list) in &state.shared {
            let mut pairs = Vec::with_capacity(list.len());
            for &(keyword, edge) in list {
                if keyword as usize >= count || edge as usize >= edge_total {
                    return Err(StateError::DanglingEdge(edge as usize));
                }
                pairs.push((
                    NodeIndex::new(keyword as usize),
                    EdgeIndex::new(edge as usize),
                ));
            }
            shared.insert(NodeIndex::new(*label as usize), pairs);
        }
        Ok(KeywordGraph::from_parts(
            graph, labels, hub, hub_edges, shared,
        ))
    }
}

impl EngineState {
    /// Everything of `engine` that a restart must bring back (the configuration comes from
    /// the operator; [`Engine::from_state`] brings it back).
    pub fn of(engine: &Engine) -> Self {
        Self {
            graph: GraphState::of(&engine.graph),
            stats: engine.stats.clone(),
            labels: engine.labels.all().to_vec(),
            index: engine.index.documents().alive().cloned().collect(),
            label_version: engine.labels.version(),
            last_round: engine.labels.last_round().map(str::to_string),
            spread: engine.index.weights().learned_state(),
            outcomes: engine.outcomes.outcomes().copied().collect(),
            fitted_probe_weight: engine.fitted_probe_weight,
        }
    }
}

impl Engine {
    /// The engine a saved state describes, under `config`; an error names what is
    /// inconsistent in the state.
    pub fn from_state(config: EngineConfig, state: EngineState) -> Result<Self, StateError> {
        let graph = state.graph.restore()?;
        let mut label_index = HashMap::default();
        for (position, label) in state.labels.iter().enumerate() {
            if graph.label(&label.id).is_none() {
                return Err(StateError::MissingLabel(label.id.clone()));
            }
            if label_index.insert(label.id.clone(), position).is_some() {
                return Err(StateError::DuplicateNode(label.id.clone()));
            }
        }
        if let Some(doc) = state
            .index
            .iter()
            .find(|doc| doc.label.index() >= state.labels.len())
        {
            return Err(StateError::BadExample(doc.label.index()));
        }
        let index = TextIndex::from_docs(
            state.index,
            state.spread,
            config.capacity,
            config.term_weighting(),
        );
        let mut engine = Self {
            config,
            graph,
            stats: state.stats,
            labels: Labels::restored(
                state.labels,
                label_index,
                state.label_version,
                state.last_round,
            ),
            index,
            embeddings: None,
            outcomes: OutcomeLog::from_outcomes(state.outcomes),
            probe: None,
            fitted_probe_weight: state.fitted_probe_weight,
        };
        engine.outcomes.refit_restored(&engine.config);
        engine.refit_probe();
        Ok(engine)
    }

    /// SHA-256 over the graph (in node and edge order, costs bit for bit), the corpus statistics,
    /// the label set, the retrieval index and the label spread: equal digests mean the engines
    /// hold the same state (the replicated state's digest adds the discovery pool:
    /// [`crate::state::State::digest`]). The confidence's outcomes are left out: like the
    /// embedding signal's vectors they are derived, and depend on the instance's ranking
    /// settings ([`super::refit`]).
    pub fn digest(&self) -> String {
        let mut hash = Sha256::new();
        let graph = self.graph.inner();
        hash.update((graph.node_count() as u64).to_le_bytes());
        for node in graph.node_weights() {
            match node {
                Node::Keyword(k) => {
                    hash.update(b"k");
                    hash_str(&mut hash, k);
                }
                Node::Label(l) => {
                    hash.update(b"l");
                    hash_str(&mut hash, l);
                }
                Node::Hub => hash.update(b"h"),
            }
        }
        hash.update((graph.edge_count() as u64).to_le_bytes());
        for edge in graph.edge_references() {
            hash.update((edge.source().index() as u64).to_le_bytes());
            hash.update((edge.target().index() as u64).to_le_bytes());
            hash.update(edge.weight().total.to_bits().to_le_bytes());
            hash.update(edge.weight().count.to_le_bytes());
        }
        hash.update(self.stats.documents.to_le_bytes());
        let mut df: Vec<(&String, &u64)> = self.stats.document_frequency.iter().collect();
        df.sort_unstable();
        for (phrase, count) in df {
            hash_str(&mut hash, phrase);
            hash.update(count.to_le_bytes());
        }
        for label in self.labels.all() {
            hash_str(&mut hash, &label.id);
            hash_str(&mut hash, label.name.as_deref().unwrap_or("\u{0}"));
            hash_str(&mut hash, label.description.as_deref().unwrap_or("\u{0}"));
            hash.update([u8::from(label.active)]);
            hash.update(label.examples.to_le_bytes());
        }
        for doc in self.index.documents().alive() {
            hash.update([doc.kind as u8]);
            hash.update(doc.label.0.to_le_bytes());
            hash.update((doc.terms.counts.len() as u64).to_le_bytes());
            for (term, count) in &doc.terms.counts {
                hash_str(&mut hash, term);
                hash.update(count.to_le_bytes());
            }
            hash_str(&mut hash, doc.text.as_deref().unwrap_or("\u{0}"));
        }
        hash.update(self.labels.version().to_le_bytes());
        hash_str(&mut hash, self.labels.last_round().unwrap_or("\u{0}"));
        let spread = self.index.weights().learned_state();
        for part in [&spread.folded, &spread.pending] {
            hash.update((part.len() as u64).to_le_bytes());
            for (term, labels) in part {
                hash_str(&mut hash, term);
                hash.update((labels.len() as u64).to_le_bytes());
                for label in labels {
                    hash.update(label.0.to_le_bytes());
                }
            }
        }
        hash.update(spread.folded_texts.to_le_bytes());
        hash.update(spread.pending_texts.to_le_bytes());
        let bytes = hash.finalize();
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

pub(crate) fn hash_str(hash: &mut Sha256, text: &str) {
    hash.update((text.len() as u64).to_le_bytes());
    hash.update(text.as_bytes());
}
