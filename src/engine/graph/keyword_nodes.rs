//! The keyword nodes by phrase, each phrase read from its node: one copy of a keyword, not a
//! second one as a map's key (a round of 50,000 labels adds over two million keywords).

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use petgraph::graph::{NodeIndex, UnGraph};
use std::hash::BuildHasher;

use super::{EdgeCost, Node};

#[derive(Debug, Clone, Default)]
pub(super) struct KeywordNodes {
    table: HashTable<NodeIndex>,
    hasher: RandomState,
}

/// The phrase of a keyword node (None for a label, the hub, or no node).
fn phrase_of(graph: &UnGraph<Node, EdgeCost>, node: NodeIndex) -> Option<&str> {
    match graph.node_weight(node) {
        Some(Node::Keyword(phrase)) => Some(phrase),
        _ => None,
    }
}

impl KeywordNodes {
    /// Every keyword node of `graph`.
    pub(super) fn of(graph: &UnGraph<Node, EdgeCost>) -> Self {
        let mut nodes = Self::default();
        for node in graph.node_indices() {
            if let Some(phrase) = phrase_of(graph, node) {
                let hash = nodes.hasher.hash_one(phrase);
                nodes.insert(graph, hash, node);
            }
        }
        nodes
    }

    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    pub(super) fn hash(&self, phrase: &str) -> u64 {
        self.hasher.hash_one(phrase)
    }

    /// The node of `phrase`, whose [`Self::hash`] is `hash`.
    pub(super) fn find(
        &self,
        graph: &UnGraph<Node, EdgeCost>,
        hash: u64,
        phrase: &str,
    ) -> Option<NodeIndex> {
        self.table
            .find(hash, |&node| phrase_of(graph, node) == Some(phrase))
            .copied()
    }

    /// A new keyword node of `graph` (not in the table yet), whose phrase's hash is `hash`.
    pub(super) fn insert(&mut self, graph: &UnGraph<Node, EdgeCost>, hash: u64, node: NodeIndex) {
        let hasher = &self.hasher;
        self.table.insert_unique(hash, node, |&other| {
            hasher.hash_one(phrase_of(graph, other).unwrap_or_default())
        });
    }

    pub(super) fn reserve(&mut self, graph: &UnGraph<Node, EdgeCost>, additional: usize) {
        let hasher = &self.hasher;
        self.table.reserve(additional, |&other| {
            hasher.hash_one(phrase_of(graph, other).unwrap_or_default())
        });
    }
}
