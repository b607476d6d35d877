//! Fitting the probe's weight to the stream in front of gorag (`probe_weight = "fitted"`,
//! docs/design/fitted-probe.md).
//!
//! How much the probe should weigh differs by stream: on short queries it adds what the
//! keyword graph cannot read, on long technical abstracts it drowns the graph's fine
//! distinctions (docs/results/2026-11-29-peers.md). So each stream's own examples decide, by
//! cross-fitting: the examples are split into [`FOLDS`] folds (a label's `j`-th example in fold
//! `(position + j) mod FOLDS`, so each fold takes a share of every label's examples and of the
//! lone ones); for each fold a probe is fitted on the rest of the material (names included),
//! and each of the fold's examples is ranked as if it were not indexed (its document, vector
//! and learned copies left out) with that probe added at every weight of [`WEIGHTS`]. The
//! weight that ranks the most examples' own label first wins; a tie goes to the smaller weight
//! (the graph's ranking as it was).
//!
//! A pure function of the engine's state when a round or new examples are applied, so every
//! replica that applies the same log fits the same weight; it is kept in the snapshot, since
//! refitting it later would read a later index.

use std::sync::Arc;

use super::fusion;
use super::held_out::HeldOut;
use super::peers::{fit_probe_on, probe_material, within_bounds, ProbeMaterial};
use super::probe::{reads_probe, CrossFit, MAX_LABELS};
use super::rank::Ranking;
use super::refit::{held_out_sample, HeldOutScoring};
use super::Engine;

/// The weights tried, smallest first.
pub const WEIGHTS: [f64; 5] = [0.0, 0.5, 1.0, 2.0, 4.0];

/// Folds the examples are split into: each fold's probe learns from about three quarters of
/// the examples.
pub const FOLDS: usize = 4;

/// Held-out examples that must be ranked before a weight above 0 is chosen (fewer: 0, the graph's
/// ranking as it was): below it one example's swing moves the count by more than 1.5 points; on
/// CAD's tuning stream (20 to 60 examples a round) the weights chosen from so few did not carry
/// to its texts (docs/design/fitted-probe.md).
pub const MIN_EXAMPLES: usize = 64;

/// Examples ranked per fit at most (an even sample when there are more): enough to tell the
/// weights apart, a bounded cost per round.
pub const EXAMPLES_PER_FIT: usize = 300;

/// After labelled material arrives (a round, new examples): where a ranked strategy may read
/// the probe, each fold's probe, and from those the probe's weight when it is fitted; then the
/// probe itself, fitted where it weighs. The folds are returned for scoring the new examples
/// held out (none when nothing reads them).
pub(super) fn refit_on_material(engine: &mut Engine) -> Option<CrossFit> {
    let config = &engine.config;
    let ranked = config.strategy.evidence().is_some_and(|e| e.first_hop);
    let fitted = config.ranking.probe_weight.fixed().is_none();
    let folds_read = ranked
        && engine.labels.len() <= MAX_LABELS
        && reads_probe(config)
        && (fitted || config.refit_confidence);
    let material = folds_read.then(|| probe_material(engine));
    // The folds, the weight, and the whole probe where it weighs, from one reading of the
    // material.
    let refit = match material {
        Some(material) if within_bounds(&material, engine.labels.len()) => {
            let folds = cross_fit(engine, &material);
            let weight = fitted.then(|| fit_weight(engine, &material, &folds));
            let wanted = config.ranking.probe_weight.fixed().or(weight);
            let probe = wanted
                .filter(|&w| w > 0.0)
                .and_then(|_| fit_probe_on(&material, |_| true, engine.labels.len()));
            Some((folds, weight, probe))
        }
        _ => None,
    };
    match refit {
        Some((folds, weight, probe)) => {
            if fitted {
                engine.fitted_probe_weight = weight;
            }
            engine.probe = probe.map(Arc::new);
            Some(folds)
        }
        None => {
            if fitted {
                engine.fitted_probe_weight = None;
            }
            // No folds read (or past the bounds): the probe as the strategy reads it (the
            // `probe` peer, a weight set by hand), or none.
            engine.refit_probe();
            None
        }
    }
}

/// The fold of a label's `j`-th example.
fn fold_of(position: usize, j: usize) -> usize {
    (position + j) % FOLDS
}

/// Each fold's probe, fitted on the material outside it.
pub(super) fn cross_fit(engine: &Engine, material: &[ProbeMaterial<'_>]) -> CrossFit {
    let classes = engine.labels.len();
    // Each fold's fit is a pure function of the material: fitted side by side, the same.
    let folds = crate::threads::in_threads((0..FOLDS).collect(), crate::threads::cores(), |fold| {
        fit_probe_on(
            material,
            |m| {
                m.example
                    .is_none_or(|(_, j, _)| fold_of(m.position, j) != fold)
            },
            classes,
        )
    });
    let fold_of = material
        .iter()
        .filter_map(|m| {
            let (doc, j, _) = m.example?;
            Some((doc, fold_of(m.position, j)))
        })
        .collect();
    CrossFit::new(folds, fold_of)
}

/// The weight of [`WEIGHTS`] that ranks the most held-out examples' own label first under
/// `cross_fit`'s probes (0 when no example can be ranked).
pub(super) fn fit_weight(
    engine: &Engine,
    material: &[ProbeMaterial<'_>],
    cross_fit: &CrossFit,
) -> f64 {
    let examples: Vec<&ProbeMaterial<'_>> = material
        .iter()
        .filter(|m| m.example.is_some())
        .filter(|m| engine.labels.at(m.position).is_some_and(|l| l.active))
        .collect();
    let picked: Vec<&ProbeMaterial<'_>> = held_out_sample(examples.len(), EXAMPLES_PER_FIT)
        .into_iter()
        .map(|i| examples[i])
        .collect();
    let scoring = HeldOutScoring::of(engine);
    let threads = crate::threads::cores();
    let right = crate::threads::in_threads(picked, threads, |example| {
        right_at_each_weight(&scoring, cross_fit, example)
    });
    let ranked: Vec<[bool; WEIGHTS.len()]> = right.into_iter().flatten().collect();
    if ranked.len() < MIN_EXAMPLES {
        return 0.0;
    }
    let mut totals = [0usize; WEIGHTS.len()];
    for counts in ranked {
        for (total, right) in totals.iter_mut().zip(counts) {
            *total += usize::from(right);
        }
    }
    // The first (smallest) weight of the most right.
    let best = totals.iter().enumerate().fold(
        0,
        |best, (i, &count)| if count > totals[best] { i } else { best },
    );
    WEIGHTS[best]
}

/// Whether a held-out example's own label is ranked first at each weight (None when it
/// cannot be ranked: no first-hop strategy, or nothing scored).
fn right_at_each_weight(
    scoring: &HeldOutScoring<'_>,
    cross_fit: &CrossFit,
    example: &ProbeMaterial<'_>,
) -> Option<[bool; WEIGHTS.len()]> {
    let (doc, _, text) = example.example?;
    let retriever = scoring.retriever;
    let mut analysis = scoring.analyzer.analyze(text);
    // The index keeps an example's text clipped; its terms are the whole text's.
    if let Some(indexed) = retriever.index.documents().get(doc) {
        analysis.terms = indexed.terms.clone();
    }
    analysis.embedding = example.vector.map(<[f32]>::to_vec);
    let mut docs = scoring.learned_copies(&analysis);
    docs.push(doc);
    let held_out = HeldOut {
        docs,
        vector: example
            .vector
            .map(|vector| (example.position as u32, vector.to_vec())),
    };
    let base: Ranking = retriever.held_out_ranking(&analysis, &held_out)?;
    let labels = retriever.labels;
    let active = |position: usize| labels.at(position).is_some_and(|l| l.active);
    let belief = cross_fit.probe_without(doc).map(|probe| {
        probe.relative_belief(
            analysis.embedding.as_deref(),
            &analysis.probe_words(),
            active,
        )
    });
    let top = retriever.config.ranking.max_candidates.max(2);
    let mut right = [false; WEIGHTS.len()];
    for (slot, &weight) in right.iter_mut().zip(&WEIGHTS) {
        let mut ranking = base.clone();
        if let (Some(belief), true) = (&belief, weight > 0.0) {
            fusion::add_probe(&mut ranking, belief, weight, top, |l| active(l as usize));
        }
        *slot = ranking
            .ranked
            .first()
            .is_some_and(|&(label, _)| label as usize == example.position);
    }
    Some(right)
}
