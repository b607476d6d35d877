use super::*;
use crate::engine::steiner::{all_edges, mehlhorn};
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta", "rho",
    "tau", "phi", "chi", "psi", "eta",
];

fn text(indices: &[usize]) -> String {
    indices
        .iter()
        .map(|&i| WORDS[i % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    /// Leaving out leaf keywords and non-relaying shared keywords must not change the
    /// tree's cost or its labels.
    #[test]
    fn pruned_search_matches_the_full_search(
        examples in proptest::collection::vec(proptest::collection::vec(0usize..16, 1..5), 3..12),
        queries in proptest::collection::vec(proptest::collection::vec(0usize..16, 2..10), 1..8),
    ) {
        let mut engine = Engine::new(steiner());
        let labels: Vec<NewLabel> = examples
            .iter()
            .enumerate()
            .map(|(i, words)| NewLabel {
                id: format!("l{i}"),
                name: None,
                description: None,
                examples: vec![text(words)],
            })
            .collect();
        engine.apply_round(None, &labels).unwrap();
        for (i, query) in queries.iter().enumerate() {
            let analysis = engine.analyzer().analyze(&text(query));
            let retrieval = engine.retriever().retrieve(&analysis).unwrap();
            if retrieval.basis == Basis::SteinerTree {
                let nodes: Vec<_> = retrieval
                    .terminals
                    .iter()
                    .filter_map(|t| engine.graph().keyword(t))
                    .collect();
                let g = engine.graph().inner();
                let full = mehlhorn(g, &nodes, |c| c.mean(), all_edges(g)).unwrap();
                prop_assert!((full.cost - retrieval.tree_cost.unwrap()).abs() < 1e-9,
                    "full {} vs pruned {:?}", full.cost, retrieval.tree_cost);
                let mut full_labels: Vec<String> = full
                    .nodes
                    .iter()
                    .filter_map(|&n| match engine.graph().node(n) {
                        Some(graph::Node::Label(id)) => Some(id.clone()),
                        _ => None,
                    })
                    .collect();
                full_labels.sort();
                let mut pruned = retrieval.label_ids().clone();
                pruned.sort();
                prop_assert_eq!(full_labels, pruned);
            }
            // Online indexing to the i-th label grows shared keywords over time.
            let label = format!("l{}", i % examples.len());
            engine.learn(&analysis, &label, true);
        }
    }
}
