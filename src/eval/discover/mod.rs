//! `gorag eval --discover`: can gorag find the classes it was not given?
//!
//! The last round of the split is held back: rounds before it are indexed as usual, then the
//! test texts of *every* round (known classes and the held-back ones, in a seeded shuffle) are
//! streamed through the classifier with online indexing, as `gorag serve` would see them.
//! Texts the active labels explain poorly are pooled; one community pass turns the pool into
//! proposals. With `discovery.hold_open` (the default), a pass halfway through the stream opens
//! proposals for the second half, whose texts that read like one are held for review as the
//! service holds them (learned under no label, pooled); the pass at the end is what is scored.
//! Scored against the gold labels: which held-back classes a proposal recovers
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
use crate::discovery::{
    self, communities, proposal, DiscoveryConfig, Holding, OpenProposal, Pool, PooledText, Proposal,
};
use crate::engine::answer::HallucinationKind;
use crate::engine::{Basis, Engine, EngineConfig, EngineError, NewLabel, Verdict};
use crate::events::LabelEvent;
use crate::one_text::TextSteps;

mod signals;
mod table;

use signals::{count_signals, weak_score_auc, Flags, Streamed};
pub use signals::{SignalCounts, Signals};
pub use table::table;

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
    /// What the pooled texts hold in memory, approximately (`Pool::approximate_bytes`).
    pub pool_bytes: usize,
    /// Probability that a held-back text's best retrieval score (discovery's scale: descriptions
    /// left out) is below a known text's (the weak-score signal's ROC AUC; 0.5 is chance).
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

/// Run the discovery protocol; `prepared` comes from [`super::prepare_rounds`] on `rounds`.
pub async fn run(
    rounds: &[RoundData],
    prepared: &[PreparedRound],
    engine_config: &EngineConfig,
    encoder: Option<&std::sync::Arc<dyn crate::engine::embedding::TextEncoder>>,
    config: &DiscoveryConfig,
    classifier: &TextSteps,
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
    if let Some(encoder) = encoder {
        let unencoded;
        (engine, unencoded) = engine.with_encoder(encoder.clone());
        if unencoded > 0 {
            tracing::warn!(unencoded, "the encoder failed on some labelled material");
        }
    }
    for setup in &prepared[..held] {
        engine.apply_round(None, &setup.labels)?;
    }
    let held_classes: HashSet<&str> = rounds[held]
        .train
        .iter()
        .map(|s| s.label.as_str())
        .collect();

    let stream = shuffled_stream(rounds, seed);
    let (pool, streamed) = stream_and_pool(&mut engine, &stream, held, config, classifier).await?;

    let (proposals, pass_seconds) = community_pass(&pool, config, &engine)?;

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
        pool_bytes: pool.approximate_bytes(),
        pooled_held: pooled_held(&pool, &streamed, &held_classes),
        weak_score_auc: weak_score_auc(&streamed),
        signals: count_signals(&streamed),
        recovered,
        recovered_share: recovered as f64 / held_classes.len().max(1) as f64,
        mean_purity: crate::eval::mean_or_zero(scored.iter().map(|p| p.purity)),
        known_member_share: known_members as f64 / members.max(1) as f64,
        proposals: scored,
        accepted_accuracy,
        true_examples_accuracy,
        pass_seconds,
    })
}

/// One community pass over the pool, as the service runs it: proposals, and its time.
fn community_pass(
    pool: &Pool,
    config: &DiscoveryConfig,
    engine: &Engine,
) -> Result<(Vec<Proposal>, f64), DiscoverError> {
    let started = Instant::now();
    let texts: Vec<&PooledText> = pool.texts().iter().collect();
    let material = engine
        .retriever()
        .label_material(texts.iter().map(|text| &text.terms));
    let meaning = discovery::meaning_of(
        &texts,
        engine.analyzer().query_encoder().as_ref(),
        config,
        &material,
    );
    let found = communities::find(&texts, &meaning, &[], config, &material)?.communities;
    let proposals = found.iter().map(|c| proposal::propose(&texts, c)).collect();
    Ok((proposals, started.elapsed().as_secs_f64()))
}

/// The proposals a pass over the pool so far opens, as the service holds texts for them.
fn open_proposals(
    pool: &Pool,
    config: &DiscoveryConfig,
    engine: &Engine,
) -> Result<Holding, DiscoverError> {
    let (proposals, _) = community_pass(pool, config, engine)?;
    let texts: Vec<&PooledText> = pool.texts().iter().collect();
    let material = engine
        .retriever()
        .label_material(texts.iter().map(|text| &text.terms));
    let open: Vec<OpenProposal> = proposals.iter().map(OpenProposal::from).collect();
    let encoder = engine.analyzer().query_encoder();
    Ok(Holding::of_members(
        &open,
        &texts,
        encoder.as_ref(),
        &material,
    ))
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

/// Pooled texts whose gold class was held back.
fn pooled_held(pool: &Pool, streamed: &[Streamed], held: &HashSet<&str>) -> usize {
    pool.texts()
        .iter()
        .filter(|t| held.contains(gold(streamed, &t.id)))
        .count()
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
    classifier: &TextSteps,
) -> Result<(Pool, Vec<Streamed>), DiscoverError> {
    let mut pool = Pool::new(config.pool_capacity);
    let mut streamed: Vec<Streamed> = Vec::with_capacity(stream.len());
    let mut holding = Holding::default();
    for (i, (r, sample)) in stream.iter().enumerate() {
        if config.hold_open && i == stream.len() / 2 {
            holding = open_proposals(&pool, config, engine)?;
        }
        let mut classified = classifier.classify(engine, &sample.text).await?;
        let held_for = classified
            .analysis
            .embedding
            .as_deref()
            .filter(|_| discovery::meaning::weighs(&classified.analysis.terms, engine, config))
            .and_then(|vector| holding.hold(vector));
        if held_for.is_some() {
            classified.verdict = classified.verdict.held_for_review();
        }
        let Verdict {
            status,
            confident,
            learn_as,
        } = &classified.verdict;
        let (status, confident) = (*status, *confident);
        // Learned from what the service's learn record carries (a text's heaviest terms), and
        // pooled with what its note carries, both made before the text is learned.
        let learnable = engine.analyzer().learnable(&classified.analysis);
        let why =
            discovery::unexplained(&classified.retrieval, &classified.decision, status, config).or(
                held_for
                    .is_some()
                    .then_some(discovery::Unexplained::NeedsReview),
            );
        let poolable = why.map(|_| engine.analyzer().poolable(&classified.analysis));
        engine.learn(&learnable, learn_as, confident);
        let best_score = classified.retrieval.discovery_score;
        let flags = Flags {
            unknown_label: classified.decision.hallucination
                == Some(HallucinationKind::UnknownLabel),
            no_evidence: classified.retrieval.basis == Basis::NoEvidence,
            weak_score: discovery::weak_score(&classified.retrieval, config),
            doubt: discovery::in_doubt(&classified.retrieval, config),
            pooled: why.is_some(),
            held_for_proposal: held_for.is_some(),
            learned: confident,
            status,
        };
        if let (Some(why), Some(poolable)) = (why, poolable) {
            pool.push(PooledText::new(
                &i.to_string(),
                &sample.text,
                &poolable,
                learn_as,
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
        let Ok(event) = proposal.open_event(None) else {
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
        engine.apply_round(None, &labels)?;
    }
    Ok(majority)
}

/// The held-back texts' accuracy after accepting every proposal (a text is right when its
/// label is a proposal whose majority is its class), then after indexing the true held-back
/// round instead.
async fn accuracies(
    classifier: &TextSteps,
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
    true_round.apply_round(None, truth)?;
    let true_examples_accuracy = accuracy(classifier, &true_round, held_texts, |label, gold| {
        label == gold
    })
    .await?;
    Ok((accepted_accuracy, true_examples_accuracy))
}

/// Share of `texts` whose prediction `right(label, gold)` accepts (without learning from them).
async fn accuracy(
    classifier: &TextSteps,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn of_class(gold: &str) -> Streamed {
        Streamed {
            gold: gold.into(),
            held: false,
            best_score: None,
            flags: Flags::default(),
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
