//! `gorag eval`'s ranking flags: the scoring of the ranked strategies, with the service's
//! defaults.

use clap::{Args, ValueEnum};

use crate::engine::index::TermWeighting;
use crate::engine::probe::ProbeWeight;
use crate::engine::prompt::{ChoiceMode, PromptLayout};
use crate::engine::rank::RankingConfig;
use crate::engine::EngineConfig;

/// Scoring of the ranked strategies (`ranked`, `proximity`, `hybrid`); defaults are the
/// service's.
#[derive(Debug, Clone, Args)]
pub struct RankingArgs {
    /// Candidates offered to the LLM, best first.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().max_candidates)]
    pub max_candidates: usize,
    /// Weight of the similarity with a label's name.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().name_weight)]
    pub name_weight: f64,
    /// A label's examples count best first, each weighted this times the one before (0: the
    /// best example alone).
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().example_decay)]
    pub example_decay: f64,
    /// Weight of the similarity with a label's description.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().description_weight)]
    pub description_weight: f64,
    /// Nearest texts voting in the second hop (TopoRAG proximity).
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().proximity_k)]
    pub proximity_k: usize,
    /// Weight of the second hop in `hybrid`.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().proximity_weight)]
    pub proximity_weight: f64,
    /// Score margin above which a graph-only decision is learned from.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().learn_margin)]
    pub learn_margin: f64,
    /// Score margin above which an LLM decision agreeing with retrieval is learned from.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().learn_margin_agreeing)]
    pub learn_margin_agreeing: f64,
    /// Weight of the embedding signal (off with --embedding-model none).
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().embedding_weight)]
    pub embedding_weight: f64,
    /// Weight of a label name's cosine within the embedding signal.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().embedding_name_weight)]
    pub embedding_name_weight: f64,
    /// Texts of at most this many distinct terms are short: meaning weighs
    /// --embedding-weight-short in them.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().short_text_terms)]
    pub short_text_terms: usize,
    /// Weight of the embedding signal in a short text.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().embedding_weight_short)]
    pub embedding_weight_short: f64,
    /// Weight of a label name's cosine within a short text's embedding signal.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().embedding_name_weight_short)]
    pub embedding_name_weight_short: f64,
    /// A short text whose label reads less close in meaning than this needs review.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().short_text_min_meaning)]
    pub short_text_min_meaning: f64,
    /// A label sharing a word or two with the text that reads less close in meaning than this
    /// needs review.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().few_words_min_meaning)]
    pub few_words_min_meaning: f64,
    /// Weight of the probe's belief in `ranked` and `hybrid`: `fitted` to the stream's
    /// examples, or a number (0: off).
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = RankingConfig::default().probe_weight)]
    pub probe_weight: ProbeWeight,
    /// How the index weighs terms: `label-spread` (the labels a term occurs under, learned
    /// from classified texts too) or `idf` (over the labelled examples; `naive` always).
    #[arg(
        help_heading = "Ranking and choice (tuning)",
        long,
        value_enum,
        default_value = "label-spread"
    )]
    pub term_weighting: TermWeightingArg,
    /// How the LLM chooses: `free` (the paper's: a class name), `numbered`, or `scored` (its
    /// first-token log-probabilities fused with the retrieval scores).
    #[arg(
        help_heading = "Ranking and choice (tuning)",
        long,
        value_enum,
        default_value = "scored"
    )]
    pub choice: ChoiceArg,
    /// `scored`: weight of the LLM's belief against the retrieval scores.
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = EngineConfig::default().llm_weight)]
    pub llm_weight: f64,
    /// Characters of each candidate's most similar example shown in the prompt (0: none).
    #[arg(help_heading = "Ranking and choice (tuning)", long, default_value_t = EngineConfig::default().example_chars)]
    pub example_chars: usize,
    /// Where the text goes in the prompt: `list-first` (the paper's) or `text-first` (the
    /// classes and the instruction last).
    #[arg(
        help_heading = "Ranking and choice (tuning)",
        long,
        value_enum,
        default_value = "text-first"
    )]
    pub prompt_layout: PromptLayoutArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PromptLayoutArg {
    ListFirst,
    TextFirst,
}

impl From<PromptLayoutArg> for PromptLayout {
    fn from(value: PromptLayoutArg) -> Self {
        match value {
            PromptLayoutArg::ListFirst => PromptLayout::ListFirst,
            PromptLayoutArg::TextFirst => PromptLayout::TextFirst,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TermWeightingArg {
    LabelSpread,
    Idf,
}

impl From<TermWeightingArg> for TermWeighting {
    fn from(value: TermWeightingArg) -> Self {
        match value {
            TermWeightingArg::LabelSpread => TermWeighting::LabelSpread,
            TermWeightingArg::Idf => TermWeighting::Idf,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ChoiceArg {
    Free,
    Numbered,
    Scored,
}

impl From<ChoiceArg> for ChoiceMode {
    fn from(value: ChoiceArg) -> Self {
        match value {
            ChoiceArg::Free => ChoiceMode::Free,
            ChoiceArg::Numbered => ChoiceMode::Numbered,
            ChoiceArg::Scored => ChoiceMode::Scored,
        }
    }
}

impl RankingArgs {
    pub fn config(&self) -> RankingConfig {
        RankingConfig {
            max_candidates: self.max_candidates.max(1),
            example_decay: self.example_decay,
            name_weight: self.name_weight,
            description_weight: self.description_weight,
            proximity_k: self.proximity_k,
            proximity_weight: self.proximity_weight,
            learn_margin: self.learn_margin,
            learn_margin_agreeing: self.learn_margin_agreeing,
            embedding_weight: self.embedding_weight,
            embedding_name_weight: self.embedding_name_weight,
            short_text_terms: self.short_text_terms,
            embedding_weight_short: self.embedding_weight_short,
            embedding_name_weight_short: self.embedding_name_weight_short,
            short_text_min_meaning: self.short_text_min_meaning,
            few_words_min_meaning: self.few_words_min_meaning,
            probe_weight: self.probe_weight,
            term_weighting: self.term_weighting.into(),
            ..RankingConfig::default()
        }
    }
}
