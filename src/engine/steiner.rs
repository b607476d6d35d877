//! Mehlhorn's 2-approximation of the minimum Steiner tree (the algorithm behind networkx's
//! default `approximation.steiner_tree`, which the reference code calls).
//!
//! 1. Multi-source Dijkstra from all terminals: every reached node learns its nearest terminal
//!    (its Voronoi region) and its distance `d`.
//! 2. An edge (u, v) between two regions stands for a terminal–terminal edge of cost
//!    `d(u) + w(u, v) + d(v)`.
//! 3. A minimum spanning tree of those terminal edges (Kruskal).
//! 4. Each chosen terminal edge is expanded into its real path; a minimum spanning tree of the
//!    union is taken and non-terminal leaves are pruned until none is left.
//!
//! Steps 1–3 are interleaved so the search stops as soon as the terminals are connected: once
//! every node at distance ≤ D is settled, any boundary edge not yet seen has an unsettled end,
//! so it costs at least D; boundary edges costing ≤ D can therefore be handed to Kruskal in
//! order. On the GORAG graph this keeps the search inside a small ball around the query's
//! keywords instead of visiting all ~45k nodes.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet};

use petgraph::graph::{DefaultIx, EdgeIndex, IndexType, NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum SteinerError {
    #[error("terminals lie in {components} disconnected parts of the graph")]
    Disconnected { components: usize },
    #[error("terminal {0:?} is not a node of the graph")]
    UnknownTerminal(NodeIndex),
    #[error("edge cost {0} is negative or not a number")]
    BadCost(f64),
}

/// A total order on costs so they can live in a heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cost(f64);
impl Eq for Cost {}
impl PartialOrd for Cost {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Cost {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

struct DisjointSets {
    parent: Vec<usize>,
}

impl DisjointSets {
    fn new(size: usize) -> Self {
        Self {
            parent: (0..size).collect(),
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    /// Joins the sets of `a` and `b`; false when they were already one.
    fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        self.parent[ra] = rb;
        true
    }
}

const NO_REGION: u32 = u32::MAX;

/// The edges a search may follow from a node: every incident edge.
pub fn all_edges<N, E, Ix: IndexType>(
    graph: &UnGraph<N, E, Ix>,
) -> impl FnMut(NodeIndex<Ix>, &mut Vec<EdgeIndex<Ix>>) + '_ {
    move |node, out| out.extend(graph.edges(node).map(|e| e.id()))
}

/// What the search knows of one node.
#[derive(Clone, Copy)]
struct Mark<Ix: IndexType> {
    distance: f64,
    region: u32,
    via: Option<EdgeIndex<Ix>>,
    settled: bool,
}

impl<Ix: IndexType> Mark<Ix> {
    const UNREACHED: Self = Self {
        distance: f64::INFINITY,
        region: NO_REGION,
        via: None,
        settled: false,
    };
}

/// Approximate minimum Steiner tree spanning `terminals`; `cost` gives each edge's
/// non-negative cost. `expand(node, out)` pushes the edges the search may follow from `node`:
/// [`all_edges`] for the plain algorithm; a caller that knows some non-terminal nodes can lie on
/// no shortest path (dominated nodes) may leave their edges out — consistently from both ends —
/// which saves time and changes no distance. 0 terminals → an empty tree, 1 → that node alone.
pub fn mehlhorn<N, E, Ix: IndexType>(
    graph: &UnGraph<N, E, Ix>,
    terminals: &[NodeIndex<Ix>],
    cost: impl Fn(&E) -> f64,
    mut expand: impl FnMut(NodeIndex<Ix>, &mut Vec<EdgeIndex<Ix>>),
) -> Result<SteinerTree<Ix>, SteinerError> {
    let mut unique: Vec<NodeIndex<Ix>> = Vec::with_capacity(terminals.len());
    for &t in terminals {
        if graph.node_weight(t).is_none() {
            return Err(SteinerError::UnknownTerminal(NodeIndex::new(t.index())));
        }
        if !unique.contains(&t) {
            unique.push(t);
        }
    }
    match unique.len() {
        0 => {
            return Ok(SteinerTree {
                nodes: vec![],
                edges: vec![],
                cost: 0.0,
            })
        }
        1 => {
            return Ok(SteinerTree {
                nodes: unique,
                edges: vec![],
                cost: 0.0,
            })
        }
        _ => {}
    }

    // Sparse per-node marks: the search stops early and touches a small part of a large graph,
    // so dense arrays of the graph's size would cost more to clear than the search itself.
    let mut marks: HashMap<usize, Mark<Ix>> = HashMap::new();
    let mut frontier: BinaryHeap<Reverse<(Cost, usize)>> = BinaryHeap::new();
    for (i, t) in unique.iter().enumerate() {
        marks.insert(
            t.index(),
            Mark {
                distance: 0.0,
                region: i as u32,
                via: None,
                settled: false,
            },
        );
        frontier.push(Reverse((Cost(0.0), t.index())));
    }

    // Boundary edges waiting for Kruskal: (terminal-graph cost, edge).
    let mut boundary: BinaryHeap<Reverse<(Cost, usize)>> = BinaryHeap::new();
    let mut regions = DisjointSets::new(unique.len());
    let mut components = unique.len();
    let mut chosen: Vec<EdgeIndex<Ix>> = Vec::new();

    let mut accept_up_to = |limit: f64,
                            boundary: &mut BinaryHeap<Reverse<(Cost, usize)>>,
                            marks: &HashMap<usize, Mark<Ix>>,
                            components: &mut usize,
                            chosen: &mut Vec<EdgeIndex<Ix>>| {
        while *components > 1 {
            match boundary.peek() {
                Some(Reverse((Cost(c), _))) if *c <= limit => {}
                _ => break,
            }
            let Some(Reverse((_, edge))) = boundary.pop() else {
                break;
            };
            let edge = EdgeIndex::new(edge);
            let Some((u, v)) = graph.edge_endpoints(edge) else {
                continue;
            };
            let region = |n: usize| marks.get(&n).map_or(NO_REGION, |m| m.region) as usize;
            let (ru, rv) = (region(u.index()), region(v.index()));
            if regions.union(ru, rv) {
                *components -= 1;
                chosen.push(edge);
            }
        }
    };

    let mut next_edges: Vec<EdgeIndex<Ix>> = Vec::new();
    while let Some(Reverse((Cost(d), u))) = frontier.pop() {
        let Some(mark) = marks.get_mut(&u) else {
            continue;
        };
        if mark.settled || d > mark.distance {
            continue;
        }
        mark.settled = true;
        let (distance_u, region_u) = (mark.distance, mark.region);
        let node = NodeIndex::<Ix>::new(u);
        next_edges.clear();
        expand(node, &mut next_edges);
        for &edge in &next_edges {
            let (Some(weight), Some((a, b))) =
                (graph.edge_weight(edge), graph.edge_endpoints(edge))
            else {
                continue;
            };
            let w = cost(weight);
            if w.is_nan() || w < 0.0 {
                return Err(SteinerError::BadCost(w));
            }
            let x = if a == node { b } else { a }.index();
            let mark = marks.entry(x).or_insert(Mark::UNREACHED);
            if mark.settled {
                if mark.region != region_u {
                    let through = distance_u + w + mark.distance;
                    boundary.push(Reverse((Cost(through), edge.index())));
                }
            } else if d + w < mark.distance {
                mark.distance = d + w;
                mark.region = region_u;
                mark.via = Some(edge);
                frontier.push(Reverse((Cost(d + w), x)));
            }
        }
        accept_up_to(d, &mut boundary, &marks, &mut components, &mut chosen);
        if components == 1 {
            break;
        }
    }
    // Search exhausted: every remaining boundary edge is final.
    accept_up_to(
        f64::INFINITY,
        &mut boundary,
        &marks,
        &mut components,
        &mut chosen,
    );
    if components > 1 {
        return Err(SteinerError::Disconnected { components });
    }

    // Step 4: expand to real paths, take their MST, prune non-terminal leaves.
    let mut union: HashSet<EdgeIndex<Ix>> = HashSet::new();
    for &edge in &chosen {
        union.insert(edge);
        if let Some((u, v)) = graph.edge_endpoints(edge) {
            for end in [u, v] {
                let mut at = end.index();
                while let Some(step) = marks.get(&at).and_then(|m| m.via) {
                    union.insert(step);
                    let Some((a, b)) = graph.edge_endpoints(step) else {
                        break;
                    };
                    at = if a.index() == at {
                        b.index()
                    } else {
                        a.index()
                    };
                }
            }
        }
    }
    let mut edges: Vec<(f64, EdgeIndex<Ix>)> = union
        .into_iter()
        .filter_map(|e| graph.edge_weight(e).map(|w| (cost(w), e)))
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut slot: HashMap<usize, usize> = HashMap::new();
    let mut index_of = |n: usize| {
        let next = slot.len();
        *slot.entry(n).or_insert(next)
    };
    let mut spanning: Vec<(f64, EdgeIndex<Ix>, usize, usize)> = Vec::new();
    let mut sets = DisjointSets::new(2 * edges.len() + 1);
    for (w, e) in edges {
        if let Some((a, b)) = graph.edge_endpoints(e) {
            let (ia, ib) = (index_of(a.index()), index_of(b.index()));
            if sets.union(ia, ib) {
                spanning.push((w, e, a.index(), b.index()));
            }
        }
    }
    prune(spanning, &unique)
}

/// An approximate Steiner tree: its nodes (sorted), edges and total cost.
#[derive(Debug, Clone, PartialEq)]
pub struct SteinerTree<Ix: IndexType = DefaultIx> {
    pub nodes: Vec<NodeIndex<Ix>>,
    pub edges: Vec<EdgeIndex<Ix>>,
    pub cost: f64,
}

/// Remove non-terminal leaves until every leaf is a terminal.
fn prune<Ix: IndexType>(
    mut edges: Vec<(f64, EdgeIndex<Ix>, usize, usize)>,
    terminals: &[NodeIndex<Ix>],
) -> Result<SteinerTree<Ix>, SteinerError> {
    let terminal: HashSet<usize> = terminals.iter().map(|t| t.index()).collect();
    loop {
        let mut degree: HashMap<usize, usize> = HashMap::new();
        for &(_, _, a, b) in &edges {
            *degree.entry(a).or_insert(0) += 1;
            *degree.entry(b).or_insert(0) += 1;
        }
        let before = edges.len();
        edges.retain(|&(_, _, a, b)| {
            let leaf = |n: usize| degree.get(&n) == Some(&1) && !terminal.contains(&n);
            !(leaf(a) || leaf(b))
        });
        if edges.len() == before {
            break;
        }
    }
    let mut nodes: Vec<NodeIndex<Ix>> = edges
        .iter()
        .flat_map(|&(_, _, a, b)| [NodeIndex::new(a), NodeIndex::new(b)])
        .collect();
    nodes.sort();
    nodes.dedup();
    Ok(SteinerTree {
        cost: edges.iter().map(|e| e.0).sum(),
        edges: edges.iter().map(|e| e.1).collect(),
        nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(usize, usize, f64)]) -> UnGraph<(), f64> {
        let mut g = UnGraph::default();
        for _ in 0..n {
            g.add_node(());
        }
        for &(a, b, w) in edges {
            g.add_edge(NodeIndex::new(a), NodeIndex::new(b), w);
        }
        g
    }

    fn ids(nodes: &[NodeIndex]) -> Vec<usize> {
        nodes.iter().map(|n| n.index()).collect()
    }

    #[test]
    fn star_uses_the_centre() {
        // 0,1,2 terminals around centre 3; direct edges are expensive.
        let g = graph(
            4,
            &[
                (0, 3, 1.0),
                (1, 3, 1.0),
                (2, 3, 1.0),
                (0, 1, 5.0),
                (1, 2, 5.0),
            ],
        );
        let tree = mehlhorn(&g, &[0, 1, 2].map(NodeIndex::new), |w| *w, all_edges(&g)).unwrap();
        assert_eq!(ids(&tree.nodes), vec![0, 1, 2, 3]);
        assert!((tree.cost - 3.0).abs() < 1e-12);
    }

    #[test]
    fn dangling_non_terminals_are_pruned() {
        // path 0 - 1 - 2 with a spur 1 - 3; terminals 0 and 2.
        let g = graph(4, &[(0, 1, 1.0), (1, 2, 1.0), (1, 3, 0.1)]);
        let tree = mehlhorn(&g, &[0, 2].map(NodeIndex::new), |w| *w, all_edges(&g)).unwrap();
        assert_eq!(ids(&tree.nodes), vec![0, 1, 2]);
        assert_eq!(tree.edges.len(), 2);
    }

    #[test]
    fn edges_left_out_by_expand_are_never_followed() {
        // 0 - 2 - 1 is cheap but the edges into node 2 are left out: the search takes 0 - 3 - 1.
        let g = graph(4, &[(0, 2, 0.1), (2, 1, 0.1), (0, 3, 1.0), (3, 1, 1.0)]);
        let mut full = all_edges(&g);
        let skip_node_2 = |n: NodeIndex, out: &mut Vec<EdgeIndex>| {
            out.extend(
                g.edges(n)
                    .filter(|e| e.source().index() != 2 && e.target().index() != 2)
                    .map(|e| e.id()),
            )
        };
        let tree = mehlhorn(&g, &[0, 1].map(NodeIndex::new), |w| *w, skip_node_2).unwrap();
        assert_eq!(ids(&tree.nodes), vec![0, 1, 3]);
        let tree = mehlhorn(&g, &[0, 1].map(NodeIndex::new), |w| *w, &mut full).unwrap();
        assert_eq!(ids(&tree.nodes), vec![0, 1, 2]);
    }

    #[test]
    fn zero_and_one_terminal_are_trivial() {
        let g = graph(2, &[(0, 1, 1.0)]);
        let none = mehlhorn(&g, &[], |w| *w, all_edges(&g)).unwrap();
        assert!(none.nodes.is_empty());
        let one = mehlhorn(
            &g,
            &[NodeIndex::new(1), NodeIndex::new(1)],
            |w| *w,
            all_edges(&g),
        )
        .unwrap();
        assert_eq!(ids(&one.nodes), vec![1]);
        assert_eq!(one.cost, 0.0);
    }

    #[test]
    fn disconnected_terminals_are_an_error_not_a_guess() {
        let g = graph(4, &[(0, 1, 1.0), (2, 3, 1.0)]);
        let err = mehlhorn(&g, &[0, 2].map(NodeIndex::new), |w| *w, all_edges(&g)).unwrap_err();
        assert_eq!(err, SteinerError::Disconnected { components: 2 });
    }

    #[test]
    fn negative_costs_are_rejected() {
        let g = graph(2, &[(0, 1, -1.0)]);
        assert!(matches!(
            mehlhorn(&g, &[0, 1].map(NodeIndex::new), |w| *w, all_edges(&g)),
            Err(SteinerError::BadCost(_))
        ));
    }
}
