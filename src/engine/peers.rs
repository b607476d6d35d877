//! The peers: what a practitioner writes in ten lines on a stock sentence encoder, run by
//! `gorag eval` beside gorag's own strategies under the same protocol (docs/guide/eval.md,
//! "The peers"):
//! - `prototype`: a label's score is the text's cosine with the mean of its examples' vectors
//!   and its name's vector (no training);
//! - `probe`: a multinomial logistic regression over [vector, words] fitted on the active
//!   labels' examples, each label's name as one more example, refitted whenever labelled
//!   material arrives ([`super::probe`]).
//!
//! Like `nearest`, they read no learned text, and their scores are not calibrated: their
//! decisions are never held for review and every one is learned from.

use std::sync::Arc;

use petgraph::graph::NodeIndex;

use super::embedding::Embeddings;
use super::index::{DocId, DocKind};
use super::keywords::Keyword;
use super::probe::{word_counts, Probe, Sample, MAX_FIT_WORK, MAX_LABELS};
use super::retrieve::Retriever;
use super::terms::TermCounts;
use super::{Analysis, Engine, Retrieval};

impl Retriever<'_> {
    /// Candidates of `prototype`: active labels by the text's cosine with their prototype.
    pub(super) fn prototype_retrieval(
        &self,
        analysis: &Analysis,
        terminal_nodes: &[(&Keyword, NodeIndex)],
    ) -> Retrieval {
        let scores = match (self.embeddings, &analysis.embedding) {
            (Some(embeddings), Some(query)) => (0..self.labels.len())
                .map(|position| {
                    let (name, examples) = embeddings.material_of(position);
                    prototype(name, examples).map(|p| dot(query, &p))
                })
                .collect(),
            _ => Vec::new(),
        };
        self.peer_retrieval(scores, terminal_nodes)
    }

    /// Candidates of `probe`: active labels by the fitted probe's probability.
    pub(super) fn probe_retrieval(
        &self,
        analysis: &Analysis,
        terminal_nodes: &[(&Keyword, NodeIndex)],
    ) -> Retrieval {
        let scores = match self.probe {
            Some(probe) => probe
                .probabilities(
                    analysis.embedding.as_deref(),
                    &analysis.probe_words(),
                    |position| self.labels.at(position).is_some_and(|label| label.active),
                )
                .into_iter()
                .map(Some)
                .collect(),
            None => Vec::new(),
        };
        self.peer_retrieval(scores, terminal_nodes)
    }

    /// A peer's retrieval from its per-label-position scores (None: the label has nothing
    /// to be scored by): the active labels best first, capped at `max_candidates`; with no
    /// score at all, every active label, as [`Basis::NoEvidence`].
    fn peer_retrieval(
        &self,
        scores: Vec<Option<f64>>,
        terminal_nodes: &[(&Keyword, NodeIndex)],
    ) -> Retrieval {
        let mut ranked: Vec<(usize, f64)> = scores
            .into_iter()
            .enumerate()
            .filter_map(|(position, score)| Some((position, score?)))
            .filter(|&(position, _)| self.labels.at(position).is_some_and(|l| l.active))
            .collect();
        // Best first; a tie goes to the label registered first.
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let first_hop_labels = ranked.len();
        ranked.truncate(self.config.ranking.max_candidates.max(1));
        let ranked: Vec<(String, f64)> = ranked
            .into_iter()
            .map(|(position, score)| (self.labels[position].id.clone(), score))
            .collect();
        self.scored_retrieval(ranked, first_hop_labels, terminal_nodes)
    }
}

/// The unit mean of a label's example vectors and its name's vector; None when it has
/// neither (or they cancel out).
fn prototype(name: Option<&[f32]>, examples: &[Vec<f32>]) -> Option<Vec<f64>> {
    let dim = name.map(<[f32]>::len).or(examples.first().map(Vec::len))?;
    let mut sum = vec![0.0; dim];
    for vector in examples.iter().map(Vec::as_slice).chain(name) {
        if vector.len() == dim {
            for (s, &x) in sum.iter_mut().zip(vector) {
                *s += f64::from(x);
            }
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f64>().sqrt();
    (norm > 1e-9).then(|| sum.iter().map(|x| x / norm).collect())
}

fn dot(a: &[f32], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * y).sum()
}

impl Engine {
    /// Fit the probe again on every label's own material (examples and names), where
    /// retrieval reads it ([`fit_probe_if_read`]): after a round, new examples, a correction, the
    /// encoder attached, a restore. A pure function of the labels' material
    /// and the probe's weight, so every replica fits the same weights.
    pub(super) fn refit_probe(&mut self) {
        self.probe = fit_probe_if_read(self).map(Arc::new);
    }
}

/// The probe's weight in the ranked strategies, as retrieval reads it: as set, or as fitted (0
/// before a fit); 0 when no probe is fitted (past its bounds, [`within_bounds`]), since none is
/// read then.
pub(super) fn weight_read(engine: &Engine) -> f64 {
    match engine.probe {
        Some(_) => wanted_weight(engine),
        None => 0.0,
    }
}

/// The probe's weight as set or fitted, whether or not a probe is fitted for it.
fn wanted_weight(engine: &Engine) -> f64 {
    match engine.config.ranking.probe_weight.fixed() {
        Some(weight) => weight,
        None => engine.fitted_probe_weight.unwrap_or(0.0),
    }
}

/// The probe fitted on every label's material, where retrieval reads one: the `probe` peer
/// always; a ranked strategy with a first hop while its weight (set, or as fitted) is above 0
/// and the fit is within its bounds ([`within_bounds`]).
fn fit_probe_if_read(engine: &Engine) -> Option<Probe> {
    let config = &engine.config;
    let peer = config.strategy == super::Strategy::Probe;
    let ranked = config.strategy.evidence().is_some_and(|e| e.first_hop)
        && engine.labels.len() <= MAX_LABELS
        && wanted_weight(engine) > 0.0;
    if !(peer || ranked) {
        return None;
    }
    let material = probe_material(engine);
    let classes = engine.labels.len();
    if !peer && !within_bounds(&material, classes) {
        return None;
    }
    fit_probe_on(&material, |_| true, classes)
}

/// Whether a ranked strategy may fit a probe on `material` over `classes` label positions: at
/// most [`MAX_LABELS`] of them (every label ever registered, so replicas agree) and at most
/// [`MAX_FIT_WORK`] multiply-adds a pass ([`fit_work`]). Past either, its rounds stay cheap and
/// its ranking is the graph's and meaning's alone.
pub(super) fn within_bounds(material: &[ProbeMaterial<'_>], classes: usize) -> bool {
    classes <= MAX_LABELS && fit_work(material, classes) <= MAX_FIT_WORK
}

/// A fit's multiply-adds per pass over `material`: every class's weights against every
/// sample's vector and distinct words.
pub(super) fn fit_work(material: &[ProbeMaterial<'_>], classes: usize) -> usize {
    let per_class: usize = material
        .iter()
        .map(|m| m.vector.map_or(0, <[f32]>::len) + m.terms.counts.len())
        .sum();
    classes.saturating_mul(per_class)
}

/// One piece of a label's material the probe learns from: an example or the label's name.
pub(super) struct ProbeMaterial<'e> {
    pub position: usize,
    /// An example's document, its place among its label's examples, and its text (None: the
    /// label's name).
    pub example: Option<(DocId, usize, &'e str)>,
    pub vector: Option<&'e [f32]>,
    pub terms: TermCounts,
}

/// Every label's material, label by label: its examples (their texts as the index keeps them,
/// with their vectors when every one of the label's examples has one), then its name.
pub(super) fn probe_material(engine: &Engine) -> Vec<ProbeMaterial<'_>> {
    let labels = engine.labels.all();
    let mut examples: Vec<Vec<(DocId, &str)>> = vec![Vec::new(); labels.len()];
    for (doc_id, doc) in engine.index.documents().alive_with_ids() {
        if let (DocKind::Example, Some(text)) = (doc.kind, &doc.text) {
            if let Some(slot) = examples.get_mut(doc.label.index()) {
                slot.push((doc_id, text.as_str()));
            }
        }
    }
    let mut material = Vec::new();
    for (position, label) in labels.iter().enumerate() {
        let (name_vector, example_vectors) = match &engine.embeddings {
            Some(embeddings) => embeddings.material_of(position),
            None => (None, &[][..]),
        };
        let paired = example_vectors.len() == examples[position].len();
        for (i, &(doc, text)) in examples[position].iter().enumerate() {
            material.push(ProbeMaterial {
                position,
                example: Some((doc, i, text)),
                vector: example_vectors.get(i).filter(|_| paired).map(Vec::as_slice),
                terms: word_counts(text),
            });
        }
        if let Some(name) = &label.name {
            material.push(ProbeMaterial {
                position,
                example: None,
                vector: name_vector,
                terms: word_counts(&Embeddings::name_text(name)),
            });
        }
    }
    material
}

/// The probe fitted on the material `keep` keeps, over `classes` label positions.
pub(super) fn fit_probe_on(
    material: &[ProbeMaterial<'_>],
    keep: impl Fn(&ProbeMaterial<'_>) -> bool,
    classes: usize,
) -> Option<Probe> {
    let dim = material
        .iter()
        .find_map(|m| m.vector.map(<[f32]>::len))
        .unwrap_or(0);
    let samples: Vec<Sample<'_>> = material
        .iter()
        .filter(|m| keep(m))
        .map(|m| Sample {
            class: m.position,
            vector: m.vector,
            terms: &m.terms,
        })
        .collect();
    Probe::fit(&samples, classes, dim)
}
