//! Retrieval over the keyword graph alone: the Steiner tree joining a text's terminals (the
//! paper's candidate labels), the labels next to them when no tree reaches a label, and the
//! graph-only choice among candidates (the strongest keyword ties).

use std::collections::{HashMap, HashSet};

use petgraph::graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;

use super::graph::{self, KeywordGraph, Node};
use super::keywords::Keyword;
use super::steiner;
use super::{Basis, Labels};

/// The keyword graph and the label set, as retrieval reads them ([`super::Retriever`]);
/// changes nothing.
#[derive(Clone, Copy)]
pub(super) struct GraphWalk<'e> {
    pub(super) labels: &'e Labels,
    pub(super) graph: &'e KeywordGraph,
    /// Every edge costs 1 (the `unit_costs` ablation), not its mean cost.
    pub(super) unit_costs: bool,
}

impl GraphWalk<'_> {
    fn edge_cost(&self, cost: &graph::EdgeCost) -> f64 {
        if self.unit_costs {
            1.0
        } else {
            cost.mean()
        }
    }

    /// Active labels linked directly to any terminal.
    fn terminal_neighbours(&self, terminals: &[(&Keyword, NodeIndex)]) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut labels = Vec::new();
        for (_, node) in terminals {
            for (label, _) in self.graph.labels_of(*node) {
                if self.labels.is_active(label) && seen.insert(label) {
                    labels.push(label.to_string());
                }
            }
        }
        labels
    }

    pub(super) fn steiner_candidates(
        &self,
        terminals: &[(&Keyword, NodeIndex)],
    ) -> (Vec<String>, Basis, Option<f64>) {
        let fallback_to_neighbours = |basis: Basis, cost: Option<f64>| {
            let neighbours = self.terminal_neighbours(terminals);
            if neighbours.is_empty() {
                (self.labels.active_ids(), Basis::NoEvidence, cost)
            } else {
                (neighbours, basis, cost)
            }
        };
        match terminals.len() {
            0 => (self.labels.active_ids(), Basis::NoEvidence, None),
            1 => fallback_to_neighbours(Basis::SingleTerminal, None),
            _ => {
                let nodes: Vec<_> = terminals.iter().map(|(_, n)| *n).collect();
                let expand = self.search_edges(&nodes);
                match steiner::mehlhorn(self.graph.inner(), &nodes, |c| self.edge_cost(c), expand) {
                    Ok(tree) => {
                        let labels: Vec<String> = tree
                            .nodes
                            .iter()
                            .filter_map(|&n| match self.graph.node(n) {
                                Some(Node::Label(id)) if self.labels.is_active(id) => {
                                    Some(id.clone())
                                }
                                _ => None,
                            })
                            .collect();
                        if labels.is_empty() {
                            fallback_to_neighbours(Basis::TerminalNeighbours, Some(tree.cost))
                        } else {
                            (labels, Basis::SteinerTree, Some(tree.cost))
                        }
                    }
                    // Cannot happen while the hub joins every label; if the graph is ever
                    // split, the terminals' own labels are the honest answer.
                    Err(_) => fallback_to_neighbours(Basis::TerminalNeighbours, None),
                }
            }
        }
    }

    /// The edges the Steiner search follows. Keywords and the hub: all of theirs. Labels: the
    /// hub edge, edges to this query's terminals, and edges to shared keywords that can relay
    /// (see [`GraphWalk::relays`]) — never the label's many leaf keywords, which lie on no shortest
    /// path. Keywords are reached only through labels, so both ends of an edge agree on it.
    fn search_edges(
        &self,
        terminals: &[NodeIndex],
    ) -> impl FnMut(NodeIndex, &mut Vec<EdgeIndex>) + '_ {
        let terminal_set: HashSet<NodeIndex> = terminals.iter().copied().collect();
        let mut terminal_edges: HashMap<NodeIndex, Vec<EdgeIndex>> = HashMap::new();
        for &terminal in terminals {
            for edge in self.graph.inner().edges(terminal) {
                let label = if edge.source() == terminal {
                    edge.target()
                } else {
                    edge.source()
                };
                terminal_edges.entry(label).or_default().push(edge.id());
            }
        }
        move |node, out| match self.graph.node(node) {
            Some(Node::Label(_)) => {
                out.extend(self.graph.hub_edge(node));
                if let Some(edges) = terminal_edges.get(&node) {
                    out.extend(edges);
                }
                for &(keyword, edge) in self.graph.shared_keywords().of(node) {
                    if !terminal_set.contains(&keyword) && self.relays(keyword) {
                        out.push(edge);
                    }
                }
            }
            _ => out.extend(self.graph.inner().edges(node).map(|e| e.id())),
        }
    }

    /// Whether a non-terminal node can lie on a shortest path. Labels and the hub always can. A
    /// keyword joins labels only, so it is useful only when its two cheapest edges cost less
    /// than the path through the hub; otherwise it is a dominated Steiner node: skipping it
    /// changes no distance and no terminal-graph MST weight. Most keywords link to one label and
    /// are skipped at once, which keeps the search off the bulk of the graph.
    fn relays(&self, node: NodeIndex) -> bool {
        if !matches!(self.graph.node(node), Some(Node::Keyword(_))) {
            return true;
        }
        let hub_path = 2.0 * self.edge_cost(&graph::EdgeCost::single(graph::HUB_EDGE_COST));
        let (mut best, mut second) = (f64::INFINITY, f64::INFINITY);
        for (_, cost) in self.graph.labels_of(node) {
            let cost = if self.unit_costs { 1.0 } else { cost };
            if cost < best {
                second = best;
                best = cost;
            } else if cost < second {
                second = cost;
            }
        }
        best + second < hub_path
    }

    /// The graph-only prediction: among the candidates, the label most strongly tied to the
    /// text's keywords, Σ over linked terminals of s_text · (1 − edge cost); ties → more linked
    /// terminals → earlier label.
    pub(super) fn best_connected(
        &self,
        candidates: &[String],
        terminals: &[(&Keyword, NodeIndex)],
    ) -> String {
        let mut strength: HashMap<&str, (f64, usize)> = HashMap::new();
        for (keyword, node) in terminals {
            for (label, cost) in self.graph.labels_of(*node) {
                let entry = strength.entry(label).or_insert((0.0, 0));
                entry.0 += keyword.score * (1.0 - cost);
                entry.1 += 1;
            }
        }
        let mut best: Option<(&String, (f64, usize))> = None;
        for candidate in candidates {
            let score = strength
                .get(candidate.as_str())
                .copied()
                .unwrap_or((0.0, 0));
            let better = match best {
                None => true,
                Some((_, (s, n))) => score.0 > s || (score.0 == s && score.1 > n),
            };
            if better {
                best = Some((candidate, score));
            }
        }
        best.map(|(id, _)| id.clone())
            .or_else(|| candidates.first().cloned())
            .unwrap_or_default()
    }
}
