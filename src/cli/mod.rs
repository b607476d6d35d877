//! Command-line interface (clap). Library code returns typed errors; `anyhow` lives here.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::classify::Classifier;
use crate::engine::keywords::{KeywordMode, KeywordSelection};
use crate::engine::prompt::{ChoiceMode, PromptLayout};
use crate::engine::rank::RankingConfig;
use crate::engine::{EngineConfig, Strategy};
use crate::eval::{self, dataset, report};
use crate::llm::{LlmClient, LlmSettings};

pub mod discover;
pub mod failure;
pub mod label_report;
pub mod labels;
pub mod labels_topic;
pub mod proposals;
pub mod serve;
pub mod topics;

#[derive(Debug, Parser)]
#[command(
    name = "gorag",
    version,
    about = "Graph-based online RAG for dynamic few-shot text classification"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the paper's DFSTC protocol on a dataset folder (`<k>shot/r<n>/{train,test}.tsv`).
    Eval(Box<EvalArgs>),
    /// Run the streaming service: labels and texts from Kafka, predictions to Kafka.
    Serve(serve::ServeArgs),
    /// Publish JSONL lines to a topic (rounds, texts).
    Publish(topics::PublishArgs),
    /// Print records of a topic (predictions, hallucinations, dead letters).
    Tail(topics::TailArgs),
    /// Show what a stopped service's state directory holds (digest, graph size, offsets).
    State(serve::StateArgs),
    /// Write the events' JSON Schemas (or check they are up to date).
    Schemas(serve::SchemasArgs),
    /// Draw a stopped service's labels as a map (HTML with SVG, and JSON), grouped into
    /// communities by the keywords they share.
    Report(label_report::ReportArgs),
    /// List the proposed classes (the proposals topic); accept or reject one.
    Proposals(proposals::ProposalsArgs),
    /// Manage labels: import a taxonomy file (CSV, JSONL) as round events.
    Labels(labels::LabelsArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StrategyArg {
    Steiner,
    All,
    Naive,
    Ranked,
    Proximity,
    Hybrid,
}

impl From<StrategyArg> for Strategy {
    fn from(value: StrategyArg) -> Self {
        match value {
            StrategyArg::Steiner => Strategy::Steiner,
            StrategyArg::All => Strategy::All,
            StrategyArg::Naive => Strategy::Naive,
            StrategyArg::Ranked => Strategy::Ranked,
            StrategyArg::Proximity => Strategy::Proximity,
            StrategyArg::Hybrid => Strategy::Hybrid,
        }
    }
}

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
    #[arg(long, default_value_t = crate::llm::setup::DEFAULT_TIMEOUT_SECS)]
    pub llm_timeout: f64,
    /// Retries after a failed attempt (429, 5xx, timeout, transport error, malformed answer).
    #[arg(long, default_value_t = crate::llm::setup::DEFAULT_RETRIES)]
    pub llm_retries: u32,
    /// LLM requests in flight at once.
    #[arg(long, default_value_t = 2)]
    pub llm_concurrency: usize,
    /// Directory of the persistent response cache.
    #[arg(long, env = "GORAG_LLM_CACHE")]
    pub llm_cache: Option<PathBuf>,
}

impl LlmArgs {
    pub fn client(&self) -> Result<Option<LlmClient>> {
        let settings = LlmSettings {
            url: self.llm.clone(),
            model: self.model.clone(),
            api_key_file: self.api_key_file.clone(),
            timeout_secs: self.llm_timeout,
            retries: self.llm_retries,
            concurrency: self.llm_concurrency,
            cache_dir: self.llm_cache.clone(),
        };
        Ok(settings.client()?)
    }
}

/// Scoring of the ranked strategies (`ranked`, `proximity`, `hybrid`); defaults are the
/// service's.
#[derive(Debug, Clone, Args)]
pub struct RankingArgs {
    /// Candidates offered to the LLM, best first.
    #[arg(long, default_value_t = RankingConfig::default().max_candidates)]
    pub max_candidates: usize,
    /// Weight of the similarity with a label's name.
    #[arg(long, default_value_t = RankingConfig::default().name_weight)]
    pub name_weight: f64,
    /// Weight of the similarity with a label's description.
    #[arg(long, default_value_t = RankingConfig::default().description_weight)]
    pub description_weight: f64,
    /// Nearest texts voting in the second hop (TopoRAG proximity).
    #[arg(long, default_value_t = RankingConfig::default().proximity_k)]
    pub proximity_k: usize,
    /// Weight of the second hop in `hybrid`.
    #[arg(long, default_value_t = RankingConfig::default().proximity_weight)]
    pub proximity_weight: f64,
    /// Score margin above which a graph-only decision is learned from.
    #[arg(long, default_value_t = RankingConfig::default().learn_margin)]
    pub learn_margin: f64,
    /// Score margin above which an LLM decision agreeing with retrieval is learned from.
    #[arg(long, default_value_t = RankingConfig::default().learn_margin_agreeing)]
    pub learn_margin_agreeing: f64,
    /// How the LLM chooses: `free` (the paper's: a class name), `numbered`, or `scored` (its
    /// first-token log-probabilities fused with the retrieval scores).
    #[arg(long, value_enum, default_value = "scored")]
    pub choice: ChoiceArg,
    /// `scored`: weight of the LLM's belief against the retrieval scores.
    #[arg(long, default_value_t = EngineConfig::default().llm_weight)]
    pub llm_weight: f64,
    /// Characters of each candidate's most similar example shown in the prompt (0: none).
    #[arg(long, default_value_t = EngineConfig::default().example_chars)]
    pub example_chars: usize,
    /// Where the text goes in the prompt: `list-first` (the paper's) or `text-first` (the
    /// classes and the instruction last).
    #[arg(long, value_enum, default_value = "text-first")]
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
            name_weight: self.name_weight,
            description_weight: self.description_weight,
            proximity_k: self.proximity_k,
            proximity_weight: self.proximity_weight,
            learn_margin: self.learn_margin,
            learn_margin_agreeing: self.learn_margin_agreeing,
            ..RankingConfig::default()
        }
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
    /// Candidate strategies to compare, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "hybrid")]
    pub strategy: Vec<StrategyArg>,
    #[command(flatten)]
    pub ranking: RankingArgs,
    #[command(flatten)]
    pub discover: discover::DiscoverArgs,
    /// Keyword extraction.
    #[arg(long, value_enum, default_value = "tfidf")]
    pub keywords: KeywordModeArg,
    /// Keywords kept per query text (terminals; added by online indexing).
    #[arg(long, default_value_t = KeywordSelection::default().top_k)]
    pub top_k: usize,
    /// Keywords kept per labelled example or description.
    #[arg(long, default_value_t = EngineConfig::default().example_selection.top_k)]
    pub example_top_k: usize,
    /// Minimum normalised TF-IDF score of a keyword.
    #[arg(long, default_value_t = 0.0)]
    pub min_score: f64,
    /// k of the `naive` strategy.
    #[arg(long, default_value_t = EngineConfig::default().naive_k)]
    pub naive_k: usize,
    /// Ablations, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub ablation: Vec<Ablation>,
    /// Whether label ids are readable names (auto: not when they look like `label 7`).
    #[arg(long, value_enum, default_value = "auto")]
    pub label_names: LabelNamesArg,
    #[command(flatten)]
    pub llm: LlmArgs,
    /// Folder for report.json and accuracy.svg.
    #[arg(long, default_value = "out/eval")]
    pub out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

pub async fn eval(args: EvalArgs) -> Result<()> {
    let held_out = match args.held_out {
        HeldOutArg::Test => dataset::HeldOut::Test,
        HeldOutArg::Dev => dataset::HeldOut::Dev,
    };
    let mut rounds = dataset::load(&args.dataset, args.shots, args.rounds, held_out)?;
    if let Some(limit) = args.limit {
        dataset::sample(&mut rounds, limit, args.seed);
    }
    let named = dataset::labels_have_names(
        &rounds,
        match args.label_names {
            LabelNamesArg::Auto => dataset::LabelNames::Auto,
            LabelNamesArg::Yes => dataset::LabelNames::Yes,
            LabelNamesArg::No => dataset::LabelNames::No,
        },
    );
    let llm = args.llm.client()?;
    let keyword_mode = match args.keywords {
        KeywordModeArg::Tfidf => KeywordMode::Tfidf,
        KeywordModeArg::Llm => KeywordMode::Llm,
    };
    if keyword_mode == KeywordMode::Llm && llm.is_none() {
        bail!("--keywords llm needs an LLM (drop --llm none)");
    }
    let classifier = Classifier::new(llm.clone(), keyword_mode);
    let mut base = EngineConfig::default();
    base.selection.top_k = args.top_k;
    base.selection.min_score = args.min_score;
    base.example_selection.top_k = args.example_top_k;
    base.example_selection.min_score = args.min_score;
    base.naive_k = args.naive_k;
    base.online_indexing = !args.ablation.contains(&Ablation::Offline);
    base.unit_costs = args.ablation.contains(&Ablation::Unit);
    base.keyword_input = args.ablation.contains(&Ablation::KeywordInput);
    base.ranking = args.ranking.config();
    base.choice = args.ranking.choice.into();
    base.llm_weight = args.ranking.llm_weight;
    base.example_chars = args.ranking.example_chars;
    base.prompt_layout = args.ranking.prompt_layout.into();

    let prepared = eval::prepare_rounds(&rounds, named, &classifier).await;
    if args.discover.discover {
        let engines: Vec<EngineConfig> = args
            .strategy
            .iter()
            .map(|s| EngineConfig {
                strategy: (*s).into(),
                ..base.clone()
            })
            .collect();
        discover::run(
            &args.discover,
            &rounds,
            &prepared,
            &engines,
            &classifier,
            args.seed,
            &args.out,
        )
        .await?;
        if let Some(llm) = &llm {
            llm.flush_cache().await?;
        }
        return Ok(());
    }
    let mut runs = Vec::new();
    for strategy in &args.strategy {
        let options = eval::EvalOptions {
            engine: EngineConfig {
                strategy: (*strategy).into(),
                ..base.clone()
            },
            concurrency: args.llm.llm_concurrency,
            progress: !args.quiet,
        };
        runs.push(eval::run(&rounds, &prepared, &options, &classifier).await?);
    }
    if let Some(llm) = &llm {
        llm.flush_cache().await?;
    }

    let dataset_name = args
        .dataset
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| args.dataset.display().to_string());
    let report = report::EvalReport {
        dataset: dataset_name,
        shots: args.shots,
        limit: args.limit,
        seed: args.seed,
        model: llm
            .as_ref()
            .map(|l| l.config().model.clone())
            .unwrap_or_else(|| "none".into()),
        keyword_mode: format!("{:?}", keyword_mode).to_lowercase(),
        choice: base.choice.as_str().to_string(),
        held_out: format!("{:?}", args.held_out).to_lowercase(),
        named_labels: named,
        ablations: args
            .ablation
            .iter()
            .map(|a| format!("{a:?}").to_lowercase())
            .collect(),
        runs,
        llm_usage: llm.as_ref().map(|l| l.usage().snapshot()),
    };
    print!("{}", report::table(&report));
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let json_path = args.out.join("report.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    let mut written = vec![json_path.display().to_string()];
    if let Some(map) = report.runs.iter().find_map(|r| r.label_map.as_ref()) {
        let title = format!("{} labels after the last round", report.dataset);
        let html_path = args.out.join("labels.html");
        let page = crate::discovery::map_html::html(&title, map, None);
        std::fs::write(&html_path, page)
            .with_context(|| format!("writing {}", html_path.display()))?;
        written.push(html_path.display().to_string());
    }
    let svg_path = args.out.join("accuracy.svg");
    std::fs::write(&svg_path, report::svg(&report))
        .with_context(|| format!("writing {}", svg_path.display()))?;
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
    written.push(svg_path.display().to_string());
    println!("wrote {}", written.join(", "));
    Ok(())
}
