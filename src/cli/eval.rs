//! `gorag eval`: the paper's DFSTC protocol (or `--discover`) over a dataset folder.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use super::discover;

mod no_match;
mod outputs;
mod ranking;
mod strategy;
use crate::config::EngineSection;
use crate::engine::embedding::TextEncoder;
use crate::engine::keywords::{KeywordMode, KeywordSelection};
use crate::engine::EngineConfig;
use crate::eval::{self, dataset, report};
use crate::llm::{LlmClient, LlmSettings};
use crate::rag::Classifier;
pub use ranking::RankingArgs;
pub use strategy::StrategyArg;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Ablation {
    /// No online indexing.
    Offline,
    /// Every edge costs 1.
    Unit,
    /// Keywords instead of the text in the prompt.
    KeywordInput,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KeywordModeArg {
    Tfidf,
    Llm,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OrderArg {
    /// As the files list them (the paper's protocol).
    File,
    /// A seeded shuffle per round (`--seed`).
    Shuffled,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HeldOutArg {
    /// test.tsv (dev.tsv where a round has none): for reporting.
    Test,
    /// dev.tsv: for tuning.
    Dev,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LabelNamesArg {
    Auto,
    Yes,
    No,
}

/// Where the LLM is and how to call it.
#[derive(Debug, Clone, Args)]
pub struct LlmArgs {
    /// OpenAI-compatible base URL, or `none` for retrieval-only (graph) predictions.
    #[arg(
        long,
        env = "GORAG_LLM_URL",
        default_value = "http://127.0.0.1:8080/v1"
    )]
    pub llm: String,
    /// Model name sent to the endpoint.
    #[arg(
        long,
        env = "GORAG_LLM_MODEL",
        default_value = "qwen2.5-coder-0.5b-instruct"
    )]
    pub model: String,
    /// File holding the API key (else $GORAG_LLM_API_KEY, else $OPENAI_API_KEY, else none).
    #[arg(long)]
    pub api_key_file: Option<PathBuf>,
    /// Timeout of one LLM attempt, in seconds.
    #[arg(help_heading = "LLM client", long, default_value_t = crate::llm::setup::DEFAULT_TIMEOUT_SECS)]
    pub llm_timeout: f64,
    /// Retries after a failed attempt (429, 5xx, timeout, transport error, malformed answer);
    /// at most 10.
    #[arg(help_heading = "LLM client", long, default_value_t = crate::llm::setup::DEFAULT_RETRIES)]
    pub llm_retries: u32,
    /// The time one LLM call may take from its first attempt on, retries included, in seconds.
    #[arg(help_heading = "LLM client", long, default_value_t = crate::llm::retry::DEFAULT_MAX_RETRY_SECS)]
    pub llm_max_retry_secs: f64,
    /// Largest LLM response read, in bytes; a larger one fails the call (not retried).
    #[arg(help_heading = "LLM client", long, default_value_t = crate::llm::DEFAULT_MAX_RESPONSE_BYTES)]
    pub llm_max_response_bytes: usize,
    /// LLM calls failed in a row that open the circuit breaker (0: never).
    #[arg(help_heading = "LLM client", long, default_value_t = crate::llm::breaker::DEFAULT_BREAKER_FAILURES)]
    pub llm_breaker_failures: u32,
    /// Seconds the open circuit breaker sends no LLM call before one probe.
    #[arg(help_heading = "LLM client", long, default_value_t = crate::llm::breaker::DEFAULT_BREAKER_COOLDOWN_SECS)]
    pub llm_breaker_cooldown_secs: f64,
    /// Send the API key over plain http to a host other than this machine.
    #[arg(help_heading = "LLM client", long)]
    pub llm_allow_insecure_key: bool,
    /// LLM requests in flight at once.
    #[arg(help_heading = "LLM client", long, default_value_t = 2)]
    pub llm_concurrency: usize,
    /// Directory of the persistent response cache.
    #[arg(help_heading = "LLM client", long, env = "GORAG_LLM_CACHE")]
    pub llm_cache: Option<PathBuf>,
}

impl LlmArgs {
    pub fn client(&self) -> Result<Option<LlmClient>> {
        let settings = LlmSettings {
            api_key_file: self.api_key_file.clone(),
            timeout_secs: self.llm_timeout,
            retries: self.llm_retries,
            concurrency: self.llm_concurrency,
            cache_dir: self.llm_cache.clone(),
            max_response_bytes: self.llm_max_response_bytes,
            max_retry_secs: self.llm_max_retry_secs,
            breaker_failures: self.llm_breaker_failures,
            breaker_cooldown_secs: self.llm_breaker_cooldown_secs,
            allow_insecure_key: self.llm_allow_insecure_key,
            ..LlmSettings::new(self.llm.clone(), self.model.clone())
        };
        Ok(settings.client()?)
    }
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Dataset folder, e.g. ../shared/data/paper/wos or examples/tiny.
    pub dataset: PathBuf,
    /// Shots per label (selects the `<k>shot` folder).
    #[arg(long, default_value_t = 1)]
    pub shots: u32,
    /// Rounds to run (default: every round present).
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Which held-out texts: `test` to report, `dev` to tune.
    #[arg(long, value_enum, default_value = "test")]
    pub held_out: HeldOutArg,
    /// Held-out texts per round, sampled with --seed (default: all).
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Order of each round's held-out texts: `file` (the paper's protocol) or `shuffled` (a
    /// seeded shuffle, with --seed: the classes interleaved, as in a live stream).
    #[arg(long, value_enum, default_value = "file")]
    pub order: OrderArg,
    /// Candidate strategies to compare, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "hybrid")]
    pub strategy: Vec<StrategyArg>,
    #[command(flatten)]
    pub ranking: RankingArgs,
    #[command(flatten)]
    pub discover: discover::DiscoverArgs,
    #[command(flatten)]
    pub no_match: no_match::NoMatchArgs,
    /// Keyword extraction.
    #[arg(
        help_heading = "Keywords and ablations (tuning)",
        long,
        value_enum,
        default_value = "tfidf"
    )]
    pub keywords: KeywordModeArg,
    /// Keywords kept per query text (terminals; added by online indexing).
    #[arg(help_heading = "Keywords and ablations (tuning)", long, default_value_t = KeywordSelection::default().top_k)]
    pub top_k: usize,
    /// Keywords kept per labelled example or description.
    #[arg(help_heading = "Keywords and ablations (tuning)", long, default_value_t = EngineConfig::default().example_selection.top_k)]
    pub example_top_k: usize,
    /// Minimum normalised TF-IDF score of a keyword.
    #[arg(
        help_heading = "Keywords and ablations (tuning)",
        long,
        default_value_t = 0.0
    )]
    pub min_score: f64,
    /// k of the `naive` strategy.
    #[arg(help_heading = "Keywords and ablations (tuning)", long, default_value_t = EngineConfig::default().naive_k)]
    pub naive_k: usize,
    /// Distinct phrases the keyword statistics keep (the rarest forgotten past it).
    #[arg(help_heading = "Keywords and ablations (tuning)", long, default_value_t = EngineConfig::default().phrase_capacity)]
    pub phrase_capacity: usize,
    /// Ablations, comma-separated.
    #[arg(
        help_heading = "Keywords and ablations (tuning)",
        long,
        value_delimiter = ','
    )]
    pub ablation: Vec<Ablation>,
    /// Whether label ids are readable names (auto: not when they look like `label 7`).
    #[arg(long, value_enum, default_value = "auto")]
    pub label_names: LabelNamesArg,
    #[command(flatten)]
    pub llm: LlmArgs,
    /// Ask the LLM only about texts whose retrieval-only confidence is below this (1: every
    /// text, which also prints the curve of accuracy against calls for other weights and
    /// thresholds, and writes the chosen ones to llm-calibration.toml).
    #[arg(help_heading = "Confidence, review and the LLM's say", long, default_value_t = EngineConfig::default().ask_below)]
    pub ask_below: f64,
    /// Predictions under this confidence need review (not learned from).
    #[arg(help_heading = "Confidence, review and the LLM's say", long, default_value_t = EngineConfig::default().abstain_below)]
    pub abstain_below: f64,
    /// A calibrator from `gorag calibrate --out` instead of the shipped one.
    #[arg(help_heading = "Confidence, review and the LLM's say", long)]
    pub calibrator: Option<PathBuf>,
    /// Simulate a reviewer who corrects, as they come, texts that need review — at most this
    /// share of each round's texts — to their gold label (0: none; docs/design/decisions.md).
    #[arg(
        help_heading = "Confidence, review and the LLM's say",
        long,
        default_value_t = 0.0
    )]
    pub review_budget: f64,
    /// Simulate an audit: this share of each round's texts, spread evenly whatever their
    /// confidence, corrected to their gold label as audits, which refit the confidence (0: none).
    #[arg(
        help_heading = "Confidence, review and the LLM's say",
        long,
        default_value_t = 0.0
    )]
    pub audit_share: f64,
    /// Refit the confidence from each round's examples (labels with several) and the audits
    /// as the service does (`engine.refit_confidence`).
    #[arg(help_heading = "Confidence, review and the LLM's say", long, default_value_t = EngineConfig::default().refit_confidence, action = clap::ArgAction::Set)]
    pub refit_confidence: bool,
    /// Label names and descriptions by label id: a CSV or JSONL file in the format of `gorag
    /// labels import` (its examples are not used: the split's are).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// The embedding signal for `ranked` and `hybrid`, and the encoder of `nearest`: a model's
    /// name (fetched by scripts/embedding-model.sh NAME), a folder path, or `none` (words only).
    #[arg(long, default_value_t = crate::embed::EmbeddingModel::default())]
    pub embedding_model: crate::embed::EmbeddingModel,
    /// Tokens of a text a BERT encoder reads (1 to 512; `engine.embedding_max_tokens`).
    #[arg(long, default_value_t = crate::embed::MAX_TOKENS)]
    pub embedding_max_tokens: usize,
    /// Folder for report.json, accuracy.svg, each text's prediction (texts-STRATEGY.jsonl and
    /// .csv) and per-label figures (labels-STRATEGY.csv, confusions-STRATEGY.csv).
    #[arg(long, default_value = "out/eval")]
    pub out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

pub async fn eval(args: EvalArgs) -> Result<()> {
    let decay = args.ranking.example_decay;
    if !(0.0..1.0).contains(&decay) {
        bail!("--example-decay: must be at least 0 and below 1 (got {decay})");
    }
    if let Some(problem) = crate::engine::phrase_capacity_problem(args.phrase_capacity) {
        bail!("--phrase-capacity: {problem}");
    }
    for (flag, value) in [
        ("--ask-below", args.ask_below),
        ("--abstain-below", args.abstain_below),
        ("--review-budget", args.review_budget),
        ("--audit-share", args.audit_share),
    ] {
        if !(0.0..=1.0).contains(&value) {
            bail!("{flag}: must be from 0 to 1 (got {value})");
        }
    }
    let (rounds, named) = args.rounds()?;
    let (classifier, llm, keyword_mode) = args.classifier()?;
    let calibrator = args
        .calibrator
        .as_deref()
        .map(crate::engine::confidence::Calibrator::read)
        .transpose()
        .context("--calibrator")?;
    let mut engines = args.engines();
    if let Some(calibrator) = calibrator {
        for engine in &mut engines {
            engine.calibrator = calibrator.clone();
        }
    }
    let rule = args.no_match.config()?;
    for engine in &mut engines {
        engine.no_match = rule;
    }
    let out_of_scope = args.no_match.texts()?;
    // Before any LLM call: a bad model folder fails at once.
    let encoder = args.encoder()?;
    if let Some(llm) = &llm {
        if let Err(error) = llm.check_endpoint().await {
            bail!(
                "the LLM endpoint {} did not answer a test request ({error}). gorag eval asks \
                 it to describe named labels (and, with --ask-below, to choose). Start it \
                 (scripts/llm.sh start runs the local model), point --llm at another \
                 OpenAI-compatible endpoint (its key in $GORAG_LLM_API_KEY or --api-key-file), \
                 or evaluate retrieval alone with --llm none",
                args.llm.llm
            );
        }
    }
    let taxonomy = args.taxonomy(&rounds)?;
    let prepared = eval::prepare_rounds(&rounds, named, &taxonomy, &classifier).await;
    if args.discover.discover {
        let outcome = discover::run(
            &args.discover,
            &rounds,
            &prepared,
            discover::Engines {
                configs: &engines,
                encoder: encoder.as_ref(),
            },
            &classifier,
            args.seed,
            &args.out,
        )
        .await;
        // The cache keeps what was answered even when the run failed part-way.
        if let Some(llm) = &llm {
            llm.flush_cache().await?;
        }
        return outcome;
    }
    let mut runs = Vec::new();
    for engine in engines {
        let options = eval::EvalOptions {
            engine,
            encoder: encoder.clone(),
            concurrency: args.llm.llm_concurrency,
            progress: !args.quiet,
            review_budget: args.review_budget,
            audit_share: args.audit_share,
            out_of_scope: out_of_scope.clone(),
        };
        runs.push(eval::run(&rounds, &prepared, &options, &classifier).await?);
    }
    if let Some(llm) = &llm {
        llm.flush_cache().await?;
    }
    let report = args.report(runs, named, llm.as_ref(), keyword_mode);
    print!("{}", report::table(&report));
    print!("{}", outputs::confusion_summary(&report));
    let written = outputs::write_outputs(&report, &args.out)?;
    if let Some(usage) = &report.llm_usage {
        println!(
            "llm: {} calls ({} from cache), {} attempts, {} retries, {} failures, {} prompt + {} completion tokens",
            usage.calls,
            usage.cache_hits,
            usage.attempts,
            usage.retries,
            usage.failures,
            usage.prompt_tokens,
            usage.completion_tokens
        );
    }
    println!("wrote {}", written.join(", "));
    Ok(())
}

impl EvalArgs {
    /// The embedding signal's encoder, loaded once and shared by every strategy.
    fn encoder(&self) -> Result<Option<Arc<dyn TextEncoder>>> {
        if self.embedding_model == crate::embed::EmbeddingModel::Off
            && self
                .strategy
                .iter()
                .any(|s| matches!(s, StrategyArg::Nearest | StrategyArg::Prototype))
        {
            bail!(
                "--strategy nearest and prototype read only the sentence encoder: give it one \
                 with --embedding-model (not none)"
            );
        }
        if !self.reads_meaning() {
            return Ok(None);
        }
        // The service's checks, named by their flags (`few_words_min_meaning` → `--few-words-min-meaning`).
        if let Some(problem) = self.ranking.config().problems().first() {
            let (key, why) = problem.split_once(':').unwrap_or((problem.as_str(), ""));
            bail!("--{}:{why}", key.replace('_', "-"));
        }
        let Some(model) = self
            .embedding_model
            .load(self.embedding_max_tokens)
            .context("--embedding-model (the embedding signal)")?
        else {
            return Ok(None);
        };
        Ok(Some(Arc::new(crate::embed::CachedEncoder::new(model))))
    }

    /// The classifier (LLM client, when one is configured, and keyword mode).
    fn classifier(&self) -> Result<(Classifier, Option<LlmClient>, KeywordMode)> {
        let llm = self.llm.client()?;
        let keyword_mode = match self.keywords {
            KeywordModeArg::Tfidf => KeywordMode::Tfidf,
            KeywordModeArg::Llm => KeywordMode::Llm,
        };
        if keyword_mode == KeywordMode::Llm && llm.is_none() {
            bail!("--keywords llm needs an LLM (drop --llm none)");
        }
        Ok((
            Classifier::new(llm.clone(), keyword_mode),
            llm,
            keyword_mode,
        ))
    }

    /// Names and descriptions from `--labels`, checked as `gorag labels import` checks the file;
    /// says how many labels of the split it names and describes, and which of its labels the
    /// split does not have.
    fn taxonomy(&self, rounds: &[dataset::RoundData]) -> Result<dataset::Taxonomy> {
        let mut taxonomy = dataset::Taxonomy::new();
        let Some(path) = &self.labels else {
            return Ok(taxonomy);
        };
        let format = super::labels::format_of(path)?;
        let text = super::labels::read_text_file(path)?;
        let events = crate::events::taxonomy::rounds(&text, format, "eval", &Default::default())
            .with_context(|| format!("--labels {}", path.display()))?;
        for event in &events {
            if let crate::events::LabelEvent::Round { labels, .. } = event {
                for spec in labels {
                    taxonomy.insert(
                        spec.id.clone(),
                        (spec.name.clone(), spec.description.clone()),
                    );
                }
            }
        }
        let in_split: std::collections::HashSet<&str> = rounds
            .iter()
            .flat_map(|r| r.train.iter().map(|s| s.label.as_str()))
            .collect();
        let count = |pick: fn(&(Option<String>, Option<String>)) -> bool| {
            taxonomy
                .iter()
                .filter(|(id, v)| in_split.contains(id.as_str()) && pick(v))
                .count()
        };
        let mut unknown: Vec<&str> = taxonomy
            .keys()
            .map(String::as_str)
            .filter(|id| !in_split.contains(id))
            .collect();
        unknown.sort_unstable();
        println!(
            "labels from {}: {} of the split's {} named, {} described{}",
            path.display(),
            count(|(name, _)| name.is_some()),
            in_split.len(),
            count(|(_, description)| description.is_some()),
            if unknown.is_empty() {
                String::new()
            } else {
                format!("; not in the split: {}", unknown.join(", "))
            }
        );
        Ok(taxonomy)
    }

    /// Whether the embedding signal is on and a compared strategy reads it (`ranked`,
    /// `hybrid`): only then is the model loaded.
    fn reads_meaning(&self) -> bool {
        self.embedding_model != crate::embed::EmbeddingModel::Off
            && self
                .engines()
                .iter()
                .any(|engine| engine.strategy.reads_meaning())
    }

    /// One engine configuration per `--strategy`, otherwise alike.
    fn engines(&self) -> Vec<EngineConfig> {
        let base = self.engine_config();
        self.strategy
            .iter()
            .map(|s| EngineConfig {
                strategy: (*s).into(),
                ..base.clone()
            })
            .collect()
    }

    /// The report of the paper's protocol over `runs`, with what produced it.
    fn report(
        &self,
        runs: Vec<eval::StrategyRun>,
        named: bool,
        llm: Option<&LlmClient>,
        keyword_mode: KeywordMode,
    ) -> report::EvalReport {
        report::EvalReport {
            dataset: self.dataset_name(),
            shots: self.shots,
            limit: self.limit,
            seed: self.seed,
            order: value_name(self.order),
            model: llm.map_or_else(|| "none".into(), |l| l.config().model.clone()),
            keyword_mode: keyword_mode.as_str().to_string(),
            choice: self.engine_config().choice.as_str().to_string(),
            held_out: value_name(self.held_out),
            named_labels: named,
            embedding_model: self
                .reads_meaning()
                .then(|| self.embedding_model.short_name()),
            ablations: self
                .ablation
                .iter()
                .map(|a| format!("{a:?}").to_lowercase())
                .collect(),
            runs,
            llm_usage: llm.map(|l| l.usage().snapshot()),
        }
    }

    /// The split's rounds (sampled with `--limit`), and whether its label ids are names.
    fn rounds(&self) -> Result<(Vec<dataset::RoundData>, bool)> {
        let held_out = match self.held_out {
            HeldOutArg::Test => dataset::HeldOut::Test,
            HeldOutArg::Dev => dataset::HeldOut::Dev,
        };
        let mut rounds = dataset::load(&self.dataset, self.shots, self.rounds, held_out)?;
        if let Some(limit) = self.limit {
            dataset::sample(&mut rounds, limit, self.seed);
        }
        if matches!(self.order, OrderArg::Shuffled) {
            dataset::shuffle(&mut rounds, self.seed);
        }
        let named = dataset::labels_have_names(
            &rounds,
            match self.label_names {
                LabelNamesArg::Auto => dataset::LabelNames::Auto,
                LabelNamesArg::Yes => dataset::LabelNames::Yes,
                LabelNamesArg::No => dataset::LabelNames::No,
            },
        );
        Ok((rounds, named))
    }

    /// The engine every strategy shares: `[engine]`'s defaults with this run's flags over
    /// them, mapped to the engine by the one mapping serve and classify use
    /// ([`EngineSection::engine_config`]); then what only an evaluation varies (the paper's
    /// baselines and the ablations have no `[engine]` key).
    fn engine_config(&self) -> EngineConfig {
        let section = EngineSection {
            top_k: self.top_k,
            example_top_k: self.example_top_k,
            online_indexing: !self.ablation.contains(&Ablation::Offline),
            phrase_capacity: self.phrase_capacity,
            choice: self.ranking.choice.into(),
            llm_weight: self.ranking.llm_weight,
            abstain_below: self.abstain_below,
            refit_confidence: self.refit_confidence,
            example_chars: self.ranking.example_chars,
            prompt_layout: self.ranking.prompt_layout.into(),
            ranking: self.ranking.config(),
            ..EngineSection::default()
        };
        let mut base = section.engine_config();
        base.ask_below = self.ask_below;
        base.selection.min_score = self.min_score;
        base.example_selection.min_score = self.min_score;
        base.naive_k = self.naive_k;
        base.unit_costs = self.ablation.contains(&Ablation::Unit);
        base.keyword_input = self.ablation.contains(&Ablation::KeywordInput);
        base
    }

    fn dataset_name(&self) -> String {
        self.dataset
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.dataset.display().to_string())
    }
}

/// A flag's value as the command line spells it.
fn value_name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}
