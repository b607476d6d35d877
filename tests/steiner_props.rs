//! Mehlhorn's Steiner tree against an exact optimum on small random graphs.
//!
//! Oracle: the minimum Steiner tree is the minimum spanning tree of the subgraph induced by
//! the terminals plus the best subset of non-terminals; with ≤ 9 nodes every subset is tried.

use std::collections::{HashSet, VecDeque};

use gorag::engine::steiner::{all_edges, mehlhorn};
use petgraph::graph::{NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use proptest::prelude::*;

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// Weight of the MST of the subgraph induced by `keep`, or None if it is disconnected.
fn induced_mst(n: usize, edges: &[(usize, usize, f64)], keep: &HashSet<usize>) -> Option<f64> {
    let mut usable: Vec<_> = edges
        .iter()
        .filter(|(a, b, _)| keep.contains(a) && keep.contains(b))
        .collect();
    usable.sort_by(|x, y| x.2.total_cmp(&y.2));
    let mut parent: Vec<usize> = (0..n).collect();
    let mut weight = 0.0;
    let mut joined = 0;
    for (a, b, w) in usable {
        let (ra, rb) = (find(&mut parent, *a), find(&mut parent, *b));
        if ra != rb {
            parent[ra] = rb;
            weight += w;
            joined += 1;
        }
    }
    (joined + 1 == keep.len()).then_some(weight)
}

fn exact_steiner(n: usize, edges: &[(usize, usize, f64)], terminals: &[usize]) -> f64 {
    let others: Vec<usize> = (0..n).filter(|v| !terminals.contains(v)).collect();
    let mut best = f64::INFINITY;
    for mask in 0u32..(1 << others.len()) {
        let mut keep: HashSet<usize> = terminals.iter().copied().collect();
        for (i, v) in others.iter().enumerate() {
            if mask & (1 << i) != 0 {
                keep.insert(*v);
            }
        }
        if let Some(w) = induced_mst(n, edges, &keep) {
            best = best.min(w);
        }
    }
    best
}

/// A connected random graph: a random spanning tree plus extra edges.
fn connected_graph() -> impl Strategy<Value = (usize, Vec<(usize, usize, f64)>, Vec<usize>)> {
    (3usize..=9).prop_flat_map(|n| {
        let tree = proptest::collection::vec((any::<prop::sample::Index>(), 0.0f64..10.0), n - 1);
        let extra = proptest::collection::vec((0..n, 0..n, 0.0f64..10.0), 0..=2 * n);
        let terminals = proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 2..=n.min(5));
        (Just(n), tree, extra, terminals).prop_map(|(n, tree, extra, terminals)| {
            let mut edges = Vec::new();
            for (i, (parent, w)) in tree.into_iter().enumerate() {
                let child = i + 1;
                edges.push((parent.index(child), child, w));
            }
            for (a, b, w) in extra {
                if a != b {
                    edges.push((a, b, w));
                }
            }
            (n, edges, terminals)
        })
    })
}

fn build(n: usize, edges: &[(usize, usize, f64)]) -> UnGraph<(), f64> {
    let mut g = UnGraph::default();
    for _ in 0..n {
        g.add_node(());
    }
    for &(a, b, w) in edges {
        g.add_edge(NodeIndex::new(a), NodeIndex::new(b), w);
    }
    g
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn tree_spans_terminals_and_is_within_twice_optimal(
        (n, edges, terminals) in connected_graph()
    ) {
        let g = build(n, &edges);
        let nodes: Vec<NodeIndex> = terminals.iter().map(|&t| NodeIndex::new(t)).collect();
        let tree = mehlhorn(&g, &nodes, |w| *w, all_edges(&g)).unwrap();

        // A tree: |E| = |V| - 1 and connected.
        prop_assert_eq!(tree.edges.len() + 1, tree.nodes.len());
        let in_tree: HashSet<NodeIndex> = tree.nodes.iter().copied().collect();
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([tree.nodes[0]]);
        while let Some(v) = queue.pop_front() {
            if !seen.insert(v) { continue; }
            for e in g.edges(v) {
                if tree.edges.contains(&e.id()) {
                    let other = if e.source() == v { e.target() } else { e.source() };
                    queue.push_back(other);
                }
            }
        }
        prop_assert_eq!(seen.len(), tree.nodes.len());
        // Spans every terminal; every leaf is a terminal.
        for t in &nodes {
            prop_assert!(in_tree.contains(t));
        }
        for v in &tree.nodes {
            let degree = g.edges(*v).filter(|e| tree.edges.contains(&e.id())).count();
            prop_assert!(degree != 1 || nodes.contains(v), "non-terminal leaf {:?}", v);
        }
        // Cost is the sum of its edges and within 2x the optimum.
        let sum: f64 = tree.edges.iter().map(|e| g[*e]).sum();
        prop_assert!((sum - tree.cost).abs() < 1e-9);
        let optimum = exact_steiner(n, &edges, &terminals);
        prop_assert!(tree.cost <= 2.0 * optimum + 1e-9, "cost {} > 2 x optimum {}", tree.cost, optimum);
        prop_assert!(tree.cost + 1e-9 >= optimum);
    }
}
