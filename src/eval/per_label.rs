//! What a user reads after an evaluation, per label: precision, recall and F1 of each gold
//! label, and the pairs most often confused, over the predictions made after the last round
//! (every held-out text of every round, classified by the final state) — sklearn's
//! `classification_report` and the largest off-diagonal cells of its confusion matrix.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::scored::TextRecord;
use crate::events::PredictionStatus;

/// Confused pairs kept in the report (the rest are in the CSV file).
pub const TOP_CONFUSIONS: usize = 20;

/// How the tables name the outcome of a text published with no label: never a label's row,
/// and in a confused pair only as what was "predicted".
pub const NO_MATCH: &str = "(no match)";

/// One label's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelScores {
    pub label: String,
    /// Texts whose gold label it is.
    pub support: usize,
    /// Texts predicted as it.
    pub predicted: usize,
    /// Of the texts predicted as it, the share whose gold label it is (0 when none was).
    pub precision: f64,
    /// Of its texts, the share predicted as it.
    pub recall: f64,
    pub f1: f64,
}

/// Texts of gold label `gold` predicted as `predicted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confusion {
    pub gold: String,
    pub predicted: String,
    pub texts: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerLabel {
    /// The round after which the texts were classified (the last).
    pub round: usize,
    pub texts: usize,
    /// Texts published with no label (each a miss of its gold label, listed in the confused
    /// pairs as [`NO_MATCH`], never counted as a label's prediction).
    pub no_match: usize,
    /// Mean F1 over the gold labels.
    pub macro_f1: f64,
    /// Gold labels and predicted-only labels, by name.
    pub labels: Vec<LabelScores>,
    /// The [`TOP_CONFUSIONS`] pairs most often confused (in report.json).
    pub most_confused: Vec<Confusion>,
    /// Every confused pair, most texts first (ties by names): `confusions-<strategy>.csv`.
    #[serde(skip)]
    pub confusions: Vec<Confusion>,
}

/// The figures over the records of the last round; None when there is none.
pub fn per_label(texts: &[TextRecord]) -> Option<PerLabel> {
    let round = texts.iter().map(|t| t.round).max()?;
    let last: Vec<&TextRecord> = texts.iter().filter(|t| t.round == round).collect();
    let mut support: BTreeMap<&str, usize> = BTreeMap::new();
    let mut predicted: BTreeMap<&str, usize> = BTreeMap::new();
    let mut right: HashMap<&str, usize> = HashMap::new();
    let mut pairs: HashMap<(&str, &str), usize> = HashMap::new();
    let mut no_match = 0;
    for text in &last {
        *support.entry(&text.gold).or_default() += 1;
        if text.status == PredictionStatus::NoMatch {
            no_match += 1;
            *pairs.entry((&text.gold, NO_MATCH)).or_default() += 1;
            continue;
        }
        *predicted.entry(&text.label).or_default() += 1;
        if text.gold == text.label {
            *right.entry(&text.gold).or_default() += 1;
        } else {
            *pairs.entry((&text.gold, &text.label)).or_default() += 1;
        }
    }
    let mut names: Vec<&str> = support.keys().chain(predicted.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    let labels: Vec<LabelScores> = names
        .into_iter()
        .map(|label| {
            let support = support.get(label).copied().unwrap_or(0);
            let predicted = predicted.get(label).copied().unwrap_or(0);
            let right = right.get(label).copied().unwrap_or(0) as f64;
            let precision = share(right, predicted);
            let recall = share(right, support);
            let f1 = if precision + recall > 0.0 {
                2.0 * precision * recall / (precision + recall)
            } else {
                0.0
            };
            LabelScores {
                label: label.to_string(),
                support,
                predicted,
                precision,
                recall,
                f1,
            }
        })
        .collect();
    let gold: Vec<&LabelScores> = labels.iter().filter(|l| l.support > 0).collect();
    let macro_f1 = gold.iter().map(|l| l.f1).sum::<f64>() / gold.len().max(1) as f64;
    let mut confusions: Vec<Confusion> = pairs
        .into_iter()
        .map(|((gold, predicted), texts)| Confusion {
            gold: gold.to_string(),
            predicted: predicted.to_string(),
            texts,
        })
        .collect();
    confusions.sort_by(|a, b| {
        b.texts
            .cmp(&a.texts)
            .then_with(|| a.gold.cmp(&b.gold))
            .then_with(|| a.predicted.cmp(&b.predicted))
    });
    Some(PerLabel {
        round,
        texts: last.len(),
        no_match,
        macro_f1,
        labels,
        most_confused: confusions.iter().take(TOP_CONFUSIONS).cloned().collect(),
        confusions,
    })
}

fn share(part: f64, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part / whole as f64
    }
}

/// The labels' figures as CSV (a spreadsheet opens it).
pub fn labels_csv(per_label: &PerLabel) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(["label", "support", "predicted", "precision", "recall", "f1"])?;
    for l in &per_label.labels {
        writer.write_record([
            l.label.clone(),
            l.support.to_string(),
            l.predicted.to_string(),
            format!("{:.4}", l.precision),
            format!("{:.4}", l.recall),
            format!("{:.4}", l.f1),
        ])?;
    }
    finish(writer)
}

/// Every confused pair as CSV, most texts first.
pub fn confusions_csv(per_label: &PerLabel) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(["gold", "predicted", "texts"])?;
    for c in &per_label.confusions {
        writer.write_record([c.gold.as_str(), c.predicted.as_str(), &c.texts.to_string()])?;
    }
    finish(writer)
}

/// Each text's prediction as CSV (every round): where it came from, its gold and predicted
/// label (empty with status `no_match`), its status, whether it is right, its confidence and
/// its candidates best first.
pub fn texts_csv(texts: &[TextRecord]) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record([
        "round",
        "text_round",
        "line",
        "gold",
        "predicted",
        "status",
        "right",
        "confidence",
        "candidates",
    ])?;
    for t in texts {
        // A text published with no label: its best guess stays in the candidates.
        let published = t.status != PredictionStatus::NoMatch;
        writer.write_record([
            t.round.to_string(),
            t.text_round.to_string(),
            t.line.to_string(),
            t.gold.clone(),
            if published {
                t.label.clone()
            } else {
                String::new()
            },
            t.status.as_str().to_string(),
            (published && t.right).to_string(),
            format!("{:.4}", t.confidence),
            t.candidates.join(" | "),
        ])?;
    }
    finish(writer)
}

fn finish(writer: csv::Writer<Vec<u8>>) -> Result<String, csv::Error> {
    let bytes = writer
        .into_inner()
        .map_err(|e| csv::Error::from(std::io::Error::other(e.to_string())))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(round: usize, gold: &str, label: &str) -> TextRecord {
        TextRecord {
            round,
            text_round: 1,
            line: 1,
            gold: gold.into(),
            label: label.into(),
            status: PredictionStatus::Decided,
            right: gold == label,
            confidence: 0.5,
            graph_choice: label.into(),
            candidates: vec![label.into()],
            scores: vec![0.1],
            parts: Vec::new(),
            evidence: Vec::new(),
            signals: crate::engine::confidence::Signals::default(),
        }
    }

    #[test]
    fn precision_recall_and_confusions_match_a_hand_count() {
        let texts = vec![
            record(1, "a", "b"), // an earlier round: not counted
            record(2, "a", "a"),
            record(2, "a", "a"),
            record(2, "a", "b"),
            record(2, "b", "b"),
            record(2, "c", "b"),
        ];
        let report = per_label(&texts).unwrap_or_else(|| panic!("records"));
        assert_eq!((report.round, report.texts), (2, 5));
        let a = &report.labels[0];
        assert_eq!((a.label.as_str(), a.support, a.predicted), ("a", 3, 2));
        assert!((a.precision - 1.0).abs() < 1e-9 && (a.recall - 2.0 / 3.0).abs() < 1e-9);
        let b = &report.labels[1];
        assert!((b.precision - 1.0 / 3.0).abs() < 1e-9 && (b.recall - 1.0).abs() < 1e-9);
        let c = &report.labels[2];
        assert_eq!((c.predicted, c.f1), (0, 0.0));
        assert_eq!(report.confusions.len(), 2);
        assert_eq!(
            (
                report.confusions[0].gold.as_str(),
                report.confusions[0].texts
            ),
            ("a", 1)
        );
        let expected = (0.8 + 0.5 + 0.0) / 3.0;
        assert!(
            (report.macro_f1 - expected).abs() < 1e-9,
            "{}",
            report.macro_f1
        );
        assert!(per_label(&[]).is_none());
    }

    #[test]
    fn a_text_with_no_match_is_a_miss_and_no_label_s_prediction() {
        let unmatched = |gold: &str, best_guess: &str| TextRecord {
            status: PredictionStatus::NoMatch,
            ..record(1, gold, best_guess)
        };
        // The best guess of the unmatched "a" text is "a" itself, and of the "b" text "a":
        // neither counts for "a".
        let texts = vec![
            record(1, "a", "a"),
            unmatched("a", "a"),
            unmatched("b", "a"),
        ];
        let report = per_label(&texts).unwrap_or_else(|| panic!("records"));
        assert_eq!((report.texts, report.no_match), (3, 2));
        let labels: Vec<&str> = report.labels.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["a", "b"], "no row of its own");
        let a = &report.labels[0];
        assert_eq!((a.support, a.predicted), (2, 1));
        assert!((a.precision - 1.0).abs() < 1e-9 && (a.recall - 0.5).abs() < 1e-9);
        let pairs: Vec<(&str, &str)> = report
            .confusions
            .iter()
            .map(|c| (c.gold.as_str(), c.predicted.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [("a", NO_MATCH), ("b", NO_MATCH)],
            "no invented confusion"
        );
        let rows = texts_csv(&texts).unwrap_or_default();
        assert!(rows.contains("\n1,1,1,b,,no_match,false,"), "{rows}");
    }

    #[test]
    fn csv_files_quote_what_needs_quoting() {
        let texts = vec![record(1, "billing, payments", "shipping")];
        let report = per_label(&texts).unwrap_or_else(|| panic!("records"));
        let labels = labels_csv(&report).unwrap_or_default();
        assert!(labels.contains("\"billing, payments\",1,0,"), "{labels}");
        let confusions = confusions_csv(&report).unwrap_or_default();
        assert!(
            confusions.ends_with("\"billing, payments\",shipping,1\n"),
            "{confusions}"
        );
        let rows = texts_csv(&texts).unwrap_or_default();
        assert_eq!(rows.lines().count(), 2, "{rows}");
    }
}
