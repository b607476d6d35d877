//! The GORAG engine: pure, synchronous, no I/O.
//!
//! One text goes through [`Engine::analyze`] (keywords, index terms) → [`Engine::retrieve`]
//! (candidate labels: ranked scores from the retrieval index, or the paper's Steiner tree) →
//! [`Engine::classification_prompt`] (for the LLM, which the async shell calls) →
//! [`Engine::decide_with_alternatives`] (read the answer under the choice mode, flag
//! hallucinations, fall back to retrieval) → [`Engine::is_confident`] → [`Engine::learn`]
//! (online indexing). Rounds of new labels enter through [`Engine::apply_round`].

pub mod answer;
pub mod choice;
mod decision;
pub mod graph;
pub mod index;
pub mod keywords;
mod material;
pub mod prompt;
pub mod rank;
pub mod state;
pub mod steiner;
pub mod terms;
pub mod text;
pub mod tfidf;
pub mod update;

pub use material::LabelMaterial;

use std::collections::{HashMap, HashSet};

use petgraph::graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::discovery::Pool;
use answer::HallucinationKind;
use graph::{KeywordGraph, Node};
use index::{DocKind, TextIndex};
use keywords::{Keyword, KeywordSelection};
use prompt::{ChoiceMode, ClassChoice, Prompt, PromptLayout};
use rank::{Evidence, Ranking, RankingConfig};
use terms::TermCounts;
use text::PhraseCounts;
use tfidf::CorpusStats;

/// `scored` mode: share of the answer's first-token probability mass that must begin a
/// candidate's name for an off-list answer text not to count as a hallucination.
pub const SCORED_ON_LIST: f64 = 0.5;

/// How candidate labels are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// GORAG as in the paper: labels in the Steiner tree over the text's keywords.
    Steiner,
    /// Every active label (the long-context baseline).
    All,
    /// Labels of the k labelled texts most similar by TF-IDF cosine (NaiveRAG analogue).
    Naive,
    /// Labels scored by their own material (best example, name, description), ranked, capped.
    Ranked,
    /// TopoRAG's proximity alone: the nearest texts (labelled and confidently classified) vote.
    Proximity,
    /// `ranked` + `proximity`: the default (README, "Retrieval that finds the class").
    #[default]
    Hybrid,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Steiner => "steiner",
            Self::All => "all",
            Self::Naive => "naive",
            Self::Ranked => "ranked",
            Self::Proximity => "proximity",
            Self::Hybrid => "hybrid",
        }
    }

    /// The evidence of a ranked strategy; None for `steiner`, `all` and `naive`.
    pub fn evidence(self) -> Option<Evidence> {
        let (first_hop, second_hop) = match self {
            Self::Ranked => (true, false),
            Self::Proximity => (false, true),
            Self::Hybrid => (true, true),
            Self::Steiner | Self::All | Self::Naive => return None,
        };
        Some(Evidence {
            first_hop,
            second_hop,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineConfig {
    /// Keywords taken from a query text (terminals, and what online indexing adds).
    pub selection: KeywordSelection,
    /// Keywords taken from a labelled example or a label description.
    pub example_selection: KeywordSelection,
    pub strategy: Strategy,
    /// k of the `naive` strategy.
    pub naive_k: usize,
    /// Online indexing; false is the paper's `offline` ablation.
    pub online_indexing: bool,
    /// Every edge costs 1: the paper's `unit` ablation.
    pub unit_costs: bool,
    /// Send keywords instead of the text: the paper's `keyword` ablation.
    pub keyword_input: bool,
    /// Longest text (in characters) put into a prompt.
    pub max_prompt_chars: usize,
    /// Longest answer, in tokens.
    pub answer_max_tokens: u32,
    /// Scoring, capping and confidence of the ranked strategies.
    pub ranking: RankingConfig,
    /// How the LLM chooses among the candidates.
    pub choice: ChoiceMode,
    /// `scored` mode: weight of the LLM's belief against the retrieval scores (each candidate's
    /// score divided by the best).
    pub llm_weight: f64,
    /// Characters of each candidate's example shown in the prompt (ranked strategies; 0: none).
    pub example_chars: usize,
    /// Whether the text comes before or after the classes in the prompt.
    pub prompt_layout: PromptLayout,
    /// Poorly explained texts kept for emerging-class discovery (oldest dropped first).
    pub pool_capacity: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            selection: KeywordSelection::default(),
            example_selection: KeywordSelection {
                top_k: 100,
                min_score: 0.0,
            },
            strategy: Strategy::Hybrid,
            naive_k: 5,
            online_indexing: true,
            unit_costs: false,
            keyword_input: false,
            max_prompt_chars: 1200,
            answer_max_tokens: 32,
            ranking: RankingConfig::default(),
            choice: ChoiceMode::default(),
            llm_weight: 0.0,
            example_chars: 150,
            prompt_layout: PromptLayout::default(),
            pool_capacity: 5_000,
        }
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum EngineError {
    #[error("label {0:?} already exists")]
    DuplicateLabel(String),
    #[error("label {0:?} appears twice in the same round")]
    RepeatedInRound(String),
    #[error("label {0:?} is not known")]
    UnknownLabel(String),
    #[error("label {0:?} is retired")]
    RetiredLabel(String),
    #[error("label id must not be empty")]
    EmptyLabelId,
    #[error("no active label: a round must be applied before texts can be classified")]
    NoActiveLabels,
}

/// A label as it is announced in a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewLabel {
    pub id: String,
    /// Human-meaningful name; None for opaque labels such as Reuters' `label 7`.
    pub name: Option<String>,
    /// Short description (given by the operator or written by the LLM).
    pub description: Option<String>,
    /// Few-shot examples (may be empty: zero-shot).
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelInfo {
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub active: bool,
    pub examples: u32,
}

impl LabelInfo {
    /// How the label is shown to the LLM.
    pub fn display(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.id)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexReport {
    pub labels_added: usize,
    pub texts_indexed: usize,
    pub keywords_added: usize,
}

/// A text's phrases and the keywords chosen from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub phrases: PhraseCounts,
    pub keywords: Vec<Keyword>,
    /// The retrieval index's terms of the text (stems, phrases within stop words).
    #[serde(default)]
    pub terms: TermCounts,
}

/// Why the candidate set is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Labels of the Steiner tree over ≥ 2 terminals.
    SteinerTree,
    /// One terminal: the active labels it links to directly.
    SingleTerminal,
    /// The tree held no active label: the active labels the terminals link to.
    TerminalNeighbours,
    /// Nothing in the text links to the graph (or, for the ranked strategies, to any label's
    /// examples, name or description): every active label.
    NoEvidence,
    /// The `all` strategy.
    AllLabels,
    /// The `naive` strategy.
    SimilarExamples,
    /// A ranked strategy (`ranked`, `proximity`, `hybrid`): the best-scored labels.
    RankedScores,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Retrieval {
    /// Candidate label ids: best first for the ranked strategies, in label registration order
    /// for the others.
    pub candidates: Vec<String>,
    /// Ranked strategies: each candidate's score (same order); empty otherwise.
    pub scores: Vec<f64>,
    /// Ranked strategies: each candidate's most similar labelled example, for the prompt.
    pub examples: Vec<Option<String>>,
    /// Ranked strategies: best score minus second best (0 when nothing scored); None for the
    /// strategies without scores (`steiner`, `all`, `naive`).
    pub margin: Option<f64>,
    /// The text's keywords that are graph nodes.
    pub terminals: Vec<String>,
    pub basis: Basis,
    /// Cost of the Steiner tree, when one was built.
    pub tree_cost: Option<f64>,
    /// The retrieval-only prediction (used without an LLM, or when it fails).
    pub graph_choice: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Llm,
    Graph,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub label: String,
    pub source: Source,
    pub hallucination: Option<HallucinationKind>,
}

#[derive(Debug, Clone)]
pub struct Engine {
    config: EngineConfig,
    graph: KeywordGraph,
    stats: CorpusStats,
    labels: Vec<LabelInfo>,
    label_index: HashMap<String, usize>,
    /// Labelled examples, names, descriptions and confidently classified texts.
    index: TextIndex,
    /// Bumped on every change to the label set.
    label_version: u64,
    /// Id of the last round applied through [`Engine::apply`].
    last_round: Option<String>,
    /// Texts the active labels explain poorly, for emerging-class discovery
    /// ([`update::Update::Unexplained`]).
    pool: Pool,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Self {
        Self {
            index: TextIndex::new(config.ranking.seen_capacity),
            pool: Pool::new(config.pool_capacity),
            config,
            graph: KeywordGraph::new(),
            stats: CorpusStats::default(),
            labels: Vec::new(),
            label_index: HashMap::new(),
            label_version: 0,
            last_round: None,
        }
    }

    /// The texts the active labels explain poorly, oldest first.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    pub fn last_round(&self) -> Option<&str> {
        self.last_round.as_deref()
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Switch the candidate strategy (the graph and statistics are shared by all strategies).
    pub fn set_strategy(&mut self, strategy: Strategy) {
        self.config.strategy = strategy;
    }

    pub fn graph(&self) -> &KeywordGraph {
        &self.graph
    }

    pub fn stats(&self) -> &CorpusStats {
        &self.stats
    }

    /// The retrieval index (examples, names, descriptions, learned texts).
    pub fn index(&self) -> &TextIndex {
        &self.index
    }

    pub fn labels(&self) -> &[LabelInfo] {
        &self.labels
    }

    pub fn label(&self, id: &str) -> Option<&LabelInfo> {
        self.label_index.get(id).map(|&i| &self.labels[i])
    }

    pub fn label_version(&self) -> u64 {
        self.label_version
    }

    pub fn active_labels(&self) -> impl Iterator<Item = &LabelInfo> {
        self.labels.iter().filter(|l| l.active)
    }

    /// Register a round's labels and index their examples and descriptions. Validated as a
    /// whole first: on error nothing changes.
    pub fn apply_round(&mut self, labels: &[NewLabel]) -> Result<IndexReport, EngineError> {
        self.check_round(labels)?;
        let mut documents = Vec::new();
        for label in labels {
            let position = self.labels.len();
            self.labels.push(LabelInfo {
                id: label.id.clone(),
                name: label.name.clone(),
                description: label.description.clone(),
                active: true,
                examples: label.examples.len() as u32,
            });
            self.label_index.insert(label.id.clone(), position);
            self.graph.ensure_label(&label.id);
            if let Some(name) = &label.name {
                let terms = TermCounts::of(&name.replace('_', " "));
                self.index
                    .add_labelled(DocKind::Name, position as u32, terms, None);
            }
            for example in &label.examples {
                documents.push((position, example.as_str(), true));
            }
            if let Some(description) = &label.description {
                documents.push((position, description.as_str(), false));
            }
        }
        self.label_version += 1;
        let mut report = self.index_documents(&documents);
        report.labels_added = labels.len();
        Ok(report)
    }

    /// Whether [`Engine::apply_round`] would accept `labels` (checked before asking an LLM to
    /// describe them).
    pub fn check_round(&self, labels: &[NewLabel]) -> Result<(), EngineError> {
        let mut in_round = HashSet::new();
        for label in labels {
            if label.id.trim().is_empty() {
                return Err(EngineError::EmptyLabelId);
            }
            if self.label_index.contains_key(&label.id) {
                return Err(EngineError::DuplicateLabel(label.id.clone()));
            }
            if !in_round.insert(label.id.as_str()) {
                return Err(EngineError::RepeatedInRound(label.id.clone()));
            }
        }
        Ok(())
    }

    /// More labelled examples for an existing, active label.
    pub fn add_examples(
        &mut self,
        label: &str,
        examples: &[String],
    ) -> Result<IndexReport, EngineError> {
        let position = self.active_position(label)?;
        self.labels[position].examples += examples.len() as u32;
        let documents: Vec<_> = examples
            .iter()
            .map(|e| (position, e.as_str(), true))
            .collect();
        Ok(self.index_documents(&documents))
    }

    /// Stop offering a label. Its graph nodes stay (their keywords still connect the graph).
    pub fn retire_label(&mut self, label: &str) -> Result<(), EngineError> {
        let position = self.active_position(label)?;
        self.labels[position].active = false;
        self.label_version += 1;
        Ok(())
    }

    fn active_position(&self, label: &str) -> Result<usize, EngineError> {
        let &position = self
            .label_index
            .get(label)
            .ok_or_else(|| EngineError::UnknownLabel(label.to_string()))?;
        if !self.labels[position].active {
            return Err(EngineError::RetiredLabel(label.to_string()));
        }
        Ok(position)
    }

    /// Two passes, as a vectoriser fitted on the whole batch would: every document joins the
    /// statistics first, then each is scored and linked to its label. The retrieval index gets
    /// the examples and descriptions too, and each new label's name, then recomputes its
    /// weights once for the batch.
    fn index_documents(&mut self, documents: &[(usize, &str, bool)]) -> IndexReport {
        let analysed: Vec<(usize, &str, PhraseCounts, bool)> = documents
            .iter()
            .map(|&(position, text, is_example)| {
                (position, text, PhraseCounts::of(text), is_example)
            })
            .collect();
        for (_, _, phrases, _) in &analysed {
            self.stats.add(phrases);
        }
        let before = self.graph.keyword_count();
        for (position, text, phrases, is_example) in analysed {
            let scores = self.stats.scores(&phrases, true);
            let label_id = self.labels[position].id.clone();
            for keyword in keywords::select(scores, &self.config.example_selection) {
                self.graph
                    .observe(&keyword.phrase, &label_id, 1.0 - keyword.score);
            }
            let kind = if is_example {
                DocKind::Example
            } else {
                DocKind::Description
            };
            self.index
                .add_labelled(kind, position as u32, TermCounts::of(text), Some(text));
        }
        self.index.reweigh();
        IndexReport {
            labels_added: 0,
            texts_indexed: documents.len(),
            keywords_added: self.graph.keyword_count() - before,
        }
    }

    /// Phrases and statistical keywords of a query text, scored as if it had joined the
    /// statistics (which online indexing then makes true).
    pub fn analyze(&self, text: &str) -> Analysis {
        let phrases = PhraseCounts::of(text);
        let scores = self.stats.scores(&phrases, false);
        let keywords = keywords::select(scores, &self.config.selection);
        Analysis {
            phrases,
            keywords,
            terms: TermCounts::of(text),
        }
    }

    /// The analysis as online indexing needs it: the text graph keeps a text's heaviest terms
    /// only, so a learn record need not carry the rest (long texts would make it large).
    pub fn learnable(&self, analysis: &Analysis) -> Analysis {
        Analysis {
            phrases: analysis.phrases.clone(),
            keywords: analysis.keywords.clone(),
            terms: self.index.heaviest_terms(&analysis.terms),
        }
    }

    /// Like [`Engine::analyze`] but with the keywords an LLM proposed.
    pub fn analyze_with_llm_keywords(&self, text: &str, answer: &str) -> Analysis {
        let phrases = PhraseCounts::of(text);
        let scores: HashMap<String, f64> = self.stats.scores(&phrases, false).into_iter().collect();
        let keywords = keywords::from_llm_answer(answer, &phrases, &scores, &self.config.selection);
        Analysis {
            phrases,
            keywords,
            terms: TermCounts::of(text),
        }
    }

    fn edge_cost(&self, cost: &graph::EdgeCost) -> f64 {
        if self.config.unit_costs {
            1.0
        } else {
            cost.mean()
        }
    }

    /// Candidate labels for a text under the configured strategy.
    pub fn retrieve(&self, analysis: &Analysis) -> Result<Retrieval, EngineError> {
        if self.active_labels().next().is_none() {
            return Err(EngineError::NoActiveLabels);
        }
        let terminals: Vec<(&Keyword, NodeIndex)> = analysis
            .keywords
            .iter()
            .filter_map(|k| self.graph.keyword(&k.phrase).map(|node| (k, node)))
            .collect();
        let terminal_names = || terminals.iter().map(|(k, _)| k.phrase.clone()).collect();
        if let Some(evidence) = self.config.strategy.evidence() {
            return Ok(self.ranked_retrieval(analysis, evidence, &terminals));
        }
        let (candidates, basis, tree_cost) = match self.config.strategy {
            Strategy::Naive => match self.similar_example_labels(analysis) {
                Some(labels) => (labels, Basis::SimilarExamples, None),
                None => (self.all_active(), Basis::NoEvidence, None),
            },
            Strategy::Steiner => self.steiner_candidates(&terminals),
            _ => (self.all_active(), Basis::AllLabels, None),
        };
        // NaiveRAG's own prediction is the label of the most similar example (listed first).
        let graph_choice = match (self.config.strategy, basis, candidates.first()) {
            (Strategy::Naive, Basis::SimilarExamples, Some(first)) => first.clone(),
            _ => self.best_connected(&candidates, &terminals),
        };
        let mut ordered = candidates;
        ordered.sort_by_key(|id| self.label_index.get(id).copied().unwrap_or(usize::MAX));
        Ok(Retrieval {
            candidates: ordered,
            scores: Vec::new(),
            examples: Vec::new(),
            margin: None,
            terminals: terminal_names(),
            basis,
            tree_cost,
            graph_choice,
        })
    }

    /// The ranked strategies: label scores from the retrieval index, best first, capped at
    /// `max_candidates`.
    fn ranked_retrieval(
        &self,
        analysis: &Analysis,
        evidence: Evidence,
        terminal_nodes: &[(&Keyword, NodeIndex)],
    ) -> Retrieval {
        let terminals = terminal_nodes
            .iter()
            .map(|(k, _)| k.phrase.clone())
            .collect();
        let ranking = self.rank(&analysis.terms, evidence);
        if ranking.ranked.is_empty() || (evidence.first_hop && ranking.first_hop_labels == 0) {
            return self.unranked_retrieval(&ranking, terminal_nodes, terminals);
        }
        let margin = ranking.margin();
        let keep = self.config.ranking.max_candidates.max(1);
        let mut candidates = Vec::with_capacity(keep);
        let mut scores = Vec::with_capacity(keep);
        let mut examples = Vec::with_capacity(keep);
        for (&(label, score), example) in
            ranking.ranked.iter().zip(&ranking.best_example).take(keep)
        {
            candidates.push(self.labels[label as usize].id.clone());
            scores.push(score);
            examples.push(
                example
                    .and_then(|doc| self.index.doc(doc))
                    .and_then(|doc| doc.text.clone()),
            );
        }
        Retrieval {
            graph_choice: candidates[0].clone(),
            candidates,
            scores,
            examples,
            margin: Some(margin),
            terminals,
            basis: Basis::RankedScores,
            tree_cost: None,
        }
    }

    /// When nothing in the text is known to the labels' own material (a text of numbers and
    /// words no labelled example uses), scores would rank noise: every active label is offered,
    /// as `naive` does, those the second hop voted for first. Retrieval's choice is the second
    /// hop's best, else the keyword graph's best-connected label. Never confident, so never
    /// learned from.
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
        for id in self.all_active() {
            if !candidates.contains(&id) {
                candidates.push(id);
            }
        }
        let choice = if ranking.ranked.is_empty() {
            self.best_connected(&candidates, terminal_nodes)
        } else {
            candidates[0].clone()
        };
        Retrieval {
            graph_choice: choice,
            candidates,
            scores: Vec::new(),
            examples: Vec::new(),
            margin: Some(0.0),
            terminals,
            basis: Basis::NoEvidence,
            tree_cost: None,
        }
    }

    /// Per-label scores of a text (active labels only), best first.
    pub fn rank(&self, terms: &TermCounts, evidence: Evidence) -> Ranking {
        let hits = self.index.search(terms);
        rank::score(
            &hits,
            self.labels.len(),
            |l| {
                self.labels
                    .get(l as usize)
                    .is_some_and(|label| label.active)
            },
            &self.config.ranking,
            evidence,
        )
    }

    fn all_active(&self) -> Vec<String> {
        self.active_labels().map(|l| l.id.clone()).collect()
    }

    fn is_active(&self, id: &str) -> bool {
        self.label(id).is_some_and(|l| l.active)
    }

    /// Active labels linked directly to any terminal.
    fn terminal_neighbours(&self, terminals: &[(&Keyword, NodeIndex)]) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut labels = Vec::new();
        for (_, node) in terminals {
            for (label, _) in self.graph.labels_of(*node) {
                if self.is_active(label) && seen.insert(label) {
                    labels.push(label.to_string());
                }
            }
        }
        labels
    }

    fn steiner_candidates(
        &self,
        terminals: &[(&Keyword, NodeIndex)],
    ) -> (Vec<String>, Basis, Option<f64>) {
        let fallback_to_neighbours = |basis: Basis, cost: Option<f64>| {
            let neighbours = self.terminal_neighbours(terminals);
            if neighbours.is_empty() {
                (self.all_active(), Basis::NoEvidence, cost)
            } else {
                (neighbours, basis, cost)
            }
        };
        match terminals.len() {
            0 => (self.all_active(), Basis::NoEvidence, None),
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
                                Some(Node::Label(id)) if self.is_active(id) => Some(id.clone()),
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
    /// (see [`Engine::relays`]) — never the label's many leaf keywords, which lie on no shortest
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
                for &(keyword, edge) in self.graph.shared_keywords(node) {
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
            let cost = if self.config.unit_costs { 1.0 } else { cost };
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
    fn best_connected(&self, candidates: &[String], terminals: &[(&Keyword, NodeIndex)]) -> String {
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

    /// Distinct active labels of the `naive_k` labelled examples most similar to the query
    /// (TF-IDF cosine through the retrieval index), most similar first; None when nothing is
    /// similar at all.
    fn similar_example_labels(&self, analysis: &Analysis) -> Option<Vec<String>> {
        let mut hits: Vec<_> = self
            .index
            .search(&analysis.terms)
            .into_iter()
            .filter(|h| h.kind == DocKind::Example && self.labels[h.label as usize].active)
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
            let id = &self.labels[hit.label as usize].id;
            if !labels.contains(id) {
                labels.push(id.clone());
            }
        }
        Some(labels)
    }

    /// The prompt asking the LLM to pick one of the candidates.
    pub fn classification_prompt(
        &self,
        retrieval: &Retrieval,
        text: &str,
        analysis: &Analysis,
    ) -> Prompt {
        let choices: Vec<ClassChoice<'_>> = retrieval
            .candidates
            .iter()
            .enumerate()
            .filter_map(|(i, id)| self.label(id).map(|label| (i, label)))
            .map(|(i, label)| ClassChoice {
                display: label.display(),
                description: label.description.as_deref(),
                example: retrieval
                    .examples
                    .get(i)
                    .and_then(|e| e.as_deref())
                    .filter(|_| self.config.example_chars > 0)
                    .map(|e| prompt::clip(e, self.config.example_chars)),
            })
            .collect();
        let keyword_body;
        let body = if self.config.keyword_input {
            keyword_body = analysis
                .keywords
                .iter()
                .map(|k| k.phrase.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            keyword_body.as_str()
        } else {
            prompt::clip(text, self.config.max_prompt_chars)
        };
        prompt::classification_for(
            &choices,
            body,
            self.config.answer_max_tokens,
            self.config.choice,
            self.config.prompt_layout,
        )
    }

    /// Online indexing: the text always joins the statistics; when the decision is
    /// `confident`, its keywords that are not yet nodes are linked to `label` with cost
    /// `1 − s`, and the text joins the text graph under `label`. Only for active labels, and
    /// not in the `offline` ablation. Returns the number of keyword nodes added.
    pub fn learn(&mut self, analysis: &Analysis, label: &str, confident: bool) -> usize {
        if !self.config.online_indexing || !self.is_active(label) {
            return 0;
        }
        self.stats.add(&analysis.phrases);
        if !confident {
            return 0;
        }
        let mut added = 0;
        for keyword in &analysis.keywords {
            if self
                .graph
                .add_if_new(&keyword.phrase, label, 1.0 - keyword.score)
            {
                added += 1;
            }
        }
        if let Some(&position) = self.label_index.get(label) {
            self.index.add_seen(position as u32, &analysis.terms);
        }
        added
    }
}

#[cfg(test)]
mod tests;
