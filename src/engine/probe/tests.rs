use super::*;

fn terms(text: &str) -> TermCounts {
    TermCounts::of(text)
}

/// Three classes, each told apart by its words and by its direction in a 3-d space.
fn toy() -> (Vec<TermCounts>, Vec<Vec<f32>>, Vec<usize>) {
    let texts = [
        ("set an alarm for seven", [1.0, 0.0, 0.0], 0),
        ("wake me up with an alarm", [0.9, 0.1, 0.0], 0),
        ("play some jazz music", [0.0, 1.0, 0.0], 1),
        ("put on my music playlist", [0.1, 0.9, 0.0], 1),
        ("what is the weather today", [0.0, 0.0, 1.0], 2),
        ("will it rain tomorrow weather", [0.0, 0.1, 0.9], 2),
    ];
    let unit = |v: [f32; 3]| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    (
        texts.iter().map(|(t, _, _)| terms(t)).collect(),
        texts.iter().map(|(_, v, _)| unit(*v)).collect(),
        texts.iter().map(|(_, _, c)| *c).collect(),
    )
}

fn samples<'a>(t: &'a [TermCounts], v: &'a [Vec<f32>], c: &[usize]) -> Vec<Sample<'a>> {
    t.iter()
        .zip(v)
        .zip(c)
        .map(|((terms, vector), &class)| Sample {
            class,
            vector: Some(vector),
            terms,
        })
        .collect()
}

#[test]
fn the_gradient_is_the_objective_s_slope() {
    let (t, v, c) = toy();
    let samples = samples(&t, &v, &c);
    let vocabulary = Vocabulary::of(&samples, usize::MAX);
    let features: Vec<Features<'_>> = samples
        .iter()
        .map(|s| Features {
            dense: s.vector,
            sparse: vocabulary.features(s.terms),
        })
        .collect();
    let row = 3 + vocabulary.len() + 1;
    let problem = Problem {
        features: &features,
        targets: &c,
        classes: 3,
        dim: 3,
        row,
    };
    let w: Vec<f64> = (0..3 * row)
        .map(|i| ((i * 7919) % 13) as f64 / 13.0 - 0.5)
        .collect();
    let (_, gradient) = problem.evaluate(&w);
    for i in (0..w.len()).step_by(5) {
        let h = 1e-6;
        let mut up = w.clone();
        up[i] += h;
        let mut down = w.clone();
        down[i] -= h;
        let numeric = (problem.evaluate(&up).0 - problem.evaluate(&down).0) / (2.0 * h);
        assert!(
            (numeric - gradient[i]).abs() < 1e-5 * numeric.abs().max(1.0),
            "component {i}: {numeric} against {}",
            gradient[i]
        );
    }
}

#[test]
fn a_fitted_probe_reads_its_own_examples_back() {
    let (t, v, c) = toy();
    let probe = Probe::fit(&samples(&t, &v, &c), 3, 3).expect("fitted");
    for ((terms, vector), &class) in t.iter().zip(&v).zip(&c) {
        let p = probe.probabilities(Some(vector), terms, |_| true);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let best = (0..3)
            .max_by(|&a, &b| p[a].total_cmp(&p[b]))
            .expect("classes");
        assert_eq!(best, class, "{p:?}");
    }
    // A new text in words alone, and in meaning alone.
    let p = probe.probabilities(None, &terms("any music tonight"), |_| true);
    assert!(p[1] > p[0] && p[1] > p[2], "{p:?}");
    let p = probe.probabilities(Some(&[0.0, 0.0, 1.0]), &terms("zzz"), |_| true);
    assert!(p[2] > p[0] && p[2] > p[1], "{p:?}");
}

#[test]
fn closed_classes_read_zero_and_the_open_ones_share_the_whole() {
    let (t, v, c) = toy();
    let probe = Probe::fit(&samples(&t, &v, &c), 3, 3).expect("fitted");
    let p = probe.probabilities(Some(&v[0]), &t[0], |class| class != 0);
    assert_eq!(p[0], 0.0);
    assert!((p[1] + p[2] - 1.0).abs() < 1e-9);
}

#[test]
fn the_same_material_gives_the_same_weights_bit_for_bit() {
    let (t, v, c) = toy();
    let a = Probe::fit(&samples(&t, &v, &c), 3, 3).expect("fitted");
    let b = Probe::fit(&samples(&t, &v, &c), 3, 3).expect("fitted");
    let bits = |p: &Probe| p.weights.iter().map(|w| w.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a), bits(&b));
}

#[test]
fn nothing_to_fit_is_no_probe() {
    assert!(Probe::fit(&[], 3, 3).is_none());
}

#[test]
fn a_capped_vocabulary_keeps_the_most_frequent_terms_in_the_order_found() {
    let ids: HashMap<String, u32> = ["rare", "common", "tie_a", "tie_b"]
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), i as u32))
        .collect();
    let df = vec![1, 5, 2, 2];
    let (kept, kept_df) = most_frequent(ids.clone(), df.clone(), 2);
    // "common" (5), then the first of the tied pair; numbered as found.
    assert_eq!(kept.len(), 2);
    assert_eq!((kept["common"], kept["tie_a"]), (0, 1));
    assert_eq!(kept_df, vec![5, 2]);
    // Under the cap, nothing moves.
    assert_eq!(most_frequent(ids.clone(), df.clone(), 4), (ids, df));
}

#[test]
fn a_probe_weight_reads_as_a_number_or_fitted_and_says_what_else_it_wants() {
    #[derive(serde::Deserialize)]
    struct Section {
        probe_weight: ProbeWeight,
    }
    let read = |text: &str| toml::from_str::<Section>(text).map(|s| s.probe_weight);
    assert_eq!(read("probe_weight = 2").unwrap(), ProbeWeight::Fixed(2.0));
    assert_eq!(read("probe_weight = 0.5").unwrap(), ProbeWeight::Fixed(0.5));
    assert_eq!(
        read("probe_weight = \"fitted\"").unwrap(),
        ProbeWeight::FITTED
    );
    let error = read("probe_weight = \"fited\"").unwrap_err().to_string();
    assert!(error.contains("\"fitted\" or a number"), "{error}");
    assert_eq!("fitted".parse::<ProbeWeight>(), Ok(ProbeWeight::FITTED));
    assert!("-1".parse::<ProbeWeight>().is_err());
}
