//! The embedding signal's own tests, and the encoders other tests share.

use super::*;

/// A deterministic encoder for tests: a unit vector over a few topic words, so texts sharing
/// a topic word are similar and others orthogonal (a real model is in tests/embedding.rs).
pub struct TopicEncoder;

pub const TOPICS: [&str; 4] = ["space", "food", "sport", "money"];

impl TextEncoder for TopicEncoder {
    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        let lower = text.to_lowercase();
        let mut v: Vec<f32> = TOPICS
            .iter()
            .map(|t| lower.matches(t).count() as f32)
            .collect();
        v.push(0.1); // never the zero vector
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        Ok(v.into_iter().map(|x| x / norm).collect())
    }
}

#[test]
fn material_encoded_on_every_core_comes_back_in_order() {
    let e = Embeddings::new(Arc::new(TopicEncoder));
    let texts: Vec<String> = (0..9)
        .map(|i| format!("{} {}", TOPICS[i % 4], TOPICS[(i * 3) % 4].repeat(i)))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let one_by_one: Vec<_> = texts.iter().map(|t| TopicEncoder.encode(t)).collect();
    assert_eq!(e.encode_material(&texts), one_by_one);
    assert!(e.encode_material(&[]).is_empty());
}

/// Counts the texts it encodes.
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicUsize);

impl TextEncoder for Counting {
    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        TopicEncoder.encode(text)
    }
}

/// The topic encoder, saying its unrelated texts read `0.5`.
struct Crowded;

impl TextEncoder for Crowded {
    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        TopicEncoder.encode(text)
    }
    fn unrelated_cosine(&self) -> f64 {
        0.5
    }
}

#[test]
fn a_crowded_model_s_cosines_are_read_from_its_unrelated_cosine() {
    let build = |encoder: Arc<dyn TextEncoder>| {
        let mut e = Embeddings::new(encoder.clone());
        e.push_example(0, encoder.encode("space").unwrap_or_default());
        e.push_example(1, encoder.encode("food").unwrap_or_default());
        e
    };
    let query = TopicEncoder.encode("space space food").unwrap_or_default();
    let plain = build(Arc::new(TopicEncoder)).similarity(&query, 2, 0.0);
    let crowded = build(Arc::new(Crowded)).similarity(&query, 2, 0.0);
    // Below the unrelated cosine reads negative, and a negative cosine counts as 0.
    for (p, c) in plain.iter().zip(&crowded) {
        assert!(
            (c - ((p - 0.5) / 0.5).max(0.0)).abs() < 1e-6,
            "{plain:?} {crowded:?}"
        );
    }
    assert!(crowded[0] > 0.0 && crowded[1] == 0.0, "{crowded:?}");
    // The same reading for closeness and the nearest example; 1 still reads 1.
    let e = build(Arc::new(Crowded));
    let space = TopicEncoder.encode("space").unwrap_or_default();
    assert!((e.closeness(&space, 0, None).unwrap_or_default() - 1.0).abs() < 1e-6);
    let nearest = e.nearest_examples(&query, 2);
    assert!((nearest[0].unwrap_or_default() - crowded[0]).abs() < 1e-6);
    assert!(nearest[1].unwrap_or_default() < 0.0, "{nearest:?}");
    // A value no model should report is not used to divide.
    struct Broken;
    impl TextEncoder for Broken {
        fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
            TopicEncoder.encode(text)
        }
        fn unrelated_cosine(&self) -> f64 {
            1.0
        }
    }
    assert_eq!(build(Arc::new(Broken)).similarity(&query, 2, 0.0), plain);
}

/// Vectors with a common part: `√u` along the first axis, the rest their own axis
/// (`own N`), or an even mix of own axes 1 to 3 (`mix`).
struct CommonPart;

const COMMON: f64 = 0.64;

impl TextEncoder for CommonPart {
    fn encode(&self, text: &str) -> Result<Vec<f32>, EncodeError> {
        let mut v = vec![0f32; 6];
        v[0] = COMMON.sqrt() as f32;
        let rest = (1.0 - COMMON).sqrt();
        if text == "mix" {
            for x in &mut v[1..=3] {
                *x = (rest / 3f64.sqrt()) as f32;
            }
        } else {
            let axis: usize = text.trim_start_matches("own ").parse().unwrap_or(5);
            v[axis] = rest as f32;
        }
        Ok(v)
    }
    fn unrelated_cosine(&self) -> f64 {
        COMMON
    }
}

#[test]
fn a_prototype_of_several_examples_reads_its_own_parts_not_the_common_one() {
    let mut e = Embeddings::new(Arc::new(CommonPart));
    for text in ["own 1", "own 2", "own 3"] {
        e.push_example(0, CommonPart.encode(text).unwrap_or_default());
    }
    e.push_example(1, CommonPart.encode("own 4").unwrap_or_default());
    let read = |text: &str| {
        let query = CommonPart.encode(text).unwrap_or_default();
        e.similarity(&query, 2, 0.0)
    };
    // Unrelated to both labels: 0 for the three-example label as for the one-example one
    // (read as a plain cosine, the three examples' prototype would read 0.84, not 0.64).
    let unrelated = read("own 5");
    assert!(unrelated.iter().all(|s| s.abs() < 1e-6), "{unrelated:?}");
    // The prototype's own direction reads 1; one of its examples 1/√3, as the own parts'
    // cosine says.
    assert!((read("mix")[0] - 1.0).abs() < 1e-6);
    assert!((read("own 2")[0] - 1.0 / 3f64.sqrt()).abs() < 1e-6);
    assert!((read("own 4")[1] - 1.0).abs() < 1e-6);
}

#[test]
fn encoding_ahead_encodes_every_text_until_cancelled() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let texts: Vec<String> = (0..7).map(|i| format!("space {i}")).collect();
    let counting = Counting::default();
    let running = AtomicBool::new(false);
    assert_eq!(
        Embeddings::encode_ahead(&counting, texts.clone(), &running),
        7
    );
    assert_eq!(counting.0.load(Ordering::SeqCst), 7);
    let cancelled = AtomicBool::new(true);
    assert_eq!(Embeddings::encode_ahead(&counting, texts, &cancelled), 0);
    assert_eq!(counting.0.load(Ordering::SeqCst), 7, "nothing more encoded");
}

#[test]
fn cosines_side_by_side_are_the_cosines_one_by_one_bit_for_bit() {
    // Deterministic values of both signs and several magnitudes, and zeros of both signs.
    let value = |i: usize, j: usize| {
        let x = ((i * 7919 + j * 104_729) % 2003) as f32 / 1001.0 - 1.0;
        x * 10f32.powi((i % 5) as i32 - 2)
    };
    let query: Vec<f32> = (0..37).map(|j| value(999, j)).collect();
    let mut vectors: Vec<Vec<f32>> = (0..29)
        .map(|i| (0..37).map(|j| value(i, j)).collect())
        .collect();
    vectors.push(vec![-0.0; 37]);
    vectors.push(vec![0.0; 37]);
    vectors.push(vec![1.0; 5]); // another length: summed over the shorter
    let refs: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
    let one_by_one: Vec<u64> = refs.iter().map(|v| cosine(&query, v).to_bits()).collect();
    let together: Vec<u64> = cosines(&query, &refs).iter().map(|c| c.to_bits()).collect();
    assert_eq!(together, one_by_one);
    let negative_zero = [-0.0f32; 37];
    let ones = vec![1.0f32; 37];
    let group: Vec<&[f32]> = vec![&ones; LANES];
    assert_eq!(
        cosines(&negative_zero, &group)[0].to_bits(),
        cosine(&negative_zero, &ones).to_bits()
    );
}

#[test]
fn a_label_scores_its_examples_prototype_plus_its_weighted_name() {
    let mut e = Embeddings::new(Arc::new(TopicEncoder));
    let vectors: Vec<Vec<f32>> = ["money money", "space"]
        .iter()
        .map(|text| TopicEncoder.encode(text).unwrap())
        .collect();
    for vector in &vectors {
        e.push_example(0, vector.clone());
    }
    let name = e.encode_name("junk_food").unwrap();
    e.set_name(1, name);
    let query = TopicEncoder.encode("space").unwrap();
    let s = e.similarity(&query, 3, 2.0);
    // The prototype: the two examples' mean at unit length.
    let sum: Vec<f64> = vectors[0]
        .iter()
        .zip(&vectors[1])
        .map(|(a, b)| f64::from(*a) + f64::from(*b))
        .collect();
    let prototype = unit(&sum).unwrap();
    assert!(
        (s[0] - cosine(&query, &prototype)).abs() < 1e-6,
        "the prototype's cosine: {s:?}"
    );
    assert!(s[0] < 0.99, "not the closest example's: {s:?}");
    // Scored as if one example were not there, the prototype is the other one.
    let without = e.similarity_without(&query, 3, 2.0, Some((0, &vectors[0])));
    assert!((without[0] - 1.0).abs() < 1e-6, "{without:?}");
    // The name is orthogonal but for the shared constant component.
    assert!(s[1] > 0.0 && s[1] < 0.05, "{s:?}");
    assert_eq!(s[2], 0.0, "a label without vectors scores nothing");
}
