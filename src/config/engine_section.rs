//! `[engine]`: how texts are classified. Each key is declared once, here or in the engine's
//! own settings it nests (`[engine.ranking]`: [`RankingConfig`], `[engine.learning]`:
//! [`LearningConfig`], `[engine.capacity]`: [`ClassifiedCapacity`], `[engine.no_match]`:
//! [`NoMatchConfig`]), with its default, its check ([`EngineSection::problems`]) and its doc
//! comment; `gorag eval` reads the same structs as flags (`--top-k` is `engine.top_k`), so a
//! key and its flag cannot drift apart (docs/maintainers.md, "Add a configuration key").

use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

use crate::embed::EmbeddingModel;
use crate::engine::confidence::Calibrator;
use crate::engine::index::ClassifiedCapacity;
use crate::engine::keywords::KeywordMode;
use crate::engine::learning::LearningConfig;
use crate::engine::no_match::NoMatchConfig;
use crate::engine::prompt::{ChoiceMode, PromptLayout};
use crate::engine::rank::RankingConfig;
use crate::engine::{phrase_capacity_problem, EngineConfig, Strategy};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
#[command(next_help_heading = "Engine (engine.*)")]
pub struct EngineSection {
    /// How candidate labels are found (`gorag eval` compares several: its own `--strategy`).
    #[arg(skip = EngineSection::default().strategy)]
    pub strategy: Strategy,
    /// Where a text's keywords come from: `tfidf`, or `llm` (one more LLM call per text; the
    /// paper's LLM keyword extraction, TF-IDF when that call fails).
    #[arg(long, value_enum, default_value_t = EngineSection::default().keywords)]
    pub keywords: KeywordMode,
    /// Keywords kept per text (terminals; added by online indexing).
    #[arg(long, default_value_t = EngineSection::default().top_k)]
    pub top_k: usize,
    /// Keywords kept per labelled example or description.
    #[arg(long, default_value_t = EngineSection::default().example_top_k)]
    pub example_top_k: usize,
    /// Online indexing (`gorag eval`: off with `--ablation offline`).
    #[arg(skip = EngineSection::default().online_indexing)]
    pub online_indexing: bool,
    /// Distinct phrases the keyword statistics keep (the rarest forgotten past it); the same
    /// on every replica.
    #[arg(long, default_value_t = EngineSection::default().phrase_capacity)]
    pub phrase_capacity: usize,
    /// Longest text (in characters) put into a prompt.
    #[arg(long, default_value_t = EngineSection::default().max_prompt_chars)]
    pub max_prompt_chars: usize,
    /// How the LLM chooses among the candidates: `free` (the paper's: a class name),
    /// `numbered`, or `scored` (its first-token log-probabilities fused with the retrieval
    /// scores).
    #[arg(long, value_enum, default_value_t = EngineSection::default().choice)]
    pub choice: ChoiceMode,
    /// `scored`: weight of the LLM's belief against the retrieval scores.
    #[arg(long, default_value_t = EngineSection::default().llm_weight)]
    pub llm_weight: f64,
    /// Predictions whose confidence is below this are published as `needs_review` and not
    /// learned from (docs/design/decisions.md).
    #[arg(long, default_value_t = EngineSection::default().abstain_below)]
    pub abstain_below: f64,
    /// A calibrator fitted where gorag runs (`gorag calibrate --out FILE`); unset: the shipped
    /// fit. The same on every replica.
    #[arg(long)]
    pub calibrator: Option<PathBuf>,
    /// The calibrator read from `calibrator` when the configuration was loaded.
    #[serde(skip)]
    #[arg(skip)]
    pub loaded_calibrator: Option<Calibrator>,
    /// Refit the confidence from the labelled texts the log brings (examples of labels with
    /// several, audited corrections); derived state of each instance (docs/design/decisions.md).
    #[arg(long, action = clap::ArgAction::Set, default_value_t = EngineSection::default().refit_confidence)]
    pub refit_confidence: bool,
    /// When a text that nothing the labels know explains is published with no label (`status:
    /// no_match`) rather than a label it shares a word or two with (docs/guide/classify.md,
    /// "No match"). `no_match = false` is read as `[engine.no_match] enabled = false`.
    #[serde(deserialize_with = "no_match_or_switch")]
    #[command(flatten)]
    pub no_match: NoMatchConfig,
    /// Characters of each candidate's most similar example in the prompt (0: none).
    #[arg(long, default_value_t = EngineSection::default().example_chars)]
    pub example_chars: usize,
    /// `text_first` (the text, then the classes and the instruction) or `list_first` (the
    /// paper's order).
    #[arg(long, value_enum, default_value_t = EngineSection::default().prompt_layout)]
    pub prompt_layout: PromptLayout,
    /// Scoring and candidates of the ranked strategies (`[engine.ranking]`).
    #[command(flatten)]
    pub ranking: RankingConfig,
    /// When a decision is learned from as a confident text (`[engine.learning]`).
    #[command(flatten)]
    pub learning: LearningConfig,
    /// How many classified texts the retrieval index keeps (`[engine.capacity]`); the same on
    /// every replica.
    #[command(flatten)]
    pub capacity: ClassifiedCapacity,
    /// The embedding signal's sentence encoder: a model's name (fetched by
    /// `scripts/embedding-model.sh NAME` into `$GORAG_HOME/embedding/`), a folder path, or
    /// `none` (words only). Default `potion-base-8M` (docs/design/sentence-encoder.md).
    #[arg(long, default_value_t = EngineSection::default().embedding_model, help_heading = None)]
    pub embedding_model: EmbeddingModel,
    /// Tokens of a text a BERT encoder (all-MiniLM-L6-v2, and its int8 export) reads, 1 to
    /// 512; default 256, the model's own limit. Fewer cost less on long texts
    /// (docs/design/sentence-encoder.md, "The int8 encoder"); a static model keeps its own
    /// limit; multilingual-e5-small reads the first 5 × this many bytes.
    #[arg(long, default_value_t = EngineSection::default().embedding_max_tokens)]
    pub embedding_max_tokens: usize,
}

/// `[engine.no_match]`, or the switch alone (`no_match = false`), as configurations written
/// before the rule's thresholds had a table of their own say it.
fn no_match_or_switch<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<NoMatchConfig, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Switch(bool),
        Table(NoMatchConfig),
    }
    Ok(match Written::deserialize(deserializer)? {
        Written::Switch(enabled) => NoMatchConfig {
            enabled,
            ..NoMatchConfig::default()
        },
        Written::Table(config) => config,
    })
}

impl Default for EngineSection {
    fn default() -> Self {
        let defaults = EngineConfig::default();
        Self {
            strategy: defaults.strategy,
            keywords: KeywordMode::default(),
            top_k: defaults.selection.top_k,
            example_top_k: defaults.example_selection.top_k,
            online_indexing: defaults.online_indexing,
            phrase_capacity: defaults.phrase_capacity,
            max_prompt_chars: defaults.max_prompt_chars,
            choice: defaults.choice,
            llm_weight: defaults.llm_weight,
            abstain_below: defaults.abstain_below,
            calibrator: None,
            loaded_calibrator: None,
            refit_confidence: defaults.refit_confidence,
            no_match: defaults.no_match,
            example_chars: defaults.example_chars,
            prompt_layout: defaults.prompt_layout,
            ranking: defaults.ranking,
            learning: defaults.learning,
            capacity: defaults.capacity,
            embedding_model: EmbeddingModel::default(),
            embedding_max_tokens: crate::embed::MAX_TOKENS,
        }
    }
}

impl EngineSection {
    /// The engine's configuration these settings give (what only an evaluation varies, the
    /// paper's baselines and ablations, keeps the engine's defaults).
    pub fn engine_config(&self) -> EngineConfig {
        let mut config = EngineConfig {
            strategy: self.strategy,
            online_indexing: self.online_indexing,
            phrase_capacity: self.phrase_capacity,
            max_prompt_chars: self.max_prompt_chars,
            choice: self.choice,
            llm_weight: self.llm_weight,
            abstain_below: self.abstain_below,
            calibrator: self.loaded_calibrator.clone().unwrap_or_default(),
            refit_confidence: self.refit_confidence,
            no_match: self.no_match,
            example_chars: self.example_chars,
            prompt_layout: self.prompt_layout,
            ranking: self.ranking.clone(),
            learning: self.learning,
            capacity: self.capacity,
            ..Default::default()
        };
        config.selection.top_k = self.top_k;
        config.example_selection.top_k = self.example_top_k;
        config
    }

    /// What is wrong with the settings, each problem starting with its key
    /// (`engine.ranking.example_decay: must be below 1`); none: they hold. The service's loader
    /// and `gorag eval` both check with this.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.top_k == 0 {
            problems.push("top_k: must be at least 1".to_string());
        }
        if self.example_top_k == 0 {
            problems.push("example_top_k: must be at least 1".to_string());
        }
        if let Some(problem) = phrase_capacity_problem(self.phrase_capacity) {
            problems.push(format!("phrase_capacity: {problem}"));
        }
        if !(0.0..=1.0).contains(&self.abstain_below) {
            problems.push("abstain_below: must be a confidence from 0 to 1".to_string());
        }
        if !(self.llm_weight.is_finite() && self.llm_weight >= 0.0) {
            problems.push("llm_weight: must be a number ≥ 0".to_string());
        }
        problems.extend(
            self.no_match
                .problems()
                .into_iter()
                .map(|p| format!("no_match.{p}")),
        );
        problems.extend(
            self.ranking
                .problems()
                .into_iter()
                .map(|p| format!("ranking.{p}")),
        );
        problems.extend(
            self.learning
                .problems()
                .into_iter()
                .map(|p| format!("learning.{p}")),
        );
        if self.strategy.reads_only_meaning() && self.embedding_model == EmbeddingModel::Off {
            problems.push(
                "strategy: nearest and prototype read only the sentence encoder; set \
                 engine.embedding_model to a model, not none"
                    .to_string(),
            );
        }
        if !(1..=crate::embed::TOKEN_CAPACITY).contains(&self.embedding_max_tokens) {
            problems.push(format!(
                "embedding_max_tokens: must be 1 to {}",
                crate::embed::TOKEN_CAPACITY
            ));
        }
        problems
            .into_iter()
            .map(|problem| format!("engine.{problem}"))
            .collect()
    }
}
