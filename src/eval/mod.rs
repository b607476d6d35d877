//! The paper's DFSTC evaluation protocol (GORAG.md, "Evaluation protocol").
//!
//! Per round r: index round r's labelled examples (with LLM descriptions when labels have
//! names and an LLM is configured); classify round r's held-out texts **with** online indexing,
//! in file order; then the held-out texts of rounds < r **without** it; report metrics over all
//! held-out texts seen so far.

pub mod calibration;
pub mod dataset;
pub mod discover;
pub mod llm_curve;
pub mod out_of_scope;
pub mod per_label;
pub mod report;
mod scored;
mod summary;

use std::time::Instant;

use futures::stream::{self, StreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::discovery::label_map::LabelMap;
use crate::engine::prompt::ChoiceMode;
use crate::engine::{Engine, EngineConfig, EngineError, NewLabel, Status};
use crate::one_text::{Classified, TextSteps};
use crate::state::{State, Update};
use dataset::{RoundData, Sample};
pub use scored::TextRecord;
use scored::{Scored, Where};
pub(crate) use summary::mean_or_zero;
use summary::{map_of, summarise};

#[derive(Clone)]
pub struct EvalOptions {
    pub engine: EngineConfig,
    /// The embedding signal's encoder, for the strategies with a first hop (None: off).
    pub encoder: Option<std::sync::Arc<dyn crate::engine::embedding::TextEncoder>>,
    /// LLM calls in flight for the texts that are not indexed online.
    pub concurrency: usize,
    pub progress: bool,
    /// A simulated reviewer: of each round's texts learned online, this share at most is
    /// reviewed — texts that need review, as they come — and corrected to its gold label
    /// ([`Engine::correct`]) instead of being learned from its prediction (0: no review).
    pub review_budget: f64,
    /// A simulated audit: this share of each round's texts learned online, spread evenly over
    /// the stream whatever their confidence, is corrected to its gold label as an audit
    /// ([`Engine::audit`]: its outcome refits the confidence) instead of being learned (0: none).
    pub audit_share: f64,
    /// Texts that fit none of the dataset's classes, classified after every round and never
    /// learned from ([`out_of_scope`]; empty: none).
    pub out_of_scope: Vec<String>,
}

/// Time spent per stage in one round, summed over its texts (seconds).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageSeconds {
    pub index_round: f64,
    pub describe_labels: f64,
    pub keywords: f64,
    pub retrieve: f64,
    pub llm: f64,
    pub online_index: f64,
    pub total: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RoundMetrics {
    pub round: usize,
    pub labels: usize,
    pub texts: usize,
    /// Final label (LLM, or graph fallback) equals the gold label.
    pub accuracy: f64,
    /// Retrieval's own prediction (no LLM) equals the gold label.
    pub graph_accuracy: f64,
    /// This round's texts learned from (online indexing with confidence).
    pub learned: usize,
    /// Of those, the ones whose label was right: the precision of what online indexing learns.
    pub learned_correct: usize,
    /// Accuracy of other readings of the same LLM answers (see [`READINGS`]): what another
    /// choice mode or weight would have decided, without calling the LLM again.
    pub readings: Vec<(String, f64)>,
    /// As the paper counts it: an answer that is no known label is wrong.
    pub strict_accuracy: f64,
    pub macro_recall: f64,
    pub hallucination_rate: f64,
    pub hallucinations_unknown_label: usize,
    pub hallucinations_outside_candidates: usize,
    /// Gold label among the candidates.
    pub candidate_recall: f64,
    pub mean_candidates: f64,
    /// This round's texts the simulated reviewer corrected (`EvalOptions::review_budget`).
    pub reviewed: usize,
    /// This round's texts the simulated audit corrected (`EvalOptions::audit_share`).
    pub audited: usize,
    /// Texts whose LLM call failed and fell back to the graph.
    pub llm_failures: usize,
    pub llm_calls_per_text: f64,
    pub prompt_tokens_per_text: f64,
    /// `scored` answers: mean share of the first-token mass on the candidates' names, and the
    /// texts under 0.9 — how closely the model kept to the list, short of hallucinating.
    pub on_list_mass: Option<f64>,
    pub wavering_answers: usize,
    /// How well the predictions' confidence is calibrated and ranks them.
    pub calibration: calibration::Calibration,
    /// Share of the texts whose prediction needs review (confidence below `abstain_below`).
    pub review_share: f64,
    /// Share of the texts published with no label (`no_match`: nothing the labels know
    /// explains them). Counted wrong in `accuracy`, and never as a confusion.
    pub no_match_share: f64,
    /// Accuracy of the others, the predictions published as decided.
    pub decided_accuracy: f64,
    /// What the out-of-scope texts were published as after this round (`--out-of-scope`).
    pub out_of_scope: Option<out_of_scope::OutOfScopeShares>,
    /// When the LLM was asked about every text: accuracy against LLM calls per text for other
    /// weights and thresholds ([`llm_curve`]).
    pub llm_curve: Vec<llm_curve::CurvePoint>,
    pub description_calls: u32,
    pub graph_nodes: usize,
    pub graph_edges: usize,
    /// The probe's weight in the ranked strategies after this round (as set, or as fitted).
    pub probe_weight: f64,
    pub keywords_added_online: usize,
    pub seconds: StageSeconds,
}

#[derive(Debug, Clone, Serialize)]
pub struct StrategyRun {
    pub strategy: String,
    pub rounds: Vec<RoundMetrics>,
    /// When the LLM was asked about every text: the weight and threshold chosen over the
    /// rounds ([`llm_curve::choose`]).
    pub llm_choice: Option<llm_curve::CurvePoint>,
    /// Every text's prediction, round by round (written as `texts-<strategy>.jsonl`).
    #[serde(skip)]
    pub texts: Vec<TextRecord>,
    /// Every out-of-scope text's prediction, round by round (`out-of-scope-<strategy>.jsonl`).
    #[serde(skip)]
    pub out_of_scope_texts: Vec<out_of_scope::OutOfScopeRecord>,
    /// The label space after the last round (`labels.html`): labels joined by shared keywords
    /// and by the confusions of the last round's predictions, with their volume.
    pub label_map: Option<LabelMap>,
    /// Precision, recall and F1 per label and the most confused pairs, after the last round
    /// (all of them in `labels-<strategy>.csv` and `confusions-<strategy>.csv`).
    pub per_label: Option<per_label::PerLabel>,
}

/// Other ways to read the same LLM answer: (name, mode, weight).
pub const READINGS: [(&str, ChoiceMode, f64); 4] = [
    ("free", ChoiceMode::Free, 0.0),
    ("scored_w0.25", ChoiceMode::Scored, 0.25),
    ("scored_w1", ChoiceMode::Scored, 1.0),
    ("llm_only", ChoiceMode::Scored, 1e6),
];

fn add_times(seconds: &mut StageSeconds, classified: &Classified) {
    seconds.keywords += classified.times.keywords.as_secs_f64();
    seconds.retrieve += classified.times.retrieve.as_secs_f64();
    seconds.llm += classified.times.llm.as_secs_f64();
}

/// One round's labels, described once and shared by every strategy compared.
#[derive(Debug, Clone)]
pub struct PreparedRound {
    pub labels: Vec<NewLabel>,
    pub description_calls: u32,
    pub describe_seconds: f64,
}

/// Group each round's examples by label and, when labels have names, ask the LLM for their
/// descriptions — once, so all strategies see the same descriptions and pay for them once.
pub async fn prepare_rounds(
    rounds: &[RoundData],
    named_labels: bool,
    taxonomy: &dataset::Taxonomy,
    classifier: &TextSteps,
) -> Vec<PreparedRound> {
    let mut prepared = Vec::with_capacity(rounds.len());
    for round in rounds {
        let mut labels = dataset::round_labels(round, named_labels);
        dataset::name_and_describe(&mut labels, taxonomy);
        let started = Instant::now();
        // No text waits for the LLM meanwhile: as many at once as the client allows.
        let description_calls = classifier.describe_labels(&mut labels, usize::MAX).await;
        prepared.push(PreparedRound {
            labels,
            description_calls,
            describe_seconds: started.elapsed().as_secs_f64(),
        });
    }
    prepared
}

/// The discovery pool's capacity in an evaluation (no update fills it: see [`State`]).
const EVAL_POOL_CAPACITY: usize = 1;

/// Run the protocol for one strategy (already set in `options.engine`); `prepared` comes from
/// [`prepare_rounds`] on the same `rounds`.
pub async fn run(
    rounds: &[RoundData],
    prepared: &[PreparedRound],
    options: &EvalOptions,
    classifier: &TextSteps,
) -> Result<StrategyRun, EngineError> {
    let mut engine = Engine::new(options.engine.clone());
    let first_hop = options.engine.strategy.reads_meaning();
    if let (Some(encoder), true) = (&options.encoder, first_hop) {
        let unencoded;
        (engine, unencoded) = engine.with_encoder(encoder.clone());
        if unencoded > 0 {
            tracing::warn!(unencoded, "the encoder failed on some labelled material");
        }
    }
    // Every change goes through `State::apply`, the path `serve` and `classify` take. Eval's
    // pool stays empty: discovery is measured by its own protocol (`eval/discover`).
    let mut state = State::new(engine, EVAL_POOL_CAPACITY);
    let strategy = options.engine.strategy.as_str().to_string();
    let total: usize = (1..=rounds.len())
        .map(|r| rounds[..r].iter().map(|d| d.test.len()).sum::<usize>())
        .sum();
    let progress = progress_bar(total, &strategy, options.progress);

    let mut metrics = Vec::new();
    let mut texts = Vec::new();
    let mut out_of_scope_texts = Vec::new();
    let mut last_scored: Vec<Scored> = Vec::new();
    for (r, (round, setup)) in rounds.iter().zip(prepared).enumerate() {
        let round_started = Instant::now();
        let mut seconds = StageSeconds {
            describe_labels: setup.describe_seconds,
            ..StageSeconds::default()
        };
        let started = Instant::now();
        // Through the state's one mutation path, as `serve` and `classify` apply a round.
        state.apply(&Update::Round {
            round: format!("r{}", round.number),
            labels: setup.labels.clone(),
        })?;
        seconds.index_round = started.elapsed().as_secs_f64();

        let (mut scored, learning) = classify_and_learn(
            &mut state,
            round.number,
            &round.test,
            classifier,
            Oversight {
                review_budget: options.review_budget,
                audit_share: options.audit_share,
            },
            &mut seconds,
            &progress,
        )
        .await?;
        let earlier: Vec<(Where, &Sample)> = rounds[..r]
            .iter()
            .flat_map(|d| {
                d.test.iter().enumerate().map(|(i, sample)| {
                    let at = Where {
                        round: round.number,
                        text_round: d.number,
                        line: i + 1,
                    };
                    (at, sample)
                })
            })
            .collect();
        let earlier_scored = classify_earlier(
            state.engine(),
            &earlier,
            classifier,
            &mut seconds,
            options.concurrency,
            &progress,
        )
        .await?;
        scored.extend(earlier_scored);

        seconds.total = round_started.elapsed().as_secs_f64() + setup.describe_seconds;
        let mut summary = summarise(
            round.number,
            state.engine(),
            &scored,
            setup.description_calls,
            learning,
            seconds,
        );
        if !options.out_of_scope.is_empty() {
            let (shares, records) = out_of_scope::measure(
                state.engine(),
                round.number,
                &options.out_of_scope,
                classifier,
            )
            .await?;
            summary.out_of_scope = Some(shares);
            out_of_scope_texts.extend(records);
        }
        metrics.push(summary);
        texts.extend(scored.iter().map(|s| s.record.clone()));
        last_scored = scored;
    }
    progress.finish_and_clear();
    let llm_choice = metrics
        .iter()
        .all(|m| !m.llm_curve.is_empty())
        .then(|| {
            let curves: Vec<_> = metrics.iter().map(|m| m.llm_curve.clone()).collect();
            let retrieval: Vec<f64> = metrics.iter().map(|m| m.graph_accuracy).collect();
            llm_curve::choose(&curves, &retrieval)
        })
        .filter(|_| !metrics.is_empty());
    let per_label = per_label::per_label(&texts);
    Ok(StrategyRun {
        strategy,
        rounds: metrics,
        llm_choice,
        texts,
        out_of_scope_texts,
        label_map: map_of(state.engine(), &last_scored),
        per_label,
    })
}

fn progress_bar(total: usize, strategy: &str, shown: bool) -> ProgressBar {
    if !shown {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} texts ({eta})",
    ) {
        bar.set_style(style);
    }
    bar.set_prefix(strategy.to_string());
    bar
}

/// What this round's texts taught the engine: keywords added online, texts learned
/// confidently, of which right, and texts the simulated reviewer corrected.
#[derive(Debug, Clone, Copy, Default)]
struct Learning {
    keywords_added_online: usize,
    learned: usize,
    learned_correct: usize,
    reviewed: usize,
    audited: usize,
}

/// The simulated people who label a round's texts as they come (see [`EvalOptions`]).
#[derive(Debug, Clone, Copy)]
struct Oversight {
    review_budget: f64,
    audit_share: f64,
}

impl Oversight {
    /// Whether the audit picks the `i`-th text (0-based): evenly spread, `audit_share` of them.
    fn audits(&self, i: usize) -> bool {
        let picked = |n: usize| (n as f64 * self.audit_share).floor();
        picked(i + 1) > picked(i)
    }
}

/// This round's texts, in order, with online indexing. A text the audit picks is corrected to
/// its gold label as an audit instead; so is a text that needs review while the reviewer keeps
/// within `review_budget` of the texts so far.
async fn classify_and_learn(
    state: &mut State,
    round: usize,
    texts: &[Sample],
    classifier: &TextSteps,
    oversight: Oversight,
    seconds: &mut StageSeconds,
    progress: &ProgressBar,
) -> Result<(Vec<Scored>, Learning), EngineError> {
    let mut scored = Vec::with_capacity(texts.len());
    let mut learning = Learning::default();
    for (i, sample) in texts.iter().enumerate() {
        let engine = state.engine();
        let classified = classifier.classify(engine, &sample.text).await?;
        let at = Where {
            round,
            text_round: round,
            line: i + 1,
        };
        add_times(seconds, &classified);
        let record = Scored::new(engine, sample, &classified, at);
        let started = Instant::now();
        let within_budget =
            (learning.reviewed + 1) as f64 <= oversight.review_budget * (i + 1) as f64;
        let (text_id, label, text) = (
            format!("r{round}-{}", i + 1),
            sample.label.clone(),
            sample.text.clone(),
        );
        if oversight.audits(i) {
            state.apply(&Update::Audit {
                text_id,
                label,
                text,
            })?;
            learning.audited += 1;
        } else if record.status == Status::NeedsReview && within_budget {
            state.apply(&Update::Correct {
                text_id,
                label,
                text,
            })?;
            learning.reviewed += 1;
        } else {
            let confident = classified.verdict.confident;
            learning.learned += usize::from(confident);
            learning.learned_correct +=
                usize::from(confident && classified.decision.label == sample.label);
            let update = Update::learned(engine, &classified);
            learning.keywords_added_online += state.apply(&update)?.keywords_added;
        }
        seconds.online_index += started.elapsed().as_secs_f64();
        scored.push(record);
        progress.inc(1);
    }
    Ok((scored, learning))
}

/// Earlier rounds' texts, without online indexing: independent, so classified concurrently
/// (`concurrency` LLM calls at a time).
async fn classify_earlier(
    engine: &Engine,
    texts: &[(Where, &Sample)],
    classifier: &TextSteps,
    seconds: &mut StageSeconds,
    concurrency: usize,
    progress: &ProgressBar,
) -> Result<Vec<Scored>, EngineError> {
    let results: Vec<Result<(Scored, Classified), EngineError>> =
        stream::iter(texts.iter().map(|&(at, sample)| async move {
            let classified = classifier.classify(engine, &sample.text).await?;
            Ok((Scored::new(engine, sample, &classified, at), classified))
        }))
        .buffered(concurrency.max(1))
        .inspect(|_| progress.inc(1))
        .collect()
        .await;
    let mut scored = Vec::with_capacity(results.len());
    for result in results {
        let (score, classified) = result?;
        add_times(seconds, &classified);
        scored.push(score);
    }
    Ok(scored)
}

#[cfg(test)]
mod tests {
    use super::Oversight;

    fn audited(share: f64, texts: usize) -> Vec<usize> {
        let oversight = Oversight {
            review_budget: 0.0,
            audit_share: share,
        };
        (0..texts).filter(|&i| oversight.audits(i)).collect()
    }

    #[test]
    fn audits_are_spread_evenly_at_their_share() {
        assert!(audited(0.0, 100).is_empty());
        assert_eq!(audited(1.0, 100).len(), 100);
        assert_eq!(audited(0.05, 100), vec![19, 39, 59, 79, 99]);
        assert_eq!(audited(0.05, 1_000).len(), 50);
    }
}
