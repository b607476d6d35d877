//! Retrieval: a text's candidate labels under the configured strategy — the paper's Steiner
//! tree over the keyword graph (`steiner`), nearest labelled examples (`naive`), every label
//! (`all`), or per-label scores from the retrieval index, ranked and capped (`ranked`,
//! `proximity`, `hybrid`; see [`super::rank`]).

use petgraph::graph::NodeIndex;

use super::confidence::CandidateParts;
use super::embedding::Embeddings;
use super::fusion;
use super::graph::KeywordGraph;
use super::graph_walk::GraphWalk;
use super::held_out::HeldOut;
use super::index::{DocKind, Hit, TextIndex};
use super::keywords::Keyword;
use super::no_match::{self, MatchEvidence};
use super::rank::{self, Evidence, Ranking};
use super::terms::TermCounts;
use super::{
    Analysis, Basis, Candidate, CandidateEvidence, EngineConfig, EngineError, Labels, Retrieval,
    Scoring, Strategy,
};

/// A text's ranking before the probe ([`Retriever::base_ranking`]).
struct BaseRanking {
    ranking: Ranking,
    hits: Vec<Hit>,
    by_meaning: bool,
    short_text: bool,
}

/// Shared terms a prediction's rationale names.
const MATCHED_TERMS: usize = 5;

/// Retrieval ([`super::Engine::retriever`]): a text's candidate labels, and the rankings and
/// label material behind them. It reads the configuration, the label set, the keyword graph,
/// the retrieval index and the embedding signal, and changes nothing.
#[derive(Clone, Copy)]
pub struct Retriever<'e> {
    pub(super) config: &'e EngineConfig,
    pub(super) labels: &'e Labels,
    pub(super) graph: &'e KeywordGraph,
    pub(super) index: &'e TextIndex,
    pub(super) embeddings: Option<&'e Embeddings>,
    pub(super) probe: Option<&'e super::probe::Probe>,
    /// The probe's weight in the ranked strategies (0: not read).
    pub(super) probe_weight: f64,
}

impl<'e> Retriever<'e> {
    /// The texts of a label's indexed examples, as the index keeps them (clipped to
    /// [`super::index::EXAMPLE_TEXT_CHARS`]; an example with no term at all is not indexed).
    pub fn example_texts(&self, id: &str) -> Vec<&'e str> {
        let Some(position) = self.labels.position(id) else {
            return Vec::new();
        };
        self.index
            .documents()
            .alive()
            .filter(|doc| doc.kind == DocKind::Example && doc.label.index() == position)
            .filter_map(|doc| doc.text.as_deref())
            .collect()
    }

    /// The probe's weight in the ranked strategies (0: not read; see `peers.rs`).
    pub fn probe_weight(&self) -> f64 {
        self.probe_weight
    }

    /// Retrieval over the keyword graph alone ([`GraphWalk`]).
    pub(super) fn graph_walk(&self) -> GraphWalk<'e> {
        GraphWalk {
            labels: self.labels,
            graph: self.graph,
            unit_costs: self.config.unit_costs,
        }
    }

    /// Candidate labels for a text under the configured strategy.
    pub fn retrieve(&self, analysis: &Analysis) -> Result<Retrieval, EngineError> {
        if self.labels.active().next().is_none() {
            return Err(EngineError::NoActiveLabels);
        }
        let terminals: Vec<(&Keyword, NodeIndex)> = analysis
            .keywords
            .iter()
            .filter_map(|k| self.graph.keyword(&k.phrase).map(|node| (k, node)))
            .collect();
        let terminal_names = || terminals.iter().map(|(k, _)| k.phrase.clone()).collect();
        if let Some(evidence) = self.config.strategy.evidence() {
            return Ok(self.ranked_retrieval(analysis, evidence, &terminals, None));
        }
        match self.config.strategy {
            Strategy::Nearest => return Ok(self.nearest_retrieval(analysis, &terminals)),
            Strategy::Prototype => return Ok(self.prototype_retrieval(analysis, &terminals)),
            Strategy::Probe => return Ok(self.probe_retrieval(analysis, &terminals)),
            _ => {}
        }
        let (candidates, basis, tree_cost) = match self.config.strategy {
            Strategy::Naive => match self.similar_example_labels(analysis) {
                Some(labels) => (labels, Basis::SimilarExamples, None),
                None => (self.labels.active_ids(), Basis::NoEvidence, None),
            },
            Strategy::Steiner => self.graph_walk().steiner_candidates(&terminals),
            _ => (self.labels.active_ids(), Basis::AllLabels, None),
        };
        // NaiveRAG's own prediction is the label of the most similar example (listed first).
        let graph_choice = match (self.config.strategy, basis, candidates.first()) {
            (Strategy::Naive, Basis::SimilarExamples, Some(first)) => first.clone(),
            _ => self.graph_walk().best_connected(&candidates, &terminals),
        };
        let mut ordered = candidates;
        ordered.sort_by_key(|id| self.labels.position(id).unwrap_or(usize::MAX));
        Ok(Retrieval {
            candidates: ordered.into_iter().map(Candidate::unscored).collect(),
            scoring: Scoring::Uncalibrated,
            terminals: terminal_names(),
            basis,
            tree_cost,
            graph_choice,
            discovery_score: None,
            first_hop_labels: 0,
            active_labels: self.labels.active().count(),
            short_text: false,
            probe_top: None,
        })
    }

    /// Retrieval for a labelled example as if it were not indexed (its document and its vector
    /// left out): how the engine would decide a text like it, for refitting confidence. None
    /// under the strategies without scores or with no active label.
    pub(super) fn retrieve_held_out(
        &self,
        analysis: &Analysis,
        held_out: &HeldOut,
    ) -> Option<Retrieval> {
        let evidence = self.config.strategy.evidence()?;
        self.labels.active().next()?;
        let terminals: Vec<(&Keyword, NodeIndex)> = analysis
            .keywords
            .iter()
            .filter_map(|k| self.graph.keyword(&k.phrase).map(|node| (k, node)))
            .collect();
        Some(self.ranked_retrieval(analysis, evidence, &terminals, Some(held_out)))
    }

    /// A held-out example's ranking before the probe is added (its document and vector left
    /// out, as [`Self::retrieve_held_out`] leaves them): what the probe's weight is fitted on
    /// ([`super::probe_weight`]). None under the strategies without a first hop.
    pub(super) fn held_out_ranking(
        &self,
        analysis: &Analysis,
        held_out: &HeldOut,
    ) -> Option<Ranking> {
        let evidence = self.config.strategy.evidence().filter(|e| e.first_hop)?;
        Some(
            self.base_ranking(analysis, evidence, Some(held_out))
                .ranking,
        )
    }

    /// The ranked strategies: label scores from the retrieval index, best first, capped at
    /// `max_candidates`.
    fn ranked_retrieval(
        &self,
        analysis: &Analysis,
        evidence: Evidence,
        terminal_nodes: &[(&Keyword, NodeIndex)],
        held_out: Option<&HeldOut>,
    ) -> Retrieval {
        let terminals = terminal_nodes
            .iter()
            .map(|(k, _)| k.phrase.clone())
            .collect();
        let keep = self.config.ranking.max_candidates.max(1);
        let BaseRanking {
            mut ranking,
            hits,
            mut by_meaning,
            short_text,
        } = self.base_ranking(analysis, evidence, held_out);
        let (mut before_probe, mut probe_top) = (None::<Vec<(u32, f64)>>, None);
        if let (true, Some(probe)) = (evidence.first_hop, self.probe) {
            if self.probe_weight > 0.0 {
                before_probe = Some(ranking.ranked.clone());
                let active = |l: usize| self.labels.at(l).is_some_and(|label| label.active);
                let words = analysis.probe_words();
                let mut belief = probe.probabilities(analysis.embedding.as_deref(), &words, active);
                probe_top = super::probe::to_relative(&mut belief);
                let top = keep.max(2);
                fusion::add_probe(&mut ranking, &belief, self.probe_weight, top, |l| {
                    active(l as usize)
                });
                by_meaning = by_meaning || !ranking.ranked.is_empty();
            }
        }
        // Without meaning, a text whose words no label's material shares is not ranked: its
        // scores would rank noise. With meaning, meaning alone ranks the labels.
        if ranking.ranked.is_empty()
            || (evidence.first_hop && ranking.first_hop_labels == 0 && !by_meaning)
        {
            // Every scored label is listed, in order (the second hop's few, here).
            ranking.sort_all();
            return self.unranked_retrieval(&ranking, terminal_nodes, terminals);
        }
        // How close in meaning each candidate is (the no-match rule reads it), with the same
        // example left out as the ranking.
        let skipped = held_out.and_then(|h| h.vector.as_ref());
        let meaning = |label: u32| {
            let (embeddings, query) = (self.embeddings?, analysis.embedding.as_ref()?);
            let skipped = skipped
                .filter(|held| held.0 == label)
                .map(|held| held.1.as_slice());
            embeddings.closeness(query, label as usize, skipped)
        };
        let margin = ranking.margin();
        let candidates: Vec<Candidate> = ranking
            .ranked
            .iter()
            .zip(&ranking.best_example)
            .take(keep)
            .map(|(&(label, score), example)| Candidate {
                label: self.labels[label as usize].id.clone(),
                score: Some(score),
                evidence: Some(CandidateEvidence {
                    parts: CandidateParts::from(ranking.parts.of(label)),
                    before_probe: before_probe.as_ref().map_or(score, |ranked| {
                        ranked
                            .iter()
                            .find(|&&(l, _)| l == label)
                            .map_or(0.0, |&(_, s)| s)
                    }),
                    matched: MatchEvidence {
                        shared_words: self.shared_words(&hits, label, &analysis.terms),
                        meaning: meaning(label),
                    },
                    example: example
                        .and_then(|doc| self.index.documents().get(doc))
                        .and_then(|doc| doc.text.clone()),
                    // A rationale for a text shown to someone; a held-out example's decision
                    // is only scored (and it costs a walk over the documents before the
                    // example's).
                    example_match: example.filter(|_| held_out.is_none()).and_then(|doc| {
                        self.index
                            .example_match(doc, &analysis.terms, MATCHED_TERMS)
                    }),
                }),
            })
            .collect();
        Retrieval {
            graph_choice: candidates[0].label.clone(),
            candidates,
            scoring: Scoring::Calibrated { margin },
            terminals,
            basis: Basis::RankedScores,
            tree_cost: None,
            discovery_score: Some(ranking.best_without_descriptions),
            first_hop_labels: ranking.first_hop_labels,
            active_labels: self.labels.active().count(),
            short_text,
            probe_top,
        }
    }

    /// The first and second hops' ranking of a text, with meaning added (everything but the
    /// probe), and the hits it was read from.
    fn base_ranking(
        &self,
        analysis: &Analysis,
        evidence: Evidence,
        held_out: Option<&HeldOut>,
    ) -> BaseRanking {
        let mut hits = self.index.search(&analysis.terms);
        if let Some(held_out) = held_out {
            hits.retain(|hit| !held_out.docs.contains(&hit.doc));
        }
        // Only the best candidates and the margin are read from the ranking: only they are
        // put in order (a query sharing a common word with most labels scores most of them).
        let keep = self.config.ranking.max_candidates.max(1);
        let top = keep.max(2);
        let mut ranking = self.rank_hits_top(&hits, evidence, top);
        let terms = analysis.terms.counts.len();
        // A text no word of which any label's own material shares (a ticket in another
        // language, a query in other words) is read as a short one: its words cannot decide,
        // whatever its length.
        let thin = self.config.ranking.short_text_terms > 0
            && evidence.first_hop
            && ranking.first_hop_labels == 0;
        let terms = if thin { 0 } else { terms };
        // Short and read by meaning: without an encoder a short text is ranked by its words,
        // and its confidence read as any other's.
        let mut short_text = false;
        let (weight, name_weight) = fusion::meaning_weights(&self.config.ranking, terms);
        let mut by_meaning = false;
        if let (true, true, Some(embeddings), Some(query)) = (
            evidence.first_hop,
            weight.is_finite() && weight > 0.0,
            self.embeddings,
            &analysis.embedding,
        ) {
            let skipped = held_out
                .and_then(|h| h.vector.as_ref())
                .map(|(label, vector)| (*label as usize, vector.as_slice()));
            let similarity = embeddings.similarity_without(
                query,
                self.labels.len(),
                name_weight.max(0.0),
                skipped,
            );
            fusion::add_meaning(&mut ranking, &similarity, weight, top, |l| {
                self.labels.at(l as usize).is_some_and(|label| label.active)
            });
            by_meaning = !ranking.ranked.is_empty();
            short_text = self.config.ranking.is_short(terms);
        }
        BaseRanking {
            ranking,
            hits,
            by_meaning,
            short_text,
        }
    }

    /// When nothing in the text is known to the labels' own material (a text of numbers and
    /// words no labelled example uses), scores would rank noise: every active label is offered,
    /// as `naive` does, those the second hop voted for first. Retrieval's choice is the second
    /// hop's best, else the keyword graph's best-connected label. Never confident, so it never
    /// reaches the keyword graph or the confident texts (it is kept only as a tentative text).
    fn unranked_retrieval(
        &self,
        ranking: &Ranking,
        terminal_nodes: &[(&Keyword, NodeIndex)],
        terminals: Vec<String>,
    ) -> Retrieval {
        let mut candidates: Vec<String> = ranking
            .ranked
            .iter()
            .map(|&(label, _)| self.labels[label as usize].id.clone())
            .collect();
        // Membership by label position: a scan of the growing list would be quadratic in the
        // labels.
        let mut listed = vec![false; self.labels.len()];
        for &(label, _) in &ranking.ranked {
            if let Some(slot) = listed.get_mut(label as usize) {
                *slot = true;
            }
        }
        for (position, label) in self.labels.all().iter().enumerate() {
            if label.active && !listed[position] {
                candidates.push(label.id.clone());
            }
        }
        let choice = if ranking.ranked.is_empty() {
            self.graph_walk()
                .best_connected(&candidates, terminal_nodes)
        } else {
            candidates[0].clone()
        };
        Retrieval {
            graph_choice: choice,
            candidates: candidates.into_iter().map(Candidate::unscored).collect(),
            scoring: Scoring::Calibrated { margin: 0.0 },
            terminals,
            basis: Basis::NoEvidence,
            tree_cost: None,
            discovery_score: None,
            first_hop_labels: ranking.first_hop_labels,
            active_labels: self.labels.active().count(),
            short_text: false,
            probe_top: None,
        }
    }

    /// Distinct words of a text found in a label's own material (its examples, name and
    /// description among the text's hits): how many words the label's evidence rests on.
    fn shared_words(&self, hits: &[Hit], label: u32, terms: &TermCounts) -> usize {
        let own = hits
            .iter()
            .filter(|hit| hit.label.0 == label)
            .filter(|hit| {
                matches!(
                    hit.kind,
                    DocKind::Example | DocKind::Name | DocKind::Description
                )
            })
            .filter_map(|hit| self.index.documents().get(hit.doc));
        no_match::shared_words(terms, own)
    }

    /// Per-label scores of a text (active labels only), best first.
    pub fn rank(&self, terms: &TermCounts, evidence: Evidence) -> Ranking {
        self.rank_hits(&self.index.search(terms), evidence)
    }

    fn rank_hits(&self, hits: &[Hit], evidence: Evidence) -> Ranking {
        self.rank_hits_top(hits, evidence, usize::MAX)
    }

    /// [`Self::rank_hits`] with the best `top` labels in order ([`rank::score_top`]).
    fn rank_hits_top(&self, hits: &[Hit], evidence: Evidence, top: usize) -> Ranking {
        rank::score_top(
            hits,
            self.labels.len(),
            |l| self.labels.at(l as usize).is_some_and(|label| label.active),
            &self.config.ranking,
            evidence,
            top,
        )
    }

    /// Distinct active labels of the `naive_k` labelled examples most similar to the query
    /// (TF-IDF cosine through the retrieval index), most similar first; None when nothing is
    /// similar at all.
    fn similar_example_labels(&self, analysis: &Analysis) -> Option<Vec<String>> {
        let mut hits: Vec<_> = self
            .index
            .search(&analysis.terms)
            .into_iter()
            .filter(|h| h.kind == DocKind::Example && self.labels[h.label.index()].active)
            .collect();
        if hits.is_empty() {
            return None;
        }
        hits.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then(a.doc.cmp(&b.doc))
        });
        let mut labels: Vec<String> = Vec::new();
        for hit in hits.into_iter().take(self.config.naive_k.max(1)) {
            let id = &self.labels[hit.label.index()].id;
            if !labels.contains(id) {
                labels.push(id.clone());
            }
        }
        Some(labels)
    }
}
