//! The weighted keyword–label graph.
//!
//! Nodes are keywords, labels and one hub. A keyword→label edge means "this keyword appeared in
//! a text of this label"; its cost is the running mean of `1 − s` over those texts (paper eq. 5),
//! kept as `total / count` so a repeat sighting costs O(1).
//!
//! Label connectivity uses the reference code's **hub** (every label joined to one connector
//! node with a fixed cost) rather than the paper's label–label edges (eq. 7–8): the hub costs
//! O(labels) edges instead of O(labels²), and its cost never changes, whereas label–label
//! weights are means over keyword edges that would have to be recomputed after every update.
//! Either way the graph stays connected, so a Steiner tree always exists. The hub is never a
//! candidate. Nodes are never removed (retired labels are only marked inactive by the engine),
//! so node indices are stable.

use foldhash::HashMap;
use petgraph::graph::{EdgeIndex, NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};

mod keyword_nodes;
mod shared_keywords;

use keyword_nodes::KeywordNodes;
pub use shared_keywords::SharedKeywords;

/// The reference code's hub edge cost.
pub const HUB_EDGE_COST: f64 = 0.5;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Node {
    Keyword(String),
    Label(String),
    Hub,
}

/// Running mean of an edge's cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EdgeCost {
    pub total: f64,
    pub count: u32,
}

impl EdgeCost {
    pub fn single(cost: f64) -> Self {
        Self {
            total: cost,
            count: 1,
        }
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            1.0
        } else {
            self.total / f64::from(self.count)
        }
    }
}

#[derive(Debug, Clone)]
pub struct KeywordGraph {
    graph: UnGraph<Node, EdgeCost>,
    /// The keyword nodes by phrase. Derived from `graph` (rebuilt on restore).
    keywords: KeywordNodes,
    labels: HashMap<String, NodeIndex>,
    hub: NodeIndex,
    /// Each label's edge to the hub.
    hub_edges: HashMap<NodeIndex, EdgeIndex>,
    /// Per label, its edges to keywords shared with other labels.
    shared: SharedKeywords,
    /// Each keyword→label edge by its (keyword, label) endpoints: a sighting finds its edge in
    /// O(1), where petgraph's `find_edge` walks the keyword's edges — thousands for a common
    /// word, which made a round of many labels quadratic. Derived from `graph` (rebuilt on
    /// restore, never persisted).
    label_edges: HashMap<(NodeIndex, NodeIndex), EdgeIndex>,
}

impl Default for KeywordGraph {
    fn default() -> Self {
        Self::new()
    }
}

impl KeywordGraph {
    pub fn new() -> Self {
        let mut graph = UnGraph::default();
        let hub = graph.add_node(Node::Hub);
        Self {
            graph,
            keywords: KeywordNodes::default(),
            labels: HashMap::default(),
            hub,
            hub_edges: HashMap::default(),
            shared: SharedKeywords::default(),
            label_edges: HashMap::default(),
        }
    }

    /// Reassemble a graph from its parts (see `saved.rs`); the caller keeps them consistent
    /// (no keyword twice among the nodes).
    pub(super) fn from_parts(
        graph: UnGraph<Node, EdgeCost>,
        labels: HashMap<String, NodeIndex>,
        hub: NodeIndex,
        hub_edges: HashMap<NodeIndex, EdgeIndex>,
        shared: HashMap<NodeIndex, Vec<(NodeIndex, EdgeIndex)>>,
    ) -> Self {
        let mut label_edges = HashMap::default();
        for edge in graph.edge_references() {
            let (a, b) = (edge.source(), edge.target());
            let pair = match (graph.node_weight(a), graph.node_weight(b)) {
                (Some(Node::Keyword(_)), Some(Node::Label(_))) => (a, b),
                (Some(Node::Label(_)), Some(Node::Keyword(_))) => (b, a),
                _ => continue,
            };
            // In edge order, so a pair joined twice keeps its newest edge, as `find_edge` would.
            label_edges.insert(pair, edge.id());
        }
        Self {
            keywords: KeywordNodes::of(&graph),
            graph,
            labels,
            hub,
            hub_edges,
            shared: SharedKeywords::from_lists(shared),
            label_edges,
        }
    }

    pub fn inner(&self) -> &UnGraph<Node, EdgeCost> {
        &self.graph
    }

    pub fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
    }

    pub fn keyword_count(&self) -> usize {
        self.keywords.len()
    }

    pub fn keyword(&self, phrase: &str) -> Option<NodeIndex> {
        let hash = self.keywords.hash(phrase);
        self.keywords.find(&self.graph, hash, phrase)
    }

    pub fn label(&self, id: &str) -> Option<NodeIndex> {
        self.labels.get(id).copied()
    }

    pub fn node(&self, index: NodeIndex) -> Option<&Node> {
        self.graph.node_weight(index)
    }

    /// The label's node, created (and joined to the hub) on first use.
    pub fn ensure_label(&mut self, id: &str) -> NodeIndex {
        if let Some(&index) = self.labels.get(id) {
            return index;
        }
        let index = self.graph.add_node(Node::Label(id.to_string()));
        let edge = self
            .graph
            .add_edge(index, self.hub, EdgeCost::single(HUB_EDGE_COST));
        self.labels.insert(id.to_string(), index);
        self.hub_edges.insert(index, edge);
        index
    }

    fn ensure_keyword(&mut self, phrase: &str) -> (NodeIndex, bool) {
        let hash = self.keywords.hash(phrase);
        if let Some(index) = self.keywords.find(&self.graph, hash, phrase) {
            return (index, false);
        }
        let index = self.graph.add_node(Node::Keyword(phrase.to_string()));
        self.keywords.insert(&self.graph, hash, index);
        (index, true)
    }

    /// Room for `keywords` more keyword nodes and keyword→label edges (a batch's, at most).
    pub fn reserve(&mut self, keywords: usize) {
        self.graph.reserve_nodes(keywords);
        self.graph.reserve_edges(keywords);
        self.keywords.reserve(&self.graph, keywords);
        self.label_edges.reserve(keywords);
    }

    /// Record one more sighting of `phrase` in a text of `label` with cost `1 − s`
    /// (labelled examples and descriptions: existing edges take part in the running mean).
    pub fn observe(&mut self, phrase: &str, label: &str, cost: f64) {
        let label_node = self.ensure_label(label);
        self.observe_at(phrase, label_node, cost);
    }

    /// [`Self::observe`] for a label node already at hand ([`Self::ensure_label`]): a text's
    /// keywords all go to one label.
    pub fn observe_at(&mut self, phrase: &str, label_node: NodeIndex, cost: f64) {
        let (keyword_node, _) = self.ensure_keyword(phrase);
        match self.label_edges.get(&(keyword_node, label_node)) {
            Some(&edge) => {
                if let Some(weight) = self.graph.edge_weight_mut(edge) {
                    weight.total += cost;
                    weight.count += 1;
                }
            }
            None => {
                let edge = self.link(keyword_node, label_node, cost);
                self.shared
                    .note(&self.graph, keyword_node, label_node, edge);
            }
        }
    }

    /// A new keyword→label edge.
    fn link(&mut self, keyword: NodeIndex, label: NodeIndex, cost: f64) -> EdgeIndex {
        let edge = self.graph.add_edge(keyword, label, EdgeCost::single(cost));
        self.label_edges.insert((keyword, label), edge);
        edge
    }

    pub fn hub_edge(&self, label: NodeIndex) -> Option<EdgeIndex> {
        self.hub_edges.get(&label).copied()
    }

    /// The labels' edges to keywords shared with other labels.
    pub fn shared_keywords(&self) -> &SharedKeywords {
        &self.shared
    }

    /// Online indexing: link `phrase` to `label` only if the phrase is not a node yet.
    /// Existing keywords and edges are left untouched. Returns whether a node was added.
    pub fn add_if_new(&mut self, phrase: &str, label: &str, cost: f64) -> bool {
        if self.keyword(phrase).is_some() {
            return false;
        }
        let label_node = self.ensure_label(label);
        let (keyword_node, _) = self.ensure_keyword(phrase);
        self.link(keyword_node, label_node, cost);
        true
    }

    /// Labels directly linked to a keyword node, with the edge's mean cost.
    pub fn labels_of(&self, keyword: NodeIndex) -> impl Iterator<Item = (&str, f64)> + '_ {
        self.graph.edges(keyword).filter_map(move |edge| {
            let other = if edge.source() == keyword {
                edge.target()
            } else {
                edge.source()
            };
            match self.graph.node_weight(other) {
                Some(Node::Label(id)) => Some((id.as_str(), edge.weight().mean())),
                _ => None,
            }
        })
    }

    /// Every keyword→label edge as (keyword, label, cost), for snapshots and digests.
    pub fn keyword_edges(&self) -> impl Iterator<Item = (&str, &str, EdgeCost)> + '_ {
        self.graph.edge_references().filter_map(|edge| {
            let (a, b) = (
                self.graph.node_weight(edge.source())?,
                self.graph.node_weight(edge.target())?,
            );
            match (a, b) {
                (Node::Keyword(k), Node::Label(l)) | (Node::Label(l), Node::Keyword(k)) => {
                    Some((k.as_str(), l.as_str(), *edge.weight()))
                }
                _ => None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::engine::saved::GraphState;

    #[test]
    fn repeated_sightings_average_the_cost() {
        let mut graph = KeywordGraph::new();
        graph.observe("graph", "ml", 0.9);
        graph.observe("graph", "ml", 0.7);
        let keyword = graph.keyword("graph").unwrap();
        let costs: Vec<_> = graph.labels_of(keyword).collect();
        assert_eq!(costs.len(), 1);
        assert!((costs[0].1 - 0.8).abs() < 1e-12);
        // hub + label + keyword; hub edge + keyword edge
        assert_eq!(graph.node_count(), 3);
        assert_eq!(graph.edge_count(), 2);
    }

    #[test]
    fn online_indexing_never_touches_existing_keywords() {
        let mut graph = KeywordGraph::new();
        graph.observe("graph", "ml", 0.9);
        assert!(!graph.add_if_new("graph", "db", 0.1));
        assert!(graph.label("db").is_none());
        assert!(graph.add_if_new("index", "db", 0.6));
        let keyword = graph.keyword("index").unwrap();
        let costs: Vec<_> = graph.labels_of(keyword).collect();
        assert_eq!(costs, vec![("db", 0.6)]);
    }

    #[test]
    fn shared_keywords_are_tracked_per_label() {
        let mut graph = KeywordGraph::new();
        graph.observe("solo", "a", 0.9);
        graph.observe("both", "a", 0.9);
        let a = graph.label("a").unwrap();
        assert!(graph.shared_keywords().of(a).is_empty());
        graph.observe("both", "b", 0.8);
        graph.observe("both", "b", 0.7); // a repeat adds no edge
        graph.observe("both", "c", 0.6);
        let both = graph.keyword("both").unwrap();
        for label in ["a", "b", "c"] {
            let node = graph.label(label).unwrap();
            let shared = graph.shared_keywords().of(node);
            assert_eq!(shared.len(), 1, "{label}");
            assert_eq!(shared[0].0, both);
            assert_eq!(
                graph.inner().edge_endpoints(shared[0].1),
                Some((both, node))
            );
        }
        assert!(graph.hub_edge(a).is_some());
    }

    #[test]
    fn every_label_hangs_off_the_hub() {
        let mut graph = KeywordGraph::new();
        let a = graph.ensure_label("a");
        let b = graph.ensure_label("b");
        assert_eq!(graph.ensure_label("a"), a);
        assert_eq!(graph.edge_count(), 2);
        assert!(graph.inner().find_edge(a, graph.hub).is_some());
        assert!(graph.inner().find_edge(b, graph.hub).is_some());
    }

    /// Per label node, its shared (keyword, edge) pairs by index.
    type SharedLists = BTreeMap<usize, Vec<(usize, usize)>>;

    fn shared_as_kept(graph: &KeywordGraph) -> SharedLists {
        graph
            .shared_keywords()
            .lists()
            .map(|(label, list)| {
                let pairs = list.iter().map(|(k, e)| (k.index(), e.index())).collect();
                (label.index(), pairs)
            })
            .collect()
    }

    /// What `shared` must hold, recomputed from the graph alone: per label, its edges to
    /// keywords with two or more labels, in the order each became shared for it — when its own
    /// edge came or when the keyword's second edge came, whichever is later (edge indices are
    /// the order edges came in: nothing is ever removed).
    fn shared_from_scratch(graph: &KeywordGraph) -> SharedLists {
        let inner = graph.inner();
        let mut found: BTreeMap<usize, Vec<(usize, usize, usize)>> = BTreeMap::new();
        for keyword in inner.node_indices() {
            if !matches!(inner[keyword], Node::Keyword(_)) {
                continue;
            }
            let mut edges: Vec<(usize, usize)> = inner
                .edges(keyword)
                .map(|e| {
                    let label = if e.source() == keyword {
                        e.target()
                    } else {
                        e.source()
                    };
                    (e.id().index(), label.index())
                })
                .collect();
            if edges.len() < 2 {
                continue;
            }
            edges.sort_unstable();
            let became_shared = edges[1].0;
            for (edge, label) in edges {
                let entry = (edge.max(became_shared), keyword.index(), edge);
                found.entry(label).or_default().push(entry);
            }
        }
        found
            .into_iter()
            .map(|(label, mut list)| {
                list.sort_unstable();
                (label, list.into_iter().map(|(_, k, e)| (k, e)).collect())
            })
            .collect()
    }

    #[derive(Debug, Clone)]
    enum Step {
        Observe(usize, usize, f64),
        AddIfNew(usize, usize, f64),
    }

    fn step() -> impl Strategy<Value = Step> {
        let parts = || (0..10usize, 0..6usize, 0.0..1.0f64);
        prop_oneof![
            4 => parts().prop_map(|(k, l, c)| Step::Observe(k, l, c)),
            1 => parts().prop_map(|(k, l, c)| Step::AddIfNew(k, l, c)),
        ]
    }

    fn take(graph: &mut KeywordGraph, step: &Step) {
        match *step {
            Step::Observe(k, l, cost) => graph.observe(&format!("k{k}"), &format!("l{l}"), cost),
            Step::AddIfNew(k, l, cost) => {
                graph.add_if_new(&format!("k{k}"), &format!("l{l}"), cost);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The incremental bookkeeping (`shared`, the edge lookup) against recomputations: the
        /// shared lists from the graph alone, each pair's cost from the steps alone; and a graph
        /// restored from its state part way keeps on as the uninterrupted one.
        #[test]
        fn incremental_bookkeeping_equals_a_recomputation(
            steps in proptest::collection::vec(step(), 0..80),
            restart_at in 0usize..80,
        ) {
            let mut graph = KeywordGraph::new();
            let mut restarted = KeywordGraph::new();
            let mut costs: BTreeMap<(String, String), EdgeCost> = BTreeMap::new();
            let mut seen: std::collections::BTreeSet<usize> = Default::default();
            for (i, step) in steps.iter().enumerate() {
                if i == restart_at {
                    restarted = GraphState::of(&restarted).restore().unwrap();
                }
                take(&mut graph, step);
                take(&mut restarted, step);
                match *step {
                    Step::Observe(k, l, cost) => {
                        let pair = (format!("k{k}"), format!("l{l}"));
                        let entry = costs.entry(pair).or_insert(EdgeCost { total: 0.0, count: 0 });
                        entry.total += cost;
                        entry.count += 1;
                        seen.insert(k);
                    }
                    Step::AddIfNew(k, l, cost) => {
                        if seen.insert(k) {
                            costs.insert((format!("k{k}"), format!("l{l}")), EdgeCost::single(cost));
                        }
                    }
                }
                prop_assert_eq!(shared_as_kept(&graph), shared_from_scratch(&graph));
            }
            let edges: BTreeMap<(String, String), EdgeCost> = graph
                .keyword_edges()
                .map(|(k, l, cost)| ((k.to_string(), l.to_string()), cost))
                .collect();
            prop_assert_eq!(&edges, &costs);
            prop_assert_eq!(graph.label_edges.len(), graph.keyword_edges().count());
            for (&(keyword, label), &edge) in &graph.label_edges {
                prop_assert_eq!(graph.inner().find_edge(keyword, label), Some(edge));
            }
            prop_assert_eq!(GraphState::of(&graph), GraphState::of(&restarted));
            prop_assert_eq!(&graph.label_edges, &restarted.label_edges);
        }
    }
}
