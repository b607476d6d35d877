//! How alike two pooled texts are, for one community pass: each text's TF-IDF vector over the
//! pool's words and, where its meaning weighs, its sentence vector, and each text's nearest
//! neighbours by their joint cosine.
//!
//! Words are sparse and searched through an inverted index; meaning is dense and compared by a
//! plain product with every other text that has one: through the inverted index its 256
//! dimensions touched every pair term by term (a pass over 5,000 short texts took 14 s).

use std::collections::{BTreeMap, HashMap};

use super::meaning::{weight_of, Meaning};
use super::{DiscoveryConfig, PooledText};
use crate::engine::LabelMaterial;

/// A term in more than this share of the pooled texts links too much to tell themes apart
/// (and its postings would make the neighbour search quadratic)…
const MAX_DF_SHARE: f64 = 0.3;
/// …in a pool large enough to hold several themes. In a small pool one emerging theme may be
/// most of it, and its own words are what make it a community (a pool of 16 texts, 12 of one
/// missing class, lost them all to the share rule).
const MIN_DF_CAP: f64 = 100.0;

/// A sparse vector over the pool's term ids.
type Sparse = Vec<(u32, f64)>;

/// One pooled text as a pass compares it: [√(1 − w) · words, √w · meaning] — unit length when
/// both parts are there, √w with no word in two texts, empty with neither.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct TextVector {
    /// TF-IDF weights by term id, sorted by id.
    words: Sparse,
    /// The centred sentence vector, where the text's meaning weighs.
    meaning: Option<Vec<f32>>,
}

impl TextVector {
    /// This text's cosine with `centroid` (a sum of unit vectors, normalised here).
    pub fn cosine_with(&self, centroid: &Centroid) -> f64 {
        if centroid.norm <= 0.0 {
            return 0.0;
        }
        let words: f64 = self
            .words
            .iter()
            .map(|(term, w)| w * centroid.words.get(term).copied().unwrap_or(0.0))
            .sum();
        let meaning: f64 = match &self.meaning {
            Some(v) if v.len() == centroid.meaning.len() => v
                .iter()
                .zip(&centroid.meaning)
                .map(|(x, c)| f64::from(*x) * c)
                .sum(),
            _ => 0.0,
        };
        (words + meaning) / centroid.norm
    }
}

/// The sum of some texts' vectors (ordered, so sums come out the same on every replica).
#[derive(Debug, Clone, Default)]
pub(super) struct Centroid {
    words: BTreeMap<u32, f64>,
    meaning: Vec<f64>,
    norm: f64,
}

impl Centroid {
    pub fn of<'v>(vectors: impl IntoIterator<Item = &'v TextVector>) -> Self {
        let mut centroid = Self::default();
        for vector in vectors {
            for &(term, weight) in &vector.words {
                *centroid.words.entry(term).or_default() += weight;
            }
            if let Some(meaning) = &vector.meaning {
                if centroid.meaning.len() < meaning.len() {
                    centroid.meaning.resize(meaning.len(), 0.0);
                }
                for (c, x) in centroid.meaning.iter_mut().zip(meaning) {
                    *c += f64::from(*x);
                }
            }
        }
        let squares: f64 = centroid.words.values().map(|w| w * w).sum::<f64>()
            + centroid.meaning.iter().map(|w| w * w).sum::<f64>();
        centroid.norm = squares.sqrt();
        centroid
    }
}

impl Centroid {
    /// The cosine of two centroids (0 when either is empty).
    pub fn cosine(&self, other: &Centroid) -> f64 {
        if self.norm <= 0.0 || other.norm <= 0.0 {
            return 0.0;
        }
        let (small, large) = if self.words.len() <= other.words.len() {
            (&self.words, &other.words)
        } else {
            (&other.words, &self.words)
        };
        let words: f64 = small
            .iter()
            .map(|(term, w)| w * large.get(term).copied().unwrap_or(0.0))
            .sum();
        let meaning: f64 = self
            .meaning
            .iter()
            .zip(&other.meaning)
            .map(|(a, b)| a * b)
            .sum();
        (words + meaning) / (self.norm * other.norm)
    }
}

/// Each text's vector: TF-IDF over its words (sublinear tf, smoothed idf over the pool; terms
/// in a single text or in more than [`MAX_DF_SHARE`] of them, past [`MIN_DF_CAP`], left out:
/// they link nothing or everything), joined with its meaning ([`Meaning`]) at the weight
/// [`weight_of`] gives it: `meaning_weight_short` for a text of at most
/// `engine.ranking.short_text_terms` terms, `meaning_weight` for the others (a short text's few
/// words rarely meet another's). For two texts of one weight w their similarity is (1 − w) ×
/// their words' cosine + w × their meanings'. The sentence vectors are centred first (on
/// [`Meaning::centre`], else on the encoded texts' mean), so that two texts unrelated in
/// meaning read near 0 rather than at the encoder's usual floor.
pub(super) fn text_vectors(
    texts: &[&PooledText],
    meaning: &Meaning,
    config: &DiscoveryConfig,
    material: &LabelMaterial,
) -> Vec<TextVector> {
    let words = word_vectors(texts);
    let centre = meaning.centre.as_ref();
    let meaning = &meaning.vectors;
    let dims = meaning.iter().flatten().map(Vec::len).max().unwrap_or(0);
    if dims == 0 || meaning.len() != words.len() {
        return words
            .into_iter()
            .map(|words| TextVector {
                words,
                meaning: None,
            })
            .collect();
    }
    let mean = match centre {
        Some(centre) if centre.len() == dims => centre.clone(),
        _ => mean_of(meaning, dims),
    };
    words
        .into_iter()
        .zip(meaning)
        .zip(texts)
        .map(|((mut words, sentence), text)| {
            let weight = weight_of(text, config, material);
            let Some(sentence) = sentence
                .as_ref()
                .filter(|v| v.len() == dims && weight > 0.0)
            else {
                return TextVector {
                    words,
                    meaning: None,
                };
            };
            let centred: Vec<f64> = sentence
                .iter()
                .zip(&mean)
                .map(|(x, m)| f64::from(*x) - m)
                .collect();
            let norm = centred.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm <= 0.0 {
                return TextVector {
                    words,
                    meaning: None,
                };
            }
            let (word_share, meaning_share) = ((1.0 - weight).sqrt(), weight.sqrt());
            words.iter_mut().for_each(|(_, w)| *w *= word_share);
            let scale = meaning_share / norm;
            TextVector {
                words,
                meaning: Some(centred.iter().map(|x| (x * scale) as f32).collect()),
            }
        })
        .collect()
}

/// The mean of the sentence vectors of length `dims`.
fn mean_of(meaning: &[Option<Vec<f32>>], dims: usize) -> Vec<f64> {
    let present: Vec<&Vec<f32>> = meaning
        .iter()
        .flatten()
        .filter(|v| v.len() == dims)
        .collect();
    let mut mean = vec![0.0f64; dims];
    for v in &present {
        for (m, x) in mean.iter_mut().zip(v.iter()) {
            *m += f64::from(*x) / present.len() as f64;
        }
    }
    mean
}

fn word_vectors(texts: &[&PooledText]) -> Vec<Sparse> {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut df: Vec<u32> = Vec::new();
    for text in texts {
        for (term, _) in &text.terms.counts {
            let next = ids.len() as u32;
            let id = *ids.entry(term.as_str()).or_insert(next);
            if id as usize == df.len() {
                df.push(0);
            }
            df[id as usize] += 1;
        }
    }
    let n = texts.len() as f64;
    let max_df = (n * MAX_DF_SHARE).max(MIN_DF_CAP);
    texts
        .iter()
        .map(|text| {
            let mut vector: Sparse = text
                .terms
                .counts
                .iter()
                .filter_map(|(term, count)| {
                    let id = ids[term.as_str()];
                    let df = f64::from(df[id as usize]);
                    (df >= 2.0 && df <= max_df).then(|| {
                        let idf = ((n + 1.0) / (df + 1.0)).ln() + 1.0;
                        (id, (1.0 + f64::from(*count).ln()) * idf)
                    })
                })
                .collect();
            let norm = vector.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
            if norm > 0.0 {
                vector.iter_mut().for_each(|(_, w)| *w /= norm);
            }
            vector.sort_unstable_by_key(|(id, _)| *id);
            vector
        })
        .collect()
}

/// Each text's `neighbours` most similar texts (cosine ≥ `min_similarity`), as undirected
/// edges `(a, b, similarity)` with `a < b`, each once.
pub(super) fn neighbour_edges(
    vectors: &[TextVector],
    config: &DiscoveryConfig,
) -> Vec<(usize, usize, f64)> {
    let terms = vectors
        .iter()
        .flat_map(|v| v.words.iter().map(|(id, _)| *id as usize + 1))
        .max()
        .unwrap_or(0);
    let mut postings: Vec<Vec<(u32, f64)>> = vec![Vec::new(); terms];
    for (doc, vector) in vectors.iter().enumerate() {
        for &(term, weight) in &vector.words {
            postings[term as usize].push((doc as u32, weight));
        }
    }
    let with_meaning: Vec<(u32, &[f32])> = vectors
        .iter()
        .enumerate()
        .filter_map(|(doc, v)| Some((doc as u32, v.meaning.as_deref()?)))
        .collect();
    let mut scores = vec![0.0f64; vectors.len()];
    let mut seen = vec![false; vectors.len()];
    let mut touched: Vec<u32> = Vec::new();
    let mut edges: HashMap<(usize, usize), f64> = HashMap::new();
    for (doc, vector) in vectors.iter().enumerate() {
        let mut add = |other: u32, similarity: f64| {
            if other as usize == doc {
                return;
            }
            if !std::mem::replace(&mut seen[other as usize], true) {
                touched.push(other);
            }
            scores[other as usize] += similarity;
        };
        for &(term, weight) in &vector.words {
            for &(other, other_weight) in &postings[term as usize] {
                add(other, weight * other_weight);
            }
        }
        if let Some(meaning) = &vector.meaning {
            for &(other, other_meaning) in &with_meaning {
                add(other, f64::from(dot(meaning, other_meaning)));
            }
        }
        let mut nearest: Vec<(u32, f64)> = touched
            .drain(..)
            .map(|other| {
                seen[other as usize] = false;
                (other, std::mem::take(&mut scores[other as usize]))
            })
            .filter(|&(_, similarity)| similarity >= config.min_similarity)
            .collect();
        nearest.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        nearest.truncate(config.neighbours);
        for (other, similarity) in nearest {
            let key = (doc.min(other as usize), doc.max(other as usize));
            edges.insert(key, similarity);
        }
    }
    let mut edges: Vec<(usize, usize, f64)> =
        edges.into_iter().map(|((a, b), s)| (a, b, s)).collect();
    edges.sort_by_key(|&(a, b, _)| (a, b));
    edges
}

/// A dot product in eight running sums: the compiler turns it into vector instructions, and
/// its order (so its rounding) is fixed, so every replica gets the same value.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunked_product_is_the_plain_one() {
        let a: Vec<f32> = (0..19).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..19).map(|i| (i as f32 * 0.11).cos()).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-5);
        assert_eq!(dot(&[], &[]), 0.0);
    }

    #[test]
    fn a_text_is_its_own_centroid() {
        let v = TextVector {
            words: vec![(0, 0.6)],
            meaning: Some(vec![0.8, 0.0]),
        };
        let centroid = Centroid::of([&v]);
        assert!((v.cosine_with(&centroid) - 1.0).abs() < 1e-6);
        assert_eq!(TextVector::default().cosine_with(&Centroid::default()), 0.0);
    }
}
