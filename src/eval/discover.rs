//! `gorag eval --discover`: can gorag find the classes it was not given?
//!
//! The last round of the split is held back: rounds before it are indexed as usual, then the
//! test texts of *every* round (known classes and the held-back ones, in a seeded shuffle) are
//! streamed through the classifier with online indexing, as `gorag serve` would see them.
//! Texts the active labels explain poorly are pooled; one community pass turns the pool into
//! proposals. Scored against the gold labels: which held-back classes a proposal recovers
//! (most of its members carry that class, purity ≥ [`RECOVERY_PURITY`]), mean purity, the
//! share of proposal members from known classes; then every proposal is accepted as a label
//! (as `gorag proposals accept` would: its representatives' excerpts as examples) and the held-back texts classified again, next to
//! the same texts classified with the true held-back examples.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

use super::dataset::RoundData;
use super::PreparedRound;
use crate::classify::Classifier;
use crate::discovery::{self, communities, proposal, DiscoveryConfig, Pool, PooledText, Proposal};
use crate::engine::answer::HallucinationKind;
use crate::engine::{Basis, Engine, EngineConfig, EngineError, NewLabel};
use crate::events::proposal::ProposalEvent;
use crate::events::LabelEvent;

#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("community detection failed: {0}")]
    Communities(#[from] leiden_rs::LeidenError),
    #[error("--discover needs at least two rounds (one known, the last held back) and each round prepared; got {rounds} rounds, {prepared} prepared")]
    Rounds { rounds: usize, prepared: usize },
    #[error("invalid discovery setting: {0}")]
    Config(String),
}

/// A proposal recovers a class when at least this share of its members carry it.
pub const RECOVERY_PURITY: f64 = 0.6;

#[derive(Debug, Clone, Serialize)]
pub struct ScoredProposal {
    pub id: String,
    pub name: String,
    pub size: usize,
    pub cohesion: f64,
    /// The gold label most of its members carry, and their share.
    pub majority: String,
    pub purity: f64,
    /// Whether the majority is a held-back class.
    pub majority_held: bool,
    /// Members whose gold label was already known.
    pub known_members: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiscoveryReport {
    pub strategy: String,
    pub held_round: usize,
    pub known_labels: usize,
    pub held_labels: usize,
    pub streamed: usize,
    pub streamed_held: usize,
    /// Texts pooled as unexplained, and how many of them belong to held-back classes.
    pub pooled: usize,
    pub pooled_held: usize,
    /// Probability that a held-back text's best retrieval score is below a known text's (the
    /// weak-score signal's ROC AUC; 0.5 is chance).
    pub weak_score_auc: f64,
    /// How often each unexplained signal fired, and how often a text was learned from, among
    /// the held-back classes' texts and among the known classes' texts.
    pub signals: Signals,
    pub proposals: Vec<ScoredProposal>,
    /// Held-back classes recovered by a proposal, and their share of all held-back classes.
    pub recovered: usize,
    pub recovered_share: f64,
    pub mean_purity: f64,
    pub known_member_share: f64,
    /// Held-back texts right after accepting every proposal (a text is right when its label is
    /// a proposal whose majority is its class).
    pub accepted_accuracy: f64,
    /// The same texts classified after the true held-back round was indexed instead.
    pub true_examples_accuracy: f64,
    pub pass_seconds: f64,
}

struct Streamed {
    gold: String,
    held: bool,
    best_score: Option<f64>,
    flags: Flags,
}

/// What the stream said of one text: each unexplained signal on its own (a pooled text
/// records only the first that fired), whether it was pooled, and whether it was learned from.
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    unknown_label: bool,
    no_evidence: bool,
    weak_score: bool,
    pooled: bool,
    learned: bool,
}

/// Counts of [`Flags`] over a set of streamed texts.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct SignalCounts {
    pub texts: usize,
    pub unknown_label: usize,
    pub no_evidence: usize,
    pub weak_score: usize,
    pub pooled: usize,
    pub learned: usize,
}

impl SignalCounts {
    fn add(&mut self, flags: Flags) {
        self.texts += 1;
        self.unknown_label += usize::from(flags.unknown_label);
        self.no_evidence += usize::from(flags.no_evidence);
        self.weak_score += usize::from(flags.weak_score);
        self.pooled += usize::from(flags.pooled);
        self.learned += usize::from(flags.learned);
    }
}

/// Which signals separate texts of missing classes from the rest: a signal that fires as often
/// on known classes' texts as on held-back ones only fills the pool with known classes; a
/// held-back text learned from teaches a known label a missing class's words.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Signals {
    pub held: SignalCounts,
    pub known: SignalCounts,
}

fn signals(streamed: &[Streamed]) -> Signals {
    let mut out = Signals::default();
    for s in streamed {
        if s.held {
            out.held.add(s.flags);
        } else {
            out.known.add(s.flags);
        }
    }
    out
}

/// Run the discovery protocol; `prepared` comes from [`super::prepare_rounds`] on `rounds`.
pub async fn run(
    rounds: &[RoundData],
    prepared: &[PreparedRound],
    engine_config: &EngineConfig,
    config: &DiscoveryConfig,
    classifier: &Classifier,
    seed: u64,
) -> Result<DiscoveryReport, DiscoverError> {
    if rounds.len() < 2 || prepared.len() != rounds.len() {
        return Err(DiscoverError::Rounds {
            rounds: rounds.len(),
            prepared: prepared.len(),
        });
    }
    config.validate().map_err(DiscoverError::Config)?;
    let held = rounds.len() - 1;
    let mut engine = Engine::new(engine_config.clone());
    for setup in &prepared[..held] {
        engine.apply_round(&setup.labels)?;
    }
    let held_classes: HashSet<&str> = rounds[held]
        .train
        .iter()
        .map(|s| s.label.as_str())
        .collect();

    let stream = shuffled_stream(rounds, seed);
    let (pool, streamed) = stream_and_pool(&mut engine, &stream, held, config, classifier).await?;

    let started = Instant::now();
    let texts: Vec<&PooledText> = pool.texts().iter().collect();
    let found = communities::find(&texts, config, &engine.label_material())?.communities;
    let proposals: Vec<Proposal> = found.iter().map(|c| proposal::propose(&texts, c)).collect();
    let pass_seconds = started.elapsed().as_secs_f64();

    let scored: Vec<ScoredProposal> = proposals
        .iter()
        .map(|p| score(p, &streamed, &held_classes))
        .collect();
    let recovered = recovered_classes(&scored);
    let members: usize = scored.iter().map(|p| p.size).sum();
    let known_members: usize = scored.iter().map(|p| p.known_members).sum();

    let held_texts: Vec<&super::dataset::Sample> = rounds[held].test.iter().collect();
    let (accepted_accuracy, true_examples_accuracy) = {
        let accepted = (proposals.as_slice(), scored.as_slice());
        let truth = &prepared[held].labels;
        accuracies(classifier, &engine, &held_texts, accepted, truth).await?
    };

    Ok(DiscoveryReport {
        strategy: engine_config.strategy.as_str().to_string(),
        held_round: rounds[held].number,
        known_labels: prepared[..held].iter().map(|p| p.labels.len()).sum(),
        held_labels: held_classes.len(),
        streamed: streamed.len(),
        streamed_held: streamed.iter().filter(|s| s.held).count(),
        pooled: pool.len(),
        pooled_held: pool
            .texts()
            .iter()
            .filter(|t| held_classes.contains(gold(&streamed, &t.id)))
            .count(),
        weak_score_auc: weak_score_auc(&streamed),
        signals: signals(&streamed),
        recovered,
        recovered_share: recovered as f64 / held_classes.len().max(1) as f64,
        mean_purity: mean(scored.iter().map(|p| p.purity)),
        known_member_share: known_members as f64 / members.max(1) as f64,
        proposals: scored,
        accepted_accuracy,
        true_examples_accuracy,
        pass_seconds,
    })
}

/// The test texts of every round in one seeded shuffle, each with its round's index.
fn shuffled_stream(rounds: &[RoundData], seed: u64) -> Vec<(usize, &super::dataset::Sample)> {
    let mut stream: Vec<(usize, &super::dataset::Sample)> = rounds
        .iter()
        .enumerate()
        .flat_map(|(r, round)| round.test.iter().map(move |s| (r, s)))
        .collect();
    stream.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    stream
}

/// Held-back classes recovered: the majority of a proposal pure enough to count.
fn recovered_classes(scored: &[ScoredProposal]) -> usize {
    scored
        .iter()
        .filter(|p| p.majority_held && p.purity >= RECOVERY_PURITY)
        .map(|p| p.majority.as_str())
        .collect::<HashSet<&str>>()
        .len()
}

/// The gold label of a pooled text (its id is its position in the stream).
fn gold<'a>(streamed: &'a [Streamed], id: &str) -> &'a str {
    id.parse::<usize>()
        .ok()
        .and_then(|i| streamed.get(i))
        .map_or("", |s| s.gold.as_str())
}

/// Classify the stream in order with online indexing (as the service would), pooling the
/// texts the active labels explain poorly; each pooled text's id is its stream position.
async fn stream_and_pool(
    engine: &mut Engine,
    stream: &[(usize, &super::dataset::Sample)],
    held: usize,
    config: &DiscoveryConfig,
    classifier: &Classifier,
) -> Result<(Pool, Vec<Streamed>), DiscoverError> {
    let mut pool = Pool::new(config.pool_capacity);
    let mut streamed: Vec<Streamed> = Vec::with_capacity(stream.len());
    for (i, (r, sample)) in stream.iter().enumerate() {
        let classified = classifier.classify(engine, &sample.text).await?;
        let confident = engine.is_confident(&classified.retrieval, &classified.decision);
        // Learned from what the service's learn record carries (a text's heaviest terms).
        let learnable = engine.learnable(&classified.analysis);
        engine.learn(&learnable, &classified.decision.label, confident);
        let why = discovery::unexplained(&classified.retrieval, &classified.decision, config);
        let best_score = classified.retrieval.scores.first().copied();
        let flags = Flags {
            unknown_label: classified.decision.hallucination
                == Some(HallucinationKind::UnknownLabel),
            no_evidence: classified.retrieval.basis == Basis::NoEvidence,
            weak_score: best_score.is_some_and(|b| b < config.max_score),
            pooled: why.is_some(),
            learned: confident,
        };
        if let Some(why) = why {
            // All of its terms, as the service's note carries them.
            pool.push(PooledText::new(
                &i.to_string(),
                &sample.text,
                &classified.analysis,
                &classified.decision.label,
                why,
                discovery::arrival_score(&classified.retrieval),
            ));
        }
        streamed.push(Streamed {
            gold: sample.label.clone(),
            held: *r == held,
            best_score,
            flags,
        });
    }
    Ok((pool, streamed))
}

fn score(proposal: &Proposal, streamed: &[Streamed], held: &HashSet<&str>) -> ScoredProposal {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for member in &proposal.members {
        *counts.entry(gold(streamed, member)).or_default() += 1;
    }
    let (majority, count) = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map_or(("", 0), |(g, c)| (*g, *c));
    let known_members = counts
        .iter()
        .filter(|(g, _)| !held.contains(**g))
        .map(|(_, c)| c)
        .sum();
    ScoredProposal {
        id: proposal.id.clone(),
        name: proposal.name.clone(),
        size: proposal.size,
        cohesion: proposal.cohesion,
        majority: majority.to_string(),
        purity: count as f64 / proposal.size.max(1) as f64,
        majority_held: held.contains(majority),
        known_members,
    }
}

/// Accept every proposal as `gorag proposals accept` does (the round its event publishes:
/// one label, the representatives' excerpts as examples); returns each new label's majority
/// gold class.
fn accept(
    engine: &mut Engine,
    proposals: &[Proposal],
    scored: &[ScoredProposal],
) -> Result<HashMap<String, String>, EngineError> {
    let mut labels = Vec::new();
    let mut majority = HashMap::new();
    for (proposal, score) in proposals.iter().zip(scored) {
        // Fresh proposals with a non-empty label id: neither step can refuse.
        let Ok(event) = ProposalEvent::open(proposal, None) else {
            continue;
        };
        // Proposals may share a name: the proposal id keeps their labels apart (the CLI
        // refuses a label id that exists and asks for --name instead).
        let id = format!("{}_{}", event.label_id(), proposal.id);
        let Ok(LabelEvent::Round { labels: specs, .. }) = event.accepting_round(Some(&id)) else {
            continue;
        };
        majority.insert(id, score.majority.clone());
        labels.extend(specs.iter().map(NewLabel::from));
    }
    if !labels.is_empty() {
        engine.apply_round(&labels)?;
    }
    Ok(majority)
}

/// The held-back texts' accuracy after accepting every proposal (a text is right when its
/// label is a proposal whose majority is its class), then after indexing the true held-back
/// round instead.
async fn accuracies(
    classifier: &Classifier,
    engine: &Engine,
    held_texts: &[&super::dataset::Sample],
    (proposals, scored): (&[Proposal], &[ScoredProposal]),
    truth: &[NewLabel],
) -> Result<(f64, f64), EngineError> {
    let mut accepted = engine.clone();
    let majority: HashMap<String, String> = accept(&mut accepted, proposals, scored)?;
    let accepted_accuracy = accuracy(classifier, &accepted, held_texts, |label, gold| {
        majority.get(label).is_some_and(|m| m == gold)
    })
    .await?;
    let mut true_round = engine.clone();
    true_round.apply_round(truth)?;
    let true_examples_accuracy = accuracy(classifier, &true_round, held_texts, |label, gold| {
        label == gold
    })
    .await?;
    Ok((accepted_accuracy, true_examples_accuracy))
}

/// Share of `texts` whose prediction `right(label, gold)` accepts (without learning from them).
async fn accuracy(
    classifier: &Classifier,
    engine: &Engine,
    texts: &[&super::dataset::Sample],
    right: impl Fn(&str, &str) -> bool,
) -> Result<f64, EngineError> {
    let mut correct = 0usize;
    for sample in texts {
        let classified = classifier.classify(engine, &sample.text).await?;
        correct += usize::from(right(&classified.decision.label, &sample.label));
    }
    Ok(correct as f64 / texts.len().max(1) as f64)
}

/// ROC AUC of "a lower best score means a held-back class": the probability that a held-back
/// text scores below a known one (ties count half). Texts without a score are left out.
fn weak_score_auc(streamed: &[Streamed]) -> f64 {
    let mut scored: Vec<(f64, bool)> = streamed
        .iter()
        .filter_map(|s| s.best_score.map(|b| (b, s.held)))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (held, known) = scored.iter().fold((0f64, 0f64), |(h, k), (_, is_held)| {
        if *is_held {
            (h + 1.0, k)
        } else {
            (h, k + 1.0)
        }
    });
    if held == 0.0 || known == 0.0 {
        return 0.5;
    }
    // Mann–Whitney: for each held text, the known texts scoring above it.
    let mut pairs = 0.0;
    let mut i = 0;
    let mut known_below = 0.0;
    while i < scored.len() {
        let mut j = i;
        let (mut held_tied, mut known_tied) = (0.0, 0.0);
        while j < scored.len() && scored[j].0 == scored[i].0 {
            if scored[j].1 {
                held_tied += 1.0;
            } else {
                known_tied += 1.0;
            }
            j += 1;
        }
        pairs += held_tied * (known - known_below - known_tied) + held_tied * known_tied / 2.0;
        known_below += known_tied;
        i = j;
    }
    pairs / (held * known)
}

/// The reports side by side, then each one's proposals.
pub fn table(reports: &[DiscoveryReport]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| strategy | held round | known / held labels | held texts pooled | pool from held classes | weak-score AUC | proposals | recovered (purity ≥ {RECOVERY_PURITY}) | mean purity | members from known classes | accuracy after accepting | with the true examples | pass |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in reports {
        let _ = writeln!(
            out,
            "| {} | {} | {} / {} | {} / {} | {:.2} | {:.3} | {} | {} ({:.2}) | {:.2} | {:.2} | {:.3} | {:.3} | {:.2} s |",
            r.strategy,
            r.held_round,
            r.known_labels,
            r.held_labels,
            r.pooled_held,
            r.streamed_held,
            r.pooled_held as f64 / r.pooled.max(1) as f64,
            r.weak_score_auc,
            r.proposals.len(),
            r.recovered,
            r.recovered_share,
            r.mean_purity,
            r.known_member_share,
            r.accepted_accuracy,
            r.true_examples_accuracy,
            r.pass_seconds,
        );
    }
    signal_table(&mut out, reports);
    for r in reports {
        let _ = writeln!(
            out,
            "\n{} proposals (size, purity, cohesion, majority):",
            r.strategy
        );
        for p in &r.proposals {
            let _ = writeln!(
                out,
                "  {:>4}  {:.2}  {:.2}  {}{}  ← \"{}\"",
                p.size,
                p.purity,
                p.cohesion,
                p.majority,
                if p.majority_held { " (held back)" } else { "" },
                p.name
            );
        }
    }
    out
}

/// Each signal's share of held-back texts and of known texts (`held / known`).
fn signal_table(out: &mut String, reports: &[DiscoveryReport]) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "\nsignals, as the share of held-back / known texts they fired on:\n\n| strategy | texts | LLM: unknown label | no evidence | weak score | pooled | learned from |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let share = |n: usize, of: usize| n as f64 / of.max(1) as f64;
    for r in reports {
        let (h, k) = (&r.signals.held, &r.signals.known);
        let cell =
            |hn: usize, kn: usize| format!("{:.3} / {:.3}", share(hn, h.texts), share(kn, k.texts));
        let _ = writeln!(
            out,
            "| {} | {} / {} | {} | {} | {} | {} | {} |",
            r.strategy,
            h.texts,
            k.texts,
            cell(h.unknown_label, k.unknown_label),
            cell(h.no_evidence, k.no_evidence),
            cell(h.weak_score, k.weak_score),
            cell(h.pooled, k.pooled),
            cell(h.learned, k.learned),
        );
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(score: f64, held: bool) -> Streamed {
        Streamed {
            gold: String::new(),
            held,
            best_score: Some(score),
            flags: Flags::default(),
        }
    }

    fn of_class(gold: &str) -> Streamed {
        Streamed {
            gold: gold.into(),
            held: false,
            best_score: None,
            flags: Flags::default(),
        }
    }

    #[test]
    fn auc_is_one_when_every_held_text_scores_lowest() {
        let perfect = [
            streamed(0.1, true),
            streamed(0.2, true),
            streamed(0.5, false),
        ];
        assert_eq!(weak_score_auc(&perfect), 1.0);
        let reversed = [streamed(0.9, true), streamed(0.2, false)];
        assert_eq!(weak_score_auc(&reversed), 0.0);
        let tied = [streamed(0.3, true), streamed(0.3, false)];
        assert_eq!(weak_score_auc(&tied), 0.5);
    }

    #[test]
    fn signals_are_counted_apart_for_held_back_and_known_texts() {
        let flagged = |held, flags| Streamed {
            flags,
            ..streamed(0.0, held)
        };
        let pooled_unknown = Flags {
            unknown_label: true,
            weak_score: true,
            pooled: true,
            ..Flags::default()
        };
        let learned = Flags {
            learned: true,
            ..Flags::default()
        };
        let stream = [
            flagged(true, pooled_unknown),
            flagged(true, learned),
            flagged(false, learned),
        ];
        let counts = signals(&stream);
        assert_eq!(counts.held.texts, 2);
        assert_eq!(counts.held.unknown_label, 1);
        assert_eq!(counts.held.weak_score, 1);
        assert_eq!(counts.held.pooled, 1);
        assert_eq!(counts.held.learned, 1);
        assert_eq!(counts.held.no_evidence, 0);
        assert_eq!(counts.known.texts, 1);
        assert_eq!(counts.known.learned, 1);
        assert_eq!(counts.known.pooled, 0);
        let table = table(&[report_with(counts)]);
        assert!(
            table.contains("| hybrid | 2 / 1 | 0.500 / 0.000 | 0.000 / 0.000 | 0.500 / 0.000 | 0.500 / 0.000 | 0.500 / 1.000 |"),
            "{table}"
        );
    }

    fn report_with(signals: Signals) -> DiscoveryReport {
        DiscoveryReport {
            strategy: "hybrid".into(),
            held_round: 2,
            known_labels: 1,
            held_labels: 1,
            streamed: 3,
            streamed_held: 2,
            pooled: 1,
            pooled_held: 1,
            weak_score_auc: 0.5,
            signals,
            proposals: Vec::new(),
            recovered: 0,
            recovered_share: 0.0,
            mean_purity: 0.0,
            known_member_share: 0.0,
            accepted_accuracy: 0.0,
            true_examples_accuracy: 0.0,
            pass_seconds: 0.0,
        }
    }

    #[test]
    fn a_proposal_is_scored_by_its_members_gold_labels() {
        let proposal = Proposal {
            id: "p".into(),
            name: "n".into(),
            keywords: Vec::new(),
            members: vec!["0".into(), "1".into(), "2".into()],
            representatives: Vec::new(),
            excerpts: Vec::new(),
            size: 3,
            cohesion: 0.5,
        };
        let stream = [of_class("new"), of_class("new"), of_class("old")];
        let held: HashSet<&str> = ["new"].into_iter().collect();
        let scored = score(&proposal, &stream, &held);
        assert_eq!(scored.majority, "new");
        assert!((scored.purity - 2.0 / 3.0).abs() < 1e-9);
        assert!(scored.majority_held);
        assert_eq!(scored.known_members, 1);
    }
}
