//! A round's figures from its texts' results (`RoundMetrics`), and the label map drawn from
//! the last round's predictions.

use std::collections::{BTreeMap, HashMap};

use super::scored::Scored;
use super::{calibration, llm_curve, Learning, RoundMetrics, StageSeconds, READINGS};
use crate::discovery::label_map::{self, LabelMap, LabelTraffic};
use crate::engine::answer::HallucinationKind;
use crate::engine::{Engine, Status};

/// The label map of the final engine, with the last round's predictions as traffic and its
/// mistakes as confusions.
pub(super) fn map_of(engine: &Engine, scored: &[Scored]) -> Option<LabelMap> {
    let mut traffic: HashMap<String, LabelTraffic> = HashMap::new();
    let mut confusions: BTreeMap<(String, String), u64> = BTreeMap::new();
    // A text published with no label is no label's traffic, and no confusion.
    for s in scored.iter().filter(|s| s.status != Status::NoMatch) {
        let entry = traffic.entry(s.label.clone()).or_default();
        entry.volume += 1;
        entry.hallucinations += u64::from(s.hallucination.is_some());
        if s.label != s.gold {
            let pair = if s.label < s.gold {
                (s.label.clone(), s.gold.clone())
            } else {
                (s.gold.clone(), s.label.clone())
            };
            *confusions.entry(pair).or_default() += 1;
        }
    }
    match label_map::label_map(engine, &confusions, &traffic) {
        Ok(map) => Some(map),
        Err(error) => {
            tracing::warn!(%error, "label map not drawn");
            None
        }
    }
}

/// The mean of `values`, 0 when there are none.
pub(crate) fn mean_or_zero(values: impl Iterator<Item = f64>) -> f64 {
    mean(values).unwrap_or(0.0)
}

pub(super) fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(sum, n), v| (sum + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Mean over gold classes of the share of their texts labelled right.
fn macro_recall(scored: &[Scored]) -> f64 {
    // Ordered, so the float sum (and the table's last digit) is the same from run to run.
    let mut per_gold: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for s in scored {
        let entry = per_gold.entry(s.gold.as_str()).or_insert((0, 0));
        entry.1 += 1;
        if s.right() {
            entry.0 += 1;
        }
    }
    if per_gold.is_empty() {
        return 0.0;
    }
    per_gold
        .values()
        .map(|(hit, all)| *hit as f64 / *all as f64)
        .sum::<f64>()
        / per_gold.len() as f64
}

pub(super) fn summarise(
    round: usize,
    engine: &Engine,
    scored: &[Scored],
    description_calls: u32,
    learning: Learning,
    seconds: StageSeconds,
) -> RoundMetrics {
    let Learning {
        keywords_added_online,
        learned,
        learned_correct,
        reviewed,
        audited,
    } = learning;
    let n = scored.len().max(1) as f64;
    let count = |f: &dyn Fn(&Scored) -> bool| scored.iter().filter(|s| f(s)).count();
    let correct = count(&|s| s.right());
    let strict = count(&|s| s.right() && s.hallucination != Some(HallucinationKind::UnknownLabel));
    let unknown = count(&|s| s.hallucination == Some(HallucinationKind::UnknownLabel));
    let outside = count(&|s| s.hallucination == Some(HallucinationKind::OutsideCandidates));
    RoundMetrics {
        round,
        labels: engine.labels().active().count(),
        texts: scored.len(),
        accuracy: correct as f64 / n,
        graph_accuracy: count(&|s| s.graph_right()) as f64 / n,
        learned,
        learned_correct,
        readings: READINGS
            .iter()
            .enumerate()
            .filter(|_| scored.iter().any(|s| !s.readings.is_empty()))
            .map(|(i, (name, _, _))| {
                let right = scored
                    .iter()
                    .filter(|s| s.readings.get(i).copied().unwrap_or(false))
                    .count();
                (name.to_string(), right as f64 / n)
            })
            .collect(),
        strict_accuracy: strict as f64 / n,
        macro_recall: macro_recall(scored),
        hallucination_rate: (unknown + outside) as f64 / n,
        hallucinations_unknown_label: unknown,
        hallucinations_outside_candidates: outside,
        candidate_recall: count(&|s| s.gold_in_candidates) as f64 / n,
        mean_candidates: scored.iter().map(|s| s.candidates as f64).sum::<f64>() / n,
        reviewed,
        audited,
        llm_failures: count(&|s| s.llm_failed),
        llm_calls_per_text: scored.iter().map(|s| f64::from(s.llm_calls)).sum::<f64>() / n,
        prompt_tokens_per_text: scored
            .iter()
            .map(|s| f64::from(s.prompt_tokens))
            .sum::<f64>()
            / n,
        on_list_mass: mean(scored.iter().filter_map(|s| s.on_list)),
        wavering_answers: count(&|s| s.on_list.is_some_and(|m| m < 0.9)),
        review_share: count(&|s| s.status == Status::NeedsReview) as f64 / n,
        no_match_share: count(&|s| s.status == Status::NoMatch) as f64 / n,
        out_of_scope: None,
        decided_accuracy: {
            let decided = count(&|s| s.status == Status::Decided);
            let right = count(&|s| s.status == Status::Decided && s.record.right);
            if decided == 0 {
                0.0
            } else {
                right as f64 / decided as f64
            }
        },
        llm_curve: {
            let readings: Vec<llm_curve::Readings> = scored
                .iter()
                .filter_map(|s| s.llm_readings.clone())
                .collect();
            if readings.len() == scored.len() {
                llm_curve::curve(&readings)
            } else {
                Vec::new()
            }
        },
        calibration: calibration::calibration(
            &scored
                .iter()
                .map(|s| (s.record.confidence, s.record.right))
                .collect::<Vec<_>>(),
        ),
        description_calls,
        graph_nodes: engine.graph().node_count(),
        graph_edges: engine.graph().edge_count(),
        probe_weight: engine.retriever().probe_weight(),
        keywords_added_online,
        seconds,
    }
}
