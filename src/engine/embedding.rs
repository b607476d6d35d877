//! The embedding signal (optional): a sentence encoder's cosine between a text and each label's
//! labelled examples and name, added to the label's score in `ranked` and `hybrid` once both
//! hops have spoken (docs/design/embedding-signal.md, "The embedding signal").
//!
//! The engine stays synchronous and free of model code: it holds a [`TextEncoder`] (the shell's
//! `embed::SentenceModel`, or a test's) and keeps one vector per label name and per labelled example.
//! The vectors are derived state, like the index's weights: an example is encoded from the text
//! the index keeps of it (clipped to [`super::index::EXAMPLE_TEXT_CHARS`]), so an engine
//! restored from a snapshot encodes exactly what the live one did. Learned texts are not
//! encoded: the second hop stays lexical.

use std::fmt;
use std::sync::Arc;

use thiserror::Error;

use super::cosine_scale::CosineScale;

/// Encoding failed (the message is the model's or the tokenizer's).
#[derive(Debug, Clone, Error, PartialEq)]
#[error("encoding text: {0}")]
pub struct EncodeError(pub String);

/// A sentence encoder: one unit-length vector per text, all of the same length, the same
/// vector for the same text every time (replicas must agree).
pub trait TextEncoder: Send + Sync {
    /// A text to classify.
    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError>;

    /// A label's own material (its name, an example): the same vector as [`Self::encode`]
    /// gives, but asked for again at every start, so a shell may keep these across restarts
    /// (queries are not kept: they are unbounded).
    fn encode_material(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        self.encode(text)
    }

    /// Whether material encoded once is read back rather than encoded again the next time it
    /// is asked for: only then is encoding it ahead worth anything.
    fn keeps_material(&self) -> bool {
        false
    }

    /// The cosine two unrelated texts typically have under this model. The engine reads
    /// cosines rescaled so that this one reads 0 and 1 still reads 1: weights and thresholds
    /// set for one model then mean the same for a model whose cosines crowd near 1
    /// (multilingual-e5-small's unrelated texts read ≈ 0.79; docs/guide/languages.md).
    fn unrelated_cosine(&self) -> f64 {
        0.0
    }
}

/// Per label position: its name's vector, its examples' vectors, and their prototype.
#[derive(Clone, Default)]
struct LabelVectors {
    name: Option<Vec<f32>>,
    examples: Vec<Vec<f32>>,
    /// The examples' vectors summed (empty without examples).
    sum: Vec<f64>,
    /// `sum` at unit length: the label's prototype, what a text's meaning is compared with.
    prototype: Option<Vec<f32>>,
    /// The length of the examples' mean (`sum` / their count): 1 for one example, less the
    /// more they differ ([`CosineScale::read_prototype`] needs it).
    mean_norm: f64,
}

impl LabelVectors {
    fn push_example(&mut self, vector: Vec<f32>) {
        if self.sum.len() != vector.len() {
            // The first example (or a model whose vectors changed length: start again).
            self.sum = vec![0.0; vector.len()];
            for v in &self.examples {
                if v.len() == vector.len() {
                    add(&mut self.sum, v, 1.0);
                }
            }
        }
        add(&mut self.sum, &vector, 1.0);
        self.examples.push(vector);
        self.prototype = unit(&self.sum);
        self.mean_norm = norm(&self.sum) / self.examples.len() as f64;
    }

    /// The prototype of the label's examples but `skipped` (an example scored against the
    /// others), with its mean's length; None when no other example is left.
    fn prototype_without(&self, skipped: &[f32]) -> Option<Prototype> {
        if self.examples.len() < 2 || skipped.len() != self.sum.len() {
            return None;
        }
        let mut sum = self.sum.clone();
        add(&mut sum, skipped, -1.0);
        let mean_norm = norm(&sum) / (self.examples.len() - 1) as f64;
        unit(&sum).map(|prototype| (prototype, mean_norm))
    }
}

/// A prototype and its mean's length ([`LabelVectors::mean_norm`]).
type Prototype = (Vec<f32>, f64);

/// The prototype label `position` is compared by, with its mean's length: its own, or the one
/// `without` an example (an example scored against the others).
fn prototype_of<'a>(
    without: &'a Option<(usize, Option<Prototype>)>,
    position: usize,
    label: &'a LabelVectors,
) -> Option<(&'a [f32], f64)> {
    match without {
        Some((at, prototype)) if *at == position => prototype
            .as_ref()
            .map(|(vector, mean_norm)| (vector.as_slice(), *mean_norm)),
        _ => label.prototype.as_deref().map(|p| (p, label.mean_norm)),
    }
}

/// `sum += factor × vector`.
fn add(sum: &mut [f64], vector: &[f32], factor: f64) {
    for (s, &x) in sum.iter_mut().zip(vector) {
        *s += factor * f64::from(x);
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `v` scaled to unit length; None for a (near) zero vector: examples that cancel out say
/// nothing of where the label is.
fn unit(v: &[f64]) -> Option<Vec<f32>> {
    let norm = norm(v);
    (norm > 1e-9).then(|| v.iter().map(|x| (x / norm) as f32).collect())
}

/// The encoder and every label's vectors.
#[derive(Clone)]
pub struct Embeddings {
    encoder: Arc<dyn TextEncoder>,
    labels: Vec<LabelVectors>,
    /// How the encoder's cosines are read ([`TextEncoder::unrelated_cosine`]).
    scale: CosineScale,
}

impl fmt::Debug for Embeddings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embeddings")
            .field("labels", &self.labels.len())
            .field(
                "examples",
                &self.labels.iter().map(|l| l.examples.len()).sum::<usize>(),
            )
            .finish()
    }
}

impl Embeddings {
    pub fn new(encoder: Arc<dyn TextEncoder>) -> Self {
        Self {
            scale: CosineScale::of(encoder.unrelated_cosine()),
            encoder,
            labels: Vec::new(),
        }
    }

    /// The encoder queries go through ([`super::Analyzer::query_encoder`]).
    pub fn encoder(&self) -> Arc<dyn TextEncoder> {
        self.encoder.clone()
    }

    /// Labelled material's vectors (examples; names as [`Self::name_text`] reads them), in
    /// order, encoded on every core: a round's examples, or every example at startup, are the
    /// bulk of what the encoder is asked (the model itself runs mostly on one core).
    pub fn encode_material(&self, texts: &[&str]) -> Vec<Result<Vec<f32>, EncodeError>> {
        crate::threads::in_threads(texts.to_vec(), crate::threads::cores(), |text| {
            self.encoder.encode_material(text)
        })
    }

    /// Encode `texts` as label material on every core, ahead of applying the update they
    /// belong to (see [`super::Analyzer::round_material`]), until `cancelled` is set: texts not
    /// reached by then are skipped. How many were reached (read back, encoded or failed).
    pub fn encode_ahead(
        encoder: &dyn TextEncoder,
        texts: Vec<String>,
        cancelled: &std::sync::atomic::AtomicBool,
    ) -> usize {
        use std::sync::atomic::Ordering;
        let reached = crate::threads::in_threads(texts, crate::threads::cores(), |text| {
            if cancelled.load(Ordering::Relaxed) {
                return false;
            }
            // The vector is kept by the encoder (that is the point); a failure is met again,
            // and reported, when the update is applied.
            let _ = encoder.encode_material(&text);
            true
        });
        reached.into_iter().filter(|&reached| reached).count()
    }

    /// A label name as the encoder reads it (underscores as spaces, as the index reads them).
    pub fn name_text(name: &str) -> String {
        name.replace('_', " ")
    }

    fn label_mut(&mut self, position: usize) -> &mut LabelVectors {
        if self.labels.len() <= position {
            self.labels.resize_with(position + 1, LabelVectors::default);
        }
        &mut self.labels[position]
    }

    /// A label name's vector.
    pub fn encode_name(&self, name: &str) -> Result<Vec<f32>, EncodeError> {
        self.encoder.encode_material(&Self::name_text(name))
    }

    pub fn set_name(&mut self, position: usize, vector: Vec<f32>) {
        self.label_mut(position).name = Some(vector);
    }

    pub fn push_example(&mut self, position: usize, vector: Vec<f32>) {
        self.label_mut(position).push_example(vector);
    }

    /// How close in meaning the query is to one label: its best cosine with the label's
    /// examples or its name (`skipped`: an example vector left out, as in
    /// [`Self::similarity_without`]); None when the label has no vector at all. A cosine,
    /// whatever the weights ranking gives the parts: what the no-match rule reads.
    pub fn closeness(
        &self,
        query: &[f32],
        position: usize,
        skipped: Option<&[f32]>,
    ) -> Option<f64> {
        let label = self.labels.get(position)?;
        label
            .examples
            .iter()
            .filter(|v| skipped != Some(v.as_slice()))
            .chain(label.name.as_ref())
            .map(|v| self.scale.read(cosine(query, v)))
            .reduce(f64::max)
    }

    /// Per label position (`labels` of them): the query's cosine with the prototype of the
    /// label's examples (their mean at unit length) plus `name_weight` × its cosine with the
    /// name (negative cosines count as 0: an unrelated name says nothing). One example: its
    /// own vector; several: where they agree, which a single odd example cannot pull far
    /// (docs/design/embedding-signal.md, "Short texts").
    pub fn similarity(&self, query: &[f32], labels: usize, name_weight: f64) -> Vec<f64> {
        self.similarity_without(query, labels, name_weight, None)
    }

    /// [`Self::similarity`] as if the example vector `held_out.1` of label position
    /// `held_out.0` were not there (an example scored against its label's other examples).
    pub fn similarity_without(
        &self,
        query: &[f32],
        labels: usize,
        name_weight: f64,
        held_out: Option<(usize, &[f32])>,
    ) -> Vec<f64> {
        let without = held_out.and_then(|(at, skipped)| {
            let label = self.labels.get(at)?;
            Some((at, label.prototype_without(skipped)))
        });
        // Every vector compared, label by label (its prototype, then its name), so the
        // cosines can be computed several at a time; then read back in the same order.
        let mut vectors: Vec<&[f32]> = Vec::with_capacity(2 * labels);
        for (position, label) in self.labels.iter().take(labels).enumerate() {
            vectors.extend(prototype_of(&without, position, label).map(|(p, _)| p));
            vectors.extend(label.name.as_deref());
        }
        let mut cosines = cosines(query, &vectors).into_iter();
        let mut scores = vec![0.0; labels];
        for (position, (score, label)) in scores.iter_mut().zip(&self.labels).enumerate() {
            let example = match prototype_of(&without, position, label) {
                Some((_, mean_norm)) => {
                    let count = match &without {
                        Some((at, _)) if *at == position => label.examples.len() - 1,
                        _ => label.examples.len(),
                    };
                    let cosine = cosines.next().unwrap_or(0.0);
                    self.scale.read_prototype(cosine, mean_norm, count).max(0.0)
                }
                None => 0.0,
            };
            let name = match label.name {
                Some(_) => self.scale.read(cosines.next().unwrap_or(0.0)).max(0.0),
                None => 0.0,
            };
            *score = example + name_weight * name;
        }
        scores
    }
}

impl Embeddings {
    /// A label position's name vector and example vectors, as kept (nothing for a position
    /// past the labels held): what the peers and the probe read.
    pub(super) fn material_of(&self, position: usize) -> (Option<&[f32]>, &[Vec<f32>]) {
        match self.labels.get(position) {
            Some(label) => (label.name.as_deref(), &label.examples),
            None => (None, &[]),
        }
    }

    /// Per label position (`labels` of them): the query's highest cosine with one of the
    /// label's examples; None for a label without example vectors (names are not read).
    pub fn nearest_examples(&self, query: &[f32], labels: usize) -> Vec<Option<f64>> {
        let mut nearest = vec![None; labels];
        for (best, label) in nearest.iter_mut().zip(&self.labels) {
            *best = label
                .examples
                .iter()
                .map(|v| self.scale.read(cosine(query, v)))
                .reduce(f64::max);
        }
        nearest
    }
}

/// Dot product of two unit vectors (their cosine): the products summed in order in `f64`.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// Cosines computed together.
const LANES: usize = 4;

/// [`cosine`] of `query` with each vector, bit for bit: each sum still adds its products in
/// order, but `LANES` sums advance side by side, so the processor overlaps their additions
/// (one sum alone waits on each addition before the next: at 50,000 labels that wait was most
/// of a query's time).
fn cosines(query: &[f32], vectors: &[&[f32]]) -> Vec<f64> {
    let n = query.len();
    let mut out = Vec::with_capacity(vectors.len());
    let mut groups = vectors.chunks_exact(LANES);
    for group in groups.by_ref() {
        if group.iter().any(|v| v.len() != n) {
            out.extend(group.iter().map(|v| cosine(query, v)));
            continue;
        }
        // `Sum` for floats starts at -0.0 (x + -0.0 = x for every x, 0 included).
        let mut sums = [-0.0f64; LANES];
        for (i, &x) in query.iter().enumerate() {
            let x = f64::from(x);
            for (sum, v) in sums.iter_mut().zip(group) {
                *sum += x * f64::from(v[i]);
            }
        }
        out.extend(sums);
    }
    out.extend(groups.remainder().iter().map(|v| cosine(query, v)));
    out
}

#[cfg(test)]
pub(crate) mod tests;
