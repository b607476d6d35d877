//! How well confidence is calibrated and how well it ranks: expected calibration error,
//! accuracy at a coverage (the most confident texts first) and the coverage at which accuracy
//! reaches a target. Pure functions over (confidence, right) pairs.

use serde::Serialize;

/// Equal-width confidence bins of the expected calibration error and the reliability diagram.
pub const BINS: usize = 10;

/// Coverages at which accuracy is reported.
pub const COVERAGES: [f64; 3] = [0.5, 0.8, 0.9];

/// The accuracy whose coverage is reported.
pub const TARGET_ACCURACY: f64 = 0.9;

/// One round's calibration and ranking figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Calibration {
    /// Mean confidence over the texts.
    pub mean_confidence: f64,
    /// Expected calibration error over [`BINS`] equal-width bins.
    pub ece: f64,
    /// (coverage, accuracy of that share of the texts, most confident first), per [`COVERAGES`].
    pub accuracy_at: Vec<(f64, f64)>,
    /// The largest share of the texts, most confident first, whose accuracy is at least
    /// [`TARGET_ACCURACY`] (0 when even the most confident text is wrong).
    pub coverage_at_target: f64,
    /// Per bin: (texts, mean confidence, accuracy), for the reliability diagram.
    pub bins: Vec<(usize, f64, f64)>,
    /// Accuracy of the most confident `i`/[`CURVE_POINTS`] of the texts, for the risk–coverage
    /// curve.
    pub curve: Vec<f64>,
}

/// Points of the risk–coverage curve.
pub const CURVE_POINTS: usize = 20;

/// The figures of (confidence, right) pairs; all zero when there are none.
pub fn calibration(points: &[(f64, bool)]) -> Calibration {
    if points.is_empty() {
        return Calibration::default();
    }
    let n = points.len() as f64;
    let ranked = most_confident_first(points);
    let bins = reliability(points);
    let ece = bins
        .iter()
        .map(|&(count, confidence, accuracy)| count as f64 / n * (confidence - accuracy).abs())
        .sum();
    Calibration {
        mean_confidence: points.iter().map(|p| p.0).sum::<f64>() / n,
        ece,
        accuracy_at: COVERAGES
            .iter()
            .map(|&c| (c, accuracy_of_top(&ranked, c)))
            .collect(),
        coverage_at_target: coverage_at(&ranked, TARGET_ACCURACY),
        bins,
        curve: (1..=CURVE_POINTS)
            .map(|i| accuracy_of_top(&ranked, i as f64 / CURVE_POINTS as f64))
            .collect(),
    }
}

/// Whether each text was right, most confident first (ties keep the texts' order).
fn most_confident_first(points: &[(f64, bool)]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| points[b].0.total_cmp(&points[a].0).then(a.cmp(&b)));
    order.into_iter().map(|i| points[i].1).collect()
}

/// Accuracy of the first `coverage` share of `ranked` (at least one text).
fn accuracy_of_top(ranked: &[bool], coverage: f64) -> f64 {
    let take = ((coverage * ranked.len() as f64).round() as usize).clamp(1, ranked.len());
    ranked[..take].iter().filter(|&&r| r).count() as f64 / take as f64
}

/// The largest share of `ranked` whose prefix has accuracy ≥ `target`.
fn coverage_at(ranked: &[bool], target: f64) -> f64 {
    let mut right = 0usize;
    let mut best = 0usize;
    for (i, &r) in ranked.iter().enumerate() {
        right += usize::from(r);
        if right as f64 >= target * (i + 1) as f64 - 1e-9 {
            best = i + 1;
        }
    }
    best as f64 / ranked.len() as f64
}

/// Per equal-width bin: (texts, mean confidence, accuracy); empty bins are (0, 0, 0).
fn reliability(points: &[(f64, bool)]) -> Vec<(usize, f64, f64)> {
    let mut sums = vec![(0usize, 0.0f64, 0usize); BINS];
    for &(confidence, right) in points {
        let bin = ((confidence.clamp(0.0, 1.0) * BINS as f64) as usize).min(BINS - 1);
        sums[bin].0 += 1;
        sums[bin].1 += confidence;
        sums[bin].2 += usize::from(right);
    }
    sums.into_iter()
        .map(|(count, confidence, right)| {
            if count == 0 {
                (0, 0.0, 0.0)
            } else {
                (
                    count,
                    confidence / count as f64,
                    right as f64 / count as f64,
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_confidence_that_matches_accuracy_in_every_bin_has_no_error() {
        // 0.25 confidence, one right in four; 0.75, three in four.
        let points = [
            (0.25, true),
            (0.25, false),
            (0.25, false),
            (0.25, false),
            (0.75, true),
            (0.75, true),
            (0.75, true),
            (0.75, false),
        ];
        let c = calibration(&points);
        assert!(c.ece.abs() < 1e-12);
        assert!((c.mean_confidence - 0.5).abs() < 1e-12);
    }

    #[test]
    fn an_overconfident_guess_is_its_gap() {
        let c = calibration(&[(0.9, false), (0.9, true)]);
        assert!((c.ece - 0.4).abs() < 1e-12);
    }

    #[test]
    fn coverage_ranks_the_most_confident_first() {
        // Ranked: right, right, wrong, right, wrong.
        let points = [
            (0.1, false),
            (0.9, true),
            (0.5, false),
            (0.8, true),
            (0.4, true),
        ];
        let c = calibration(&points);
        assert_eq!(c.accuracy_at[0], (0.5, 2.0 / 3.0)); // top 2.5 → 3 texts
        assert!((c.coverage_at_target - 0.4).abs() < 1e-12);
        assert_eq!(c.curve.len(), CURVE_POINTS);
        assert_eq!(c.curve[CURVE_POINTS - 1], 0.6);
    }

    #[test]
    fn no_texts_no_figures() {
        assert_eq!(calibration(&[]), Calibration::default());
    }

    proptest! {
        /// The oracle: ECE recomputed naively, bin by bin.
        #[test]
        fn ece_is_the_weighted_gap_of_the_bins(points in prop::collection::vec((0.0f64..=1.0, any::<bool>()), 1..200)) {
            let c = calibration(&points);
            let mut expected = 0.0;
            for bin in 0..BINS {
                let inside: Vec<&(f64, bool)> = points
                    .iter()
                    .filter(|(p, _)| ((p * BINS as f64) as usize).min(BINS - 1) == bin)
                    .collect();
                if inside.is_empty() {
                    continue;
                }
                let m = inside.len() as f64;
                let confidence = inside.iter().map(|p| p.0).sum::<f64>() / m;
                let accuracy = inside.iter().filter(|p| p.1).count() as f64 / m;
                expected += m / points.len() as f64 * (confidence - accuracy).abs();
            }
            prop_assert!((c.ece - expected).abs() < 1e-9);
            prop_assert!((0.0..=1.0).contains(&c.coverage_at_target));
            // Full coverage is the overall accuracy.
            let overall = points.iter().filter(|p| p.1).count() as f64 / points.len() as f64;
            prop_assert!((c.curve[CURVE_POINTS - 1] - overall).abs() < 1e-12);
        }
    }
}
