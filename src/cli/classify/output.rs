//! How `gorag classify` prints predictions (one per line, flushed as each comes) and what it
//! says at the end.

use std::io::Write;

use anyhow::Result;
use clap::ValueEnum;

use crate::cli::prediction_view;
use crate::cli::printable::{printable, printable_json};
use crate::events::{Prediction, PredictionStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The predictions topic's JSON, one object per line.
    Jsonl,
    /// id, label (empty with status no_match), label_name (the label's name, else its id),
    /// confidence, status, candidates, gold_label, then what a reviewer reads: text,
    /// candidate_scores, example (the label's closest example), matched_terms.
    Csv,
    /// One line a person reads: id → label, confidence, status, candidates.
    Table,
}

/// Writes predictions to stdout in one format.
pub struct Printer {
    format: OutputFormat,
    csv: Option<csv::Writer<std::io::Stdout>>,
}

impl Printer {
    pub fn new(format: OutputFormat) -> Result<Self> {
        let csv = match format {
            OutputFormat::Csv => {
                let mut writer = csv::Writer::from_writer(std::io::stdout());
                // New columns go at the end: a reader by position keeps working.
                writer.write_record([
                    "id",
                    "label",
                    "label_name",
                    "confidence",
                    "status",
                    "candidates",
                    "gold_label",
                    "text",
                    "candidate_scores",
                    "example",
                    "matched_terms",
                ])?;
                writer.flush()?;
                Some(writer)
            }
            _ => None,
        };
        Ok(Self { format, csv })
    }

    /// One prediction of the text `text`.
    pub fn print(&mut self, prediction: &Prediction, text: &str) -> Result<()> {
        match (self.format, &mut self.csv) {
            (OutputFormat::Csv, Some(writer)) => {
                let confidence = prediction
                    .confidence
                    .map_or(String::new(), |c| format!("{c:.4}"));
                let label = prediction.label.as_deref().unwrap_or_default();
                let scores: Vec<String> = prediction
                    .candidate_scores
                    .iter()
                    .map(|s| format!("{s:.4}"))
                    .collect();
                let rationale = prediction.rationale.as_ref();
                writer.write_record([
                    prediction.text_id.as_str(),
                    label,
                    prediction.label_name.as_deref().unwrap_or(label),
                    &confidence,
                    prediction.status.as_str(),
                    &prediction.candidates.join("|"),
                    prediction.gold_label.as_deref().unwrap_or_default(),
                    text,
                    &scores.join("|"),
                    rationale.map_or("", |r| r.excerpt.as_str()),
                    &rationale.map_or(String::new(), |r| r.terms.join("|")),
                ])?;
                writer.flush()?;
            }
            (OutputFormat::Table, _) => line(&printable(&prediction_view::line(prediction)))?,
            _ => line(&printable_json(&serde_json::to_string(prediction)?))?,
        }
        Ok(())
    }
}

fn line(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// What a run did, for its last line.
#[derive(Debug, Default)]
pub struct Tally {
    pub classified: usize,
    pub needs_review: usize,
    pub no_match: usize,
    pub with_gold: usize,
    pub right: usize,
    pub label_events: usize,
    pub unusable: usize,
}

impl Tally {
    pub fn count(&mut self, prediction: &Prediction) {
        self.classified += 1;
        self.needs_review += usize::from(prediction.status == PredictionStatus::NeedsReview);
        self.no_match += usize::from(prediction.status == PredictionStatus::NoMatch);
        if let Some(gold) = &prediction.gold_label {
            self.with_gold += 1;
            // No match is no right label.
            self.right += usize::from(prediction.label.as_ref() == Some(gold));
        }
    }

    pub fn summary(&self) -> String {
        let mut summary = format!(
            "{} text(s) classified, {} need review, {} match no label",
            self.classified, self.needs_review, self.no_match
        );
        if self.with_gold > 0 {
            summary += &format!(
                "; {} of {} with a gold label right ({:.1} %)",
                self.right,
                self.with_gold,
                100.0 * self.right as f64 / self.with_gold as f64
            );
        }
        if self.label_events > 0 {
            summary += &format!("; {} label event(s) applied", self.label_events);
        }
        if self.unusable > 0 {
            summary += &format!("; {} line(s) not used (above)", self.unusable);
        }
        summary
    }
}
