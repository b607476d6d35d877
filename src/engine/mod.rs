//! The GORAG engine: pure, synchronous, no I/O.
//!
//! The [`Engine`] owns the state — the label set ([`Labels`]), the keyword graph, the
//! statistics, the retrieval index, the embedding signal, the confidence's outcomes — and lends
//! it, read-only, to the steps that read it. One text goes through [`Analyzer::analyze`]
//! (keywords, index terms) → [`Retriever::retrieve`] (candidate labels: ranked scores from the
//! retrieval index, or the paper's Steiner tree) → [`Decisions::classification_prompt`] (for
//! the LLM, which the async shell calls) → [`Decisions::decide_with_alternatives`] (read the
//! answer under the choice mode, flag hallucinations, fall back to retrieval) →
//! [`Decisions::verdict`] (status, confident, the label to learn) → [`Engine::learn`] (online
//! indexing). Rounds of new labels enter through [`Engine::apply_round`].

mod analysis;
pub mod answer;
mod candidate;
pub mod choice;
pub mod confidence;
pub mod correct;
mod cosine_scale;
mod decision;
pub mod embedding;
pub mod fusion;
pub mod graph;
mod graph_walk;
mod held_out;
pub mod index;
pub mod keywords;
mod labels;
pub mod learning;
mod material;
mod nearest;
pub mod no_match;
mod peers;
pub mod probe;
mod probe_weight;
pub mod prompt;
pub mod rank;
pub mod refit;
mod retrieve;
mod rounds;
pub mod saved;
pub mod steiner;
pub mod terms;
pub mod text;
pub mod tfidf;
mod verdict;

pub use analysis::{Analysis, Analyzer, POOL_TERMS};
pub use candidate::{Candidate, CandidateEvidence, Retrieval, Scoring};
pub use decision::{asks, Decisions};
pub use labels::Labels;
pub use material::LabelMaterial;
pub use retrieve::Retriever;
pub use verdict::Verdict;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use answer::HallucinationKind;
use embedding::Embeddings;
use graph::KeywordGraph;
use index::{ClassifiedCapacity, DocKind, TermWeighting, TextIndex};
use keywords::KeywordSelection;
use learning::LearningConfig;
use prompt::{ChoiceMode, PromptLayout};
use rank::{Evidence, RankingConfig};
use tfidf::CorpusStats;

/// `scored` mode: share of the answer's first-token probability mass that must begin a
/// candidate's name for an off-list answer text not to count as a hallucination.
pub const SCORED_ON_LIST: f64 = 0.5;

/// How candidate labels are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
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
    /// `ranked` + `proximity`: the default (docs/design/retrieval.md, "Retrieval that finds the
    /// class").
    #[default]
    Hybrid,
    /// The embedding baseline: labels by their closest labelled example's cosine with the text
    /// under the sentence encoder (words, names, descriptions and learned texts unread).
    Nearest,
    /// A peer: labels by the text's cosine with the mean of their examples' vectors and their
    /// name's vector ([`peers`]).
    Prototype,
    /// A peer: labels by a logistic regression over [vector, words] fitted on the labels'
    /// examples and names ([`peers`], [`probe`]).
    Probe,
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
            Self::Nearest => "nearest",
            Self::Prototype => "prototype",
            Self::Probe => "probe",
        }
    }

    /// Whether the strategy reads a text's meaning (a first hop: `ranked`, `hybrid`; and
    /// `nearest`, which reads nothing else); the others need no sentence encoder.
    pub fn reads_meaning(self) -> bool {
        matches!(self, Self::Nearest | Self::Prototype | Self::Probe)
            || self.evidence().is_some_and(|evidence| evidence.first_hop)
    }

    /// Whether the strategy reads nothing but the sentence encoder (`nearest`, `prototype`):
    /// without one it has nothing to rank by.
    pub fn reads_only_meaning(self) -> bool {
        matches!(self, Self::Nearest | Self::Prototype)
    }

    /// The evidence of a ranked strategy; None for `steiner`, `all`, `naive` and `nearest`.
    pub fn evidence(self) -> Option<Evidence> {
        let (first_hop, second_hop) = match self {
            Self::Ranked => (true, false),
            Self::Proximity => (false, true),
            Self::Hybrid => (true, true),
            Self::Steiner
            | Self::All
            | Self::Naive
            | Self::Nearest
            | Self::Prototype
            | Self::Probe => return None,
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
    /// When a decision is learned from as a confident text.
    pub learning: LearningConfig,
    /// How many classified texts the retrieval index keeps.
    pub capacity: ClassifiedCapacity,
    /// How the LLM chooses among the candidates.
    pub choice: ChoiceMode,
    /// `scored` mode: weight of the LLM's belief against the retrieval scores (each candidate's
    /// score divided by the best).
    pub llm_weight: f64,
    /// Characters of each candidate's example shown in the prompt (ranked strategies; 0: none).
    pub example_chars: usize,
    /// Whether the text comes before or after the classes in the prompt.
    pub prompt_layout: PromptLayout,
    /// Distinct phrases the keyword statistics keep; past it the rarest are forgotten
    /// ([`tfidf::CorpusStats::bound`]). Part of what makes replicas equal.
    pub phrase_capacity: usize,
    /// A decision whose confidence is below this needs review: published as such, never
    /// learned as a confident text, pooled for discovery (docs/design/decisions.md).
    pub abstain_below: f64,
    /// The LLM is asked about a text only when retrieval's own decision has a confidence below
    /// this (docs/design/decisions.md); the strategies without scores always ask it.
    pub ask_below: f64,
    /// Reads a decision's evidence into its confidence: the shipped fit, or one fitted where
    /// gorag runs (`gorag calibrate`). The same on every replica.
    pub calibrator: confidence::Calibrator,
    /// Refit the confidence from the labelled texts the log brings: examples of labels that
    /// have several, and audited corrections ([`refit`]).
    pub refit_confidence: bool,
    /// When a text is published with no label ([`no_match`]).
    pub no_match: no_match::NoMatchConfig,
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
            learning: LearningConfig::default(),
            capacity: ClassifiedCapacity::default(),
            choice: ChoiceMode::default(),
            llm_weight: 0.0,
            example_chars: 150,
            prompt_layout: PromptLayout::default(),
            phrase_capacity: DEFAULT_PHRASE_CAPACITY,
            abstain_below: DEFAULT_ABSTAIN_BELOW,
            ask_below: DEFAULT_ASK_BELOW,
            calibrator: confidence::Calibrator::default(),
            refit_confidence: DEFAULT_REFIT_CONFIDENCE,
            no_match: no_match::NoMatchConfig::default(),
        }
    }
}

/// The label a text that matched no label ([`Status::NoMatch`]) is learned under: none. Such a
/// text joins the keyword statistics (every text does) and nothing else — no keyword, no
/// classified text ([`Engine::learn`]). Empty, as no label id can be; the changelog's learn
/// record carries it so.
pub const NO_LABEL: &str = "";

/// `abstain_below`'s default: a decision more likely wrong than right needs review
/// (docs/design/decisions.md has the coverage and accuracy it gives on every dataset).
pub const DEFAULT_ABSTAIN_BELOW: f64 = 0.5;

/// `refit_confidence`'s default (docs/design/decisions.md, "Refitting where gorag runs").
pub const DEFAULT_REFIT_CONFIDENCE: bool = true;

/// `ask_below`'s default: measured with the local model, whose answers did not raise accuracy
/// at any weight and threshold (docs/design/decisions.md), so it is not asked about texts.
pub const DEFAULT_ASK_BELOW: f64 = 0.0;

/// The keyword statistics' default capacity: above every paper dataset (WOS, all splits
/// together: 1.53 M distinct phrases), so the paper's figures are untouched, and about
/// 0.2 GB of memory once full (a table that was full keeps its allocation:
/// docs/design/keyword-statistics.md, "Bounded keyword statistics").
pub const DEFAULT_PHRASE_CAPACITY: usize = 2_000_000;

/// The smallest `phrase_capacity` accepted: a sanity floor (a table of a few hundred phrases
/// would forget a text's phrases almost as soon as it had counted them).
pub const MIN_PHRASE_CAPACITY: usize = 1_000;

/// What is wrong with a `phrase_capacity` (the service's config and `gorag eval` each name the
/// setting their own way in front of it), or None.
pub fn phrase_capacity_problem(capacity: usize) -> Option<String> {
    (capacity < MIN_PHRASE_CAPACITY).then(|| format!("must be at least {MIN_PHRASE_CAPACITY}"))
}

impl EngineConfig {
    /// How the index weighs terms: `naive` is the published baseline and keeps plain idf over
    /// the labelled examples whatever `ranking.term_weighting` says.
    pub fn term_weighting(&self) -> TermWeighting {
        match self.strategy {
            Strategy::Naive => TermWeighting::Idf,
            _ => self.ranking.term_weighting,
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
    /// Names and examples the embedding signal's encoder failed on: indexed all the same (the
    /// round is applied as on every replica), without a vector.
    #[serde(default)]
    pub unencoded: usize,
    /// A correction's findings ([`Engine::correct`]).
    #[serde(default)]
    pub correction: Option<correct::CorrectionReport>,
}

/// Which rule gave the candidate set: the steiner tree's cases, a baseline's, or the ranked
/// strategies' scores (published as `events::Basis`, whose variants say each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    // The ranked strategies', then the baselines', then the paper's tree's cases.
    RankedScores,
    SimilarExamples,
    AllLabels,
    NoEvidence,
    SteinerTree,
    SingleTerminal,
    TerminalNeighbours,
}

/// Who chose a decision's label: the LLM, or retrieval alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Llm,
    Graph,
}

/// What a decision is published as ([`Decisions::status`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Status {
    /// Its label, confident enough to apply (confidence at or above `abstain_below`).
    #[default]
    Decided,
    /// Its label is only a best guess: a person should look (confidence below `abstain_below`).
    NeedsReview,
    /// No label: nothing the active labels know explains the text ([`no_match`]).
    NoMatch,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub label: String,
    pub source: Source,
    pub hallucination: Option<HallucinationKind>,
    /// The probability that `label` is right ([`confidence`]).
    pub confidence: f64,
}

#[derive(Debug, Clone)]
pub struct Engine {
    config: EngineConfig,
    graph: KeywordGraph,
    stats: CorpusStats,
    labels: Labels,
    /// Labelled examples, names, descriptions, and classified texts (confident and tentative).
    index: TextIndex,
    /// The embedding signal, when an encoder was given ([`Engine::with_encoder`]).
    embeddings: Option<Embeddings>,
    /// Labelled outcomes from the log and the confidence's recalibration ([`refit`]).
    outcomes: refit::OutcomeLog,
    /// The `probe` peer's fit, derived from the labels' material ([`peers`]).
    probe: Option<std::sync::Arc<probe::Probe>>,
    /// The probe's weight as last fitted to the stream's examples ([`probe_weight`]; None:
    /// never fitted). Persisted: a refit would read a later index.
    fitted_probe_weight: Option<f64>,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Self {
        Self {
            index: TextIndex::new(config.capacity, config.term_weighting()),
            config,
            graph: KeywordGraph::new(),
            stats: CorpusStats::default(),
            labels: Labels::default(),
            embeddings: None,
            outcomes: refit::OutcomeLog::default(),
            probe: None,
            fitted_probe_weight: None,
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Switch the candidate strategy (the graph and statistics are shared by all strategies).
    pub fn set_strategy(&mut self, strategy: Strategy) {
        self.config.strategy = strategy;
        self.index.set_weighting(self.config.term_weighting());
        self.refit_probe();
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

    /// The label set ([`Labels`]).
    pub fn labels(&self) -> &Labels {
        &self.labels
    }

    /// What the engine reads of a text: analysis, and the encoder's readings ([`Analyzer`]).
    pub fn analyzer(&self) -> Analyzer<'_> {
        Analyzer {
            config: &self.config,
            labels: &self.labels,
            stats: &self.stats,
            index: &self.index,
            embeddings: self.embeddings.as_ref(),
        }
    }

    /// Retrieval: a text's candidate labels, rankings, label material ([`Retriever`]).
    pub fn retriever(&self) -> Retriever<'_> {
        Retriever {
            config: &self.config,
            labels: &self.labels,
            graph: &self.graph,
            index: &self.index,
            embeddings: self.embeddings.as_ref(),
            probe: self.probe.as_deref(),
            probe_weight: peers::weight_read(self),
        }
    }

    /// The outcomes the log brought and the recalibration fitted on them.
    pub fn outcomes(&self) -> &refit::OutcomeLog {
        &self.outcomes
    }

    /// The decision step: the LLM's prompt, its answer read into a decision, the decision's
    /// confidence and status ([`Decisions`]).
    pub fn decisions(&self) -> Decisions<'_> {
        Decisions {
            config: &self.config,
            labels: &self.labels,
            outcomes: &self.outcomes,
        }
    }

    /// Online indexing: the text always joins the statistics (which then forget their rarest
    /// phrases if it took them past `phrase_capacity`); when the decision is
    /// `confident`, its keywords that are not yet nodes are linked to `label` with cost
    /// `1 − s`, and the text joins the text graph under `label`; when it is not, the text is
    /// kept as a tentative text under `label` (heard only by texts nothing labelled explains).
    /// Only for active labels, and not in the `offline` ablation. Returns the number of keyword
    /// nodes added.
    /// A text that matched no label ([`NO_LABEL`]) joins the statistics only.
    pub fn learn(&mut self, analysis: &Analysis, label: &str, confident: bool) -> usize {
        let unlabelled = label == NO_LABEL;
        if !self.config.online_indexing || !(unlabelled || self.labels.is_active(label)) {
            return 0;
        }
        self.stats.add(&analysis.phrases);
        self.stats.bound(self.config.phrase_capacity);
        if unlabelled {
            return 0;
        }
        let position = self.labels.position(label).map(index::LabelPos::at);
        if !confident {
            if let Some(position) = position {
                self.index
                    .add_classified(DocKind::Tentative, position, &analysis.terms);
            }
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
        if let Some(position) = position {
            self.index
                .add_classified(DocKind::Seen, position, &analysis.terms);
        }
        added
    }
}

#[cfg(test)]
mod tests;
