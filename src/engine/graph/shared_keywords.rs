//! Per label, its edges to keywords linked to two or more labels: the only keywords that can
//! relay between labels, kept so a Steiner search need not walk a label's many leaf keywords.

use foldhash::HashMap;
use petgraph::graph::{EdgeIndex, NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;

use super::{EdgeCost, Node};

/// Every label's list of its edges to shared keywords, as (keyword, edge) pairs in the order
/// they became shared.
#[derive(Debug, Clone, Default)]
pub struct SharedKeywords {
    lists: HashMap<NodeIndex, Vec<(NodeIndex, EdgeIndex)>>,
}

impl SharedKeywords {
    /// The lists as saved (see `saved.rs`); the caller keeps them consistent with the graph.
    pub(in crate::engine) fn from_lists(
        lists: HashMap<NodeIndex, Vec<(NodeIndex, EdgeIndex)>>,
    ) -> Self {
        Self { lists }
    }

    /// `label`'s edges to keywords shared with other labels.
    pub fn of(&self, label: NodeIndex) -> &[(NodeIndex, EdgeIndex)] {
        self.lists.get(&label).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every label's list, in no order (a snapshot sorts them).
    pub(in crate::engine) fn lists(
        &self,
    ) -> impl Iterator<Item = (NodeIndex, &Vec<(NodeIndex, EdgeIndex)>)> {
        self.lists.iter().map(|(label, list)| (*label, list))
    }

    /// Keep the lists up to date after `edge` joined `keyword` to `label` in `graph`: what
    /// happens depends only on whether the keyword had no other label, one, or more, so at most
    /// two of its other edges are read. The new edge heads the keyword's edge list (petgraph
    /// prepends), so this is O(1) however many labels share the keyword.
    pub(super) fn note(
        &mut self,
        graph: &UnGraph<Node, EdgeCost>,
        keyword: NodeIndex,
        label: NodeIndex,
        edge: EdgeIndex,
    ) {
        let mut others = graph.edges(keyword).filter(|e| e.id() != edge).map(|e| {
            (
                if e.source() == keyword {
                    e.target()
                } else {
                    e.source()
                },
                e.id(),
            )
        });
        match (others.next(), others.next()) {
            (None, _) => {}
            // The keyword just became shared: both labels learn of it.
            (Some((other_label, other_edge)), None) => {
                self.lists
                    .entry(other_label)
                    .or_default()
                    .push((keyword, other_edge));
                self.lists.entry(label).or_default().push((keyword, edge));
            }
            (Some(_), Some(_)) => self.lists.entry(label).or_default().push((keyword, edge)),
        }
    }
}
