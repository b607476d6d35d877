//! The `nearest` strategy, the embedding baseline: a text's label is the label of the labelled
//! example closest to it under the sentence encoder (cosine of unit vectors), and its
//! candidates are the active labels ranked by their closest example, capped at
//! `max_candidates` as the ranked strategies are. It reads the labels' examples only: no words,
//! no names or descriptions, and none of the texts the engine learned (they are never
//! encoded), so it is the same with online indexing on or off.

use petgraph::graph::NodeIndex;

use super::keywords::Keyword;
use super::retrieve::Retriever;
use super::{Analysis, Basis, Candidate, Retrieval, Scoring};

impl Retriever<'_> {
    /// Candidates of `nearest`. Without a vector for the text (no encoder, or encoding failed)
    /// or without a labelled example's vector, nothing is nearer than anything: every active
    /// label, as [`Basis::NoEvidence`] (in registration order), the keyword graph's
    /// best-connected one chosen.
    pub(super) fn nearest_retrieval(
        &self,
        analysis: &Analysis,
        terminal_nodes: &[(&Keyword, NodeIndex)],
    ) -> Retrieval {
        let nearest = match (self.embeddings, &analysis.embedding) {
            (Some(embeddings), Some(query)) => {
                embeddings.nearest_examples(query, self.labels.len())
            }
            _ => Vec::new(),
        };
        let mut ranked: Vec<(usize, f64)> = nearest
            .iter()
            .enumerate()
            .filter_map(|(position, cosine)| Some((position, (*cosine)?)))
            .filter(|&(position, _)| self.labels[position].active)
            .collect();
        // Best first; a tie goes to the label registered first.
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let first_hop_labels = ranked.len();
        ranked.truncate(self.config.ranking.max_candidates.max(1));
        let ranked = ranked
            .into_iter()
            .map(|(position, cosine)| (self.labels[position].id.clone(), cosine))
            .collect();
        self.scored_retrieval(ranked, first_hop_labels, terminal_nodes)
    }

    /// The retrieval of a strategy that scores labels without calibration (`nearest` and the
    /// peers): `ranked` best first, already capped; with nothing ranked, every active label
    /// (in registration order) as [`Basis::NoEvidence`], the keyword graph's best-connected one
    /// chosen.
    pub(super) fn scored_retrieval(
        &self,
        ranked: Vec<(String, f64)>,
        first_hop_labels: usize,
        terminal_nodes: &[(&Keyword, NodeIndex)],
    ) -> Retrieval {
        let terminals: Vec<String> = terminal_nodes
            .iter()
            .map(|(k, _)| k.phrase.clone())
            .collect();
        let active_labels = self.labels.active().count();
        if ranked.is_empty() {
            let candidates = self.labels.active_ids();
            let choice = self
                .graph_walk()
                .best_connected(&candidates, terminal_nodes);
            return Retrieval {
                graph_choice: choice,
                candidates: candidates.into_iter().map(Candidate::unscored).collect(),
                scoring: Scoring::Uncalibrated,
                terminals,
                basis: Basis::NoEvidence,
                tree_cost: None,
                discovery_score: None,
                first_hop_labels: 0,
                active_labels,
                short_text: false,
                probe_top: None,
            };
        }
        let candidates: Vec<Candidate> = ranked
            .into_iter()
            .map(|(label, score)| Candidate::scored(label, score))
            .collect();
        Retrieval {
            graph_choice: candidates[0].label.clone(),
            candidates,
            // Like the other strategies without calibrated scores, its decisions are never
            // held for review and every one is learned from.
            scoring: Scoring::Uncalibrated,
            terminals,
            basis: Basis::SimilarExamples,
            tree_cost: None,
            discovery_score: None,
            first_hop_labels,
            active_labels,
            short_text: false,
            probe_top: None,
        }
    }
}
