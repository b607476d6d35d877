//! `gorag eval`: the paper's DFSTC protocol (or `--discover`) over a dataset folder.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

mod discover;
mod out_of_scope;
mod outputs;
use crate::config::{EngineSection, LlmSection};
use crate::engine::embedding::TextEncoder;
use crate::engine::keywords::KeywordMode;
use crate::engine::{EngineConfig, Strategy};
use crate::eval::{self, dataset, report};
use crate::llm::LlmClient;
use crate::one_text::TextSteps;

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
    #[arg(long, value_enum, value_delimiter = ',', default_value = "hybrid")]
    pub strategy: Vec<Strategy>,
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
    /// A CSV file of texts (a `text` column) that fit none of the dataset's classes: classified
    /// after every round, never learned from; the table gives the share published decided,
    /// needing review, with no label (examples/out-of-scope/texts.csv is the repository's).
    #[arg(help_heading = "No match (engine.no_match)", long)]
    pub out_of_scope: Option<PathBuf>,
    /// Label names and descriptions by label id: a CSV or JSONL file in the format of `gorag
    /// labels import` (its examples are not used: the split's are).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Folder for report.json, accuracy.svg, each text's prediction (texts-STRATEGY.jsonl and
    /// .csv) and per-label figures (labels-STRATEGY.csv, confusions-STRATEGY.csv).
    #[arg(long, default_value = "out/eval")]
    pub out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    // The flattened sections last: a section's heading stays on for the flags after it.
    #[command(flatten)]
    pub discover: discover::DiscoverArgs,
    /// The service's `[engine]` settings, each key a flag (`engine.ranking.name_weight` is
    /// `--name-weight`), with the service's defaults and checks.
    #[command(flatten)]
    pub engine: EngineSection,
    /// The service's `[llm]` settings as flags.
    #[command(flatten)]
    pub llm: LlmSection,
}

pub async fn eval(args: EvalArgs) -> Result<()> {
    args.check()?;
    let (rounds, named) = args.rounds()?;
    let (classifier, llm) = args.classifier()?;
    let engines = args.engines()?;
    let out_of_scope = match &args.out_of_scope {
        Some(path) => out_of_scope::read_texts(path)
            .with_context(|| format!("--out-of-scope {}", path.display()))?,
        None => Vec::new(),
    };
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
                args.llm.url
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
            concurrency: args.llm.concurrency,
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
    let report = args.report(runs, named, llm.as_ref());
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
    /// Every problem with the settings, as the service's loader finds them (each named by its
    /// key; the flag is the key's last part), and with the evaluation's own shares.
    fn check(&self) -> Result<()> {
        let mut problems = self.engine.problems();
        problems.extend(self.llm.problems());
        if self.engine.embedding_model == crate::embed::EmbeddingModel::Off
            && self.strategy.iter().any(|s| s.reads_only_meaning())
        {
            problems.push(
                "--strategy nearest and prototype read only the sentence encoder: give it one \
                 with --embedding-model (not none)"
                    .to_string(),
            );
        }
        if self.discover.discover {
            if let Err(problem) = self.discover.config.validate() {
                problems.push(format!("discovery.{problem}"));
            }
        }
        for (flag, value) in [
            ("--review-budget", self.review_budget),
            ("--audit-share", self.audit_share),
        ] {
            if !(0.0..=1.0).contains(&value) {
                problems.push(format!("{flag}: must be from 0 to 1 (got {value})"));
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        bail!(
            "{}",
            problems
                .iter()
                .map(|p| with_flag(p))
                .collect::<Vec<_>>()
                .join("; ")
        )
    }

    /// The embedding signal's encoder, loaded once and shared by every strategy.
    fn encoder(&self) -> Result<Option<Arc<dyn TextEncoder>>> {
        if !self.reads_meaning() {
            return Ok(None);
        }
        let Some(model) = self
            .engine
            .embedding_model
            .load(self.engine.embedding_max_tokens)
            .context("--embedding-model (the embedding signal)")?
        else {
            return Ok(None);
        };
        Ok(Some(Arc::new(crate::embed::CachedEncoder::new(model))))
    }

    /// The classifier, and the LLM client when one is configured.
    fn classifier(&self) -> Result<(TextSteps, Option<LlmClient>)> {
        let llm = self.llm.settings().client()?;
        let keyword_mode = self.engine.keywords;
        if keyword_mode == KeywordMode::Llm && llm.is_none() {
            bail!("--keywords llm needs an LLM (drop --llm none)");
        }
        Ok((TextSteps::new(llm.clone(), keyword_mode), llm))
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
        self.engine.embedding_model != crate::embed::EmbeddingModel::Off
            && self.strategy.iter().any(|s| s.reads_meaning())
    }

    /// One engine configuration per `--strategy`, otherwise alike (with `--calibrator`'s fit
    /// read once).
    fn engines(&self) -> Result<Vec<EngineConfig>> {
        let mut base = self.engine_config();
        if let Some(path) = &self.engine.calibrator {
            base.calibrator =
                crate::engine::confidence::Calibrator::read(path).context("--calibrator")?;
        }
        Ok(self
            .strategy
            .iter()
            .map(|&strategy| EngineConfig {
                strategy,
                ..base.clone()
            })
            .collect())
    }

    /// The report of the paper's protocol over `runs`, with what produced it.
    fn report(
        &self,
        runs: Vec<eval::StrategyRun>,
        named: bool,
        llm: Option<&LlmClient>,
    ) -> report::EvalReport {
        report::EvalReport {
            dataset: self.dataset_name(),
            shots: self.shots,
            limit: self.limit,
            seed: self.seed,
            order: value_name(self.order),
            model: llm.map_or_else(|| "none".into(), |l| l.config().model.clone()),
            keyword_mode: self.engine.keywords.as_str().to_string(),
            choice: self.engine.choice.as_str().to_string(),
            held_out: value_name(self.held_out),
            named_labels: named,
            embedding_model: self
                .reads_meaning()
                .then(|| self.engine.embedding_model.short_name()),
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

    /// The engine every strategy shares: `[engine]` as the flags set it, mapped to the engine
    /// by the one mapping serve and classify use ([`EngineSection::engine_config`]); then what
    /// only an evaluation varies (the paper's baselines and the ablations have no `[engine]`
    /// key) and when to ask the LLM (`llm.ask_below`).
    fn engine_config(&self) -> EngineConfig {
        let mut base = self.engine.engine_config();
        base.online_indexing = !self.ablation.contains(&Ablation::Offline);
        base.ask_below = self.llm.ask_below;
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

/// A problem the settings' checks name by key (`engine.ranking.example_decay: …`), with the
/// flag that sets the key in front (`--example-decay (engine.ranking.example_decay): …`).
fn with_flag(problem: &str) -> String {
    let Some((key, why)) = problem.split_once(':') else {
        return problem.to_string();
    };
    let field = key.rsplit('.').next().unwrap_or(key);
    let command = EvalArgs::augment_args(clap::Command::new("eval"));
    let flag = command
        .get_arguments()
        .find(|arg| arg.get_id() == field)
        .and_then(|arg| arg.get_long());
    match flag {
        Some(flag) => format!("--{flag} ({key}):{why}"),
        None => problem.to_string(),
    }
}

/// A flag's value as the command line spells it.
fn value_name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}
