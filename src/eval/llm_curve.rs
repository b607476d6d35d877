//! What an LLM endpoint is worth: accuracy against LLM calls per text, over the weights its
//! belief could be fused with and the confidences below which it could be asked. Read from one
//! run that asked about every text (`gorag eval --ask-below 1`), so every point of the curve
//! costs no further call. (Online learning followed the run's own decisions; the curve reads
//! the same texts under other settings, not the stream those settings would have learned.)

use serde::Serialize;

/// Weights of the LLM's belief tried (`scored` choice); a very large weight is the LLM alone.
pub const WEIGHTS: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 4.0, 1e6];

/// Confidences below which the LLM would be asked.
pub const THRESHOLDS: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/// A gain in accuracy smaller than this (over the rounds' mean) is no reason to call an LLM.
pub const MIN_GAIN: f64 = 0.005;

/// How many standard deviations of a coin's tosses the texts the LLM fixed must outnumber
/// those it broke by (a sign test over every round's texts): with some sixty settings to pick
/// from, an endpoint answering at random would otherwise win one by luck.
pub const SIGN_TEST_SIGMAS: f64 = 2.0;

/// One text, read every way: retrieval's own confidence, whether retrieval alone was right,
/// and per weight of [`WEIGHTS`] whether the fused decision was right.
#[derive(Debug, Clone, PartialEq)]
pub struct Readings {
    pub retrieval_confidence: f64,
    pub retrieval_right: bool,
    pub fused_right: Vec<bool>,
}

/// One (weight, threshold) setting and what it gives on a round's texts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    pub llm_weight: f64,
    pub ask_below: f64,
    pub accuracy: f64,
    pub calls_per_text: f64,
    /// Texts the LLM set right that retrieval alone had wrong, and the reverse.
    pub fixed: usize,
    pub broken: usize,
}

/// Every setting's accuracy and calls per text on `texts` (empty without texts).
pub fn curve(texts: &[Readings]) -> Vec<CurvePoint> {
    if texts.is_empty() {
        return Vec::new();
    }
    let n = texts.len() as f64;
    let mut points = Vec::with_capacity(WEIGHTS.len() * THRESHOLDS.len());
    for (w, &weight) in WEIGHTS.iter().enumerate() {
        for &threshold in &THRESHOLDS {
            let asked = |t: &&Readings| crate::engine::asks(t.retrieval_confidence, threshold);
            let fused = |t: &Readings| t.fused_right.get(w).copied().unwrap_or(t.retrieval_right);
            let changed = |fixes: bool| {
                texts
                    .iter()
                    .filter(asked)
                    .filter(|t| fused(t) == fixes && t.retrieval_right != fixes)
                    .count()
            };
            let (fixed, broken) = (changed(true), changed(false));
            let right = texts.iter().filter(|t| t.retrieval_right).count() + fixed - broken;
            points.push(CurvePoint {
                llm_weight: weight,
                ask_below: threshold,
                accuracy: right as f64 / n,
                calls_per_text: texts.iter().filter(asked).count() as f64 / n,
                fixed,
                broken,
            });
        }
    }
    points
}

/// The setting chosen over several rounds' curves (each from [`curve`], same settings in the
/// same order): among the settings whose gain passes a sign test ([`SIGN_TEST_SIGMAS`]), the
/// fewest calls per text within [`MIN_GAIN`] of the best mean accuracy; never asking (weight
/// 0, threshold 0) unless the best beats retrieval alone by [`MIN_GAIN`].
pub fn choose(rounds: &[Vec<CurvePoint>], retrieval_accuracy: &[f64]) -> CurvePoint {
    let baseline = super::mean_or_zero(retrieval_accuracy.iter().copied());
    let never = CurvePoint {
        llm_weight: 0.0,
        ask_below: 0.0,
        accuracy: baseline,
        calls_per_text: 0.0,
        fixed: 0,
        broken: 0,
    };
    let Some(first) = rounds.first() else {
        return never;
    };
    let averaged: Vec<CurvePoint> = first
        .iter()
        .enumerate()
        .map(|(i, setting)| {
            let at = || rounds.iter().filter_map(move |r| r.get(i));
            CurvePoint {
                accuracy: super::mean_or_zero(at().map(|p| p.accuracy)),
                calls_per_text: super::mean_or_zero(at().map(|p| p.calls_per_text)),
                fixed: at().map(|p| p.fixed).sum(),
                broken: at().map(|p| p.broken).sum(),
                ..*setting
            }
        })
        .filter(significant)
        .collect();
    let best = averaged.iter().map(|p| p.accuracy).fold(f64::MIN, f64::max);
    if best < baseline + MIN_GAIN {
        return never;
    }
    // The cheapest setting within MIN_GAIN of the best: calls that buy less are not worth it.
    averaged
        .into_iter()
        .filter(|p| p.accuracy >= best - MIN_GAIN)
        .min_by(|a, b| {
            a.calls_per_text
                .total_cmp(&b.calls_per_text)
                .then(b.accuracy.total_cmp(&a.accuracy))
        })
        .unwrap_or(never)
}

/// Whether the texts a setting fixed outnumber those it broke by more than chance would.
fn significant(point: &CurvePoint) -> bool {
    let (fixed, broken) = (point.fixed as f64, point.broken as f64);
    fixed - broken >= SIGN_TEST_SIGMAS * (fixed + broken).sqrt() && fixed > broken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(confidence: f64, retrieval_right: bool, llm_right: bool) -> Readings {
        Readings {
            retrieval_confidence: confidence,
            retrieval_right,
            fused_right: vec![llm_right; WEIGHTS.len()],
        }
    }

    #[test]
    fn an_llm_right_where_retrieval_is_unsure_is_chosen_for_those_texts_only() {
        // Retrieval is wrong below 0.3 confidence, right above; the LLM is right below and
        // wrong above.
        let texts: Vec<Readings> = (0..100)
            .map(|i| {
                let c = 0.005 + 0.01 * f64::from(i);
                text(c, c > 0.3, c < 0.3)
            })
            .collect();
        let points = curve(&texts);
        let chosen = choose(&[points], &[0.7]);
        assert_eq!(chosen.accuracy, 1.0);
        assert!((chosen.calls_per_text - 0.3).abs() < 1e-12);
        assert!((chosen.ask_below - 0.3).abs() < 1e-12);
    }

    #[test]
    fn an_llm_that_never_helps_is_never_asked() {
        let texts: Vec<Readings> = (0..10)
            .map(|i| text(0.1 * f64::from(i), i % 2 == 0, false))
            .collect();
        let chosen = choose(&[curve(&texts)], &[0.5]);
        assert_eq!((chosen.llm_weight, chosen.ask_below), (0.0, 0.0));
        assert_eq!(chosen.calls_per_text, 0.0);
    }

    #[test]
    fn a_gain_within_chance_is_no_reason_to_ask() {
        // Below 0.5 the LLM fixes 6 texts and breaks 4: accuracy rises, but not beyond what a
        // coin would do.
        let texts: Vec<Readings> = (0..100)
            .map(|i| {
                let c = 0.01 * f64::from(i);
                match i {
                    0..=5 => text(c, false, true),
                    6..=9 => text(c, true, false),
                    _ => text(c, i % 3 != 0, i % 3 != 0),
                }
            })
            .collect();
        let chosen = choose(&[curve(&texts)], &[0.6]);
        assert_eq!((chosen.llm_weight, chosen.ask_below), (0.0, 0.0));
    }

    #[test]
    fn no_texts_no_curve() {
        assert!(curve(&[]).is_empty());
        assert_eq!(choose(&[], &[]).ask_below, 0.0);
    }
}
