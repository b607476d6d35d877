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
    expand: impl FnMut(NodeIndex<Ix>, &mut Vec<EdgeIndex<Ix>>),
) -> Result<SteinerTree<Ix>, SteinerError> {
    let unique = distinct_terminals(graph, terminals)?;
    if unique.len() < 2 {
        return Ok(SteinerTree {
            nodes: unique,
            edges: vec![],
            cost: 0.0,
        });
    }
    let (chosen, regions) = connect_terminals(graph, &unique, &cost, expand)?;
    let paths = expand_to_paths(graph, &chosen, &regions);
    prune(spanning_tree(graph, paths, &cost), &unique)
}

/// The terminals without repeats, in their first order; an unknown node is an error.
fn distinct_terminals<N, E, Ix: IndexType>(
    graph: &UnGraph<N, E, Ix>,
    terminals: &[NodeIndex<Ix>],
) -> Result<Vec<NodeIndex<Ix>>, SteinerError> {
    let mut unique: Vec<NodeIndex<Ix>> = Vec::with_capacity(terminals.len());
    for &t in terminals {
        if graph.node_weight(t).is_none() {
            return Err(SteinerError::UnknownTerminal(NodeIndex::new(t.index())));
        }
        if !unique.contains(&t) {
            unique.push(t);
        }
    }
    Ok(unique)
}

/// Steps 1–3, interleaved: grow the regions and hand boundary edges to Kruskal as soon as they
/// are final, until the terminals are connected. Returns the chosen boundary edges and the
/// regions (whose marks lead every reached node back to its terminal).
fn connect_terminals<N, E, Ix: IndexType>(
    graph: &UnGraph<N, E, Ix>,
    unique: &[NodeIndex<Ix>],
    cost: &impl Fn(&E) -> f64,
    mut expand: impl FnMut(NodeIndex<Ix>, &mut Vec<EdgeIndex<Ix>>),
) -> Result<(Vec<EdgeIndex<Ix>>, Regions<Ix>), SteinerError> {
    let mut regions = Regions::grow_from(unique);
    let mut tree = TerminalTree::new(unique.len());
    let mut next_edges: Vec<EdgeIndex<Ix>> = Vec::new();
    while let Some(settled) = regions.settle_next() {
        next_edges.clear();
        expand(NodeIndex::new(settled.node), &mut next_edges);
        regions.relax(graph, &settled, &next_edges, cost, &mut tree.boundary)?;
        tree.accept_up_to(settled.distance, graph, &regions);
        if tree.components == 1 {
            return Ok((tree.chosen, regions));
        }
    }
    // Search exhausted: every remaining boundary edge is final.
    tree.accept_up_to(f64::INFINITY, graph, &regions);
    if tree.components > 1 {
        return Err(SteinerError::Disconnected {
            components: tree.components,
        });
    }
    Ok((tree.chosen, regions))
}

/// A node the search has just settled: its distance to its nearest terminal and that
/// terminal's region.
struct Settled {
    node: usize,
    distance: f64,
    region: u32,
}

/// Steps 1–2: a multi-source Dijkstra from the terminals. Sparse per-node marks: the search
/// stops early and touches a small part of a large graph, so dense arrays of the graph's size
/// would cost more to clear than the search itself.
struct Regions<Ix: IndexType> {
    marks: HashMap<usize, Mark<Ix>>,
    frontier: BinaryHeap<Reverse<(Cost, usize)>>,
}

impl<Ix: IndexType> Regions<Ix> {
    fn grow_from(terminals: &[NodeIndex<Ix>]) -> Self {
        let mut marks = HashMap::new();
        let mut frontier = BinaryHeap::new();
        for (i, t) in terminals.iter().enumerate() {
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
        Self { marks, frontier }
    }

    /// The nearest unsettled node, now settled; `None` once everything reachable is.
    fn settle_next(&mut self) -> Option<Settled> {
        while let Some(Reverse((Cost(d), u))) = self.frontier.pop() {
            let Some(mark) = self.marks.get_mut(&u) else {
                continue;
            };
            if mark.settled || d > mark.distance {
                continue;
            }
            mark.settled = true;
            return Some(Settled {
                node: u,
                distance: mark.distance,
                region: mark.region,
            });
        }
        None
    }

    /// Follow `edges` out of the settled node: shorten its neighbours' distances, and push an
    /// edge into a settled node of another region onto Kruskal's `boundary` at the cost of the
    /// terminal–terminal edge it stands for.
    fn relax<N, E>(
        &mut self,
        graph: &UnGraph<N, E, Ix>,
        from: &Settled,
        edges: &[EdgeIndex<Ix>],
        cost: &impl Fn(&E) -> f64,
        boundary: &mut BinaryHeap<Reverse<(Cost, usize)>>,
    ) -> Result<(), SteinerError> {
        for &edge in edges {
            let (Some(weight), Some((a, b))) =
                (graph.edge_weight(edge), graph.edge_endpoints(edge))
            else {
                continue;
            };
            let w = cost(weight);
            if w.is_nan() || w < 0.0 {
                return Err(SteinerError::BadCost(w));
            }
            let x = if a.index() == from.node { b } else { a }.index();
            let mark = self.marks.entry(x).or_insert(Mark::UNREACHED);
            if mark.settled {
                if mark.region != from.region {
                    let through = from.distance + w + mark.distance;
                    boundary.push(Reverse((Cost(through), edge.index())));
                }
            } else if from.distance + w < mark.distance {
                mark.distance = from.distance + w;
                mark.region = from.region;
                mark.via = Some(edge);
                self.frontier.push(Reverse((Cost(from.distance + w), x)));
            }
        }
        Ok(())
    }

    fn region(&self, node: usize) -> usize {
        self.marks.get(&node).map_or(NO_REGION, |m| m.region) as usize
    }

    /// The search's path from `node` back to its terminal, edge by edge.
    fn path_home<'g, N, E>(
        &'g self,
        graph: &'g UnGraph<N, E, Ix>,
        node: usize,
    ) -> impl Iterator<Item = EdgeIndex<Ix>> + 'g {
        let mut at = node;
        std::iter::from_fn(move || {
            let step = self.marks.get(&at).and_then(|m| m.via)?;
            let (a, b) = graph.edge_endpoints(step)?;
            at = if a.index() == at {
                b.index()
            } else {
                a.index()
            };
            Some(step)
        })
    }
}

/// Step 3: Kruskal over the boundary edges, taken in cost order as the search makes them final.
struct TerminalTree<Ix: IndexType> {
    /// Boundary edges waiting for Kruskal: (terminal-graph cost, edge).
    boundary: BinaryHeap<Reverse<(Cost, usize)>>,
    joined: DisjointSets,
    components: usize,
    chosen: Vec<EdgeIndex<Ix>>,
}

impl<Ix: IndexType> TerminalTree<Ix> {
    fn new(terminals: usize) -> Self {
        Self {
            boundary: BinaryHeap::new(),
            joined: DisjointSets::new(terminals),
            components: terminals,
            chosen: Vec::new(),
        }
    }

    /// Take every waiting boundary edge costing at most `limit` that joins two components.
    fn accept_up_to<N, E>(&mut self, limit: f64, graph: &UnGraph<N, E, Ix>, regions: &Regions<Ix>) {
        while self.components > 1 {
            match self.boundary.peek() {
                Some(Reverse((Cost(c), _))) if *c <= limit => {}
                _ => break,
            }
            let Some(Reverse((_, edge))) = self.boundary.pop() else {
                break;
            };
            let edge = EdgeIndex::new(edge);
            let Some((u, v)) = graph.edge_endpoints(edge) else {
                continue;
            };
            if self
                .joined
                .union(regions.region(u.index()), regions.region(v.index()))
            {
                self.components -= 1;
                self.chosen.push(edge);
            }
        }
    }
}

/// Step 4a: each chosen boundary edge with the search paths from both its ends to their
/// terminals — the real edges the terminal tree stands for.
fn expand_to_paths<N, E, Ix: IndexType>(
    graph: &UnGraph<N, E, Ix>,
    chosen: &[EdgeIndex<Ix>],
    regions: &Regions<Ix>,
) -> HashSet<EdgeIndex<Ix>> {
    let mut union: HashSet<EdgeIndex<Ix>> = HashSet::new();
    for &edge in chosen {
        union.insert(edge);
        if let Some((u, v)) = graph.edge_endpoints(edge) {
            for end in [u, v] {
                union.extend(regions.path_home(graph, end.index()));
            }
        }
    }
    union
}

/// Step 4b: a minimum spanning forest of `edges` (Kruskal; equal costs by edge index), each
/// edge with its cost and end nodes.
fn spanning_tree<N, E, Ix: IndexType>(
    graph: &UnGraph<N, E, Ix>,
    edges: HashSet<EdgeIndex<Ix>>,
    cost: &impl Fn(&E) -> f64,
) -> Vec<(f64, EdgeIndex<Ix>, usize, usize)> {
    let mut edges: Vec<(f64, EdgeIndex<Ix>)> = edges
        .into_iter()
        .filter_map(|e| graph.edge_weight(e).map(|w| (cost(w), e)))
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut slot: HashMap<usize, usize> = HashMap::new();
    let mut index_of = |n: usize| {
        let next = slot.len();
        *slot.entry(n).or_insert(next)
    };
    let mut spanning = Vec::new();
    let mut sets = DisjointSets::new(2 * edges.len() + 1);
    for (w, e) in edges {
        if let Some((a, b)) = graph.edge_endpoints(e) {
            let (ia, ib) = (index_of(a.index()), index_of(b.index()));
            if sets.union(ia, ib) {
                spanning.push((w, e, a.index(), b.index()));
            }
        }
    }
    spanning
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
