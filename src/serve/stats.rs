//! One place that counts what the service does: each call moves the run's summary (logged at
//! shutdown, returned by `serve`) and emits the happening's event (its metrics and its log
//! line), so the two cannot drift.

use std::sync::Arc;

use super::internal_events::{
    Hallucinated, HeldForProposal, LabelEventApplied, LabelEventRejected, LlmFellBack,
    PredictionPublished, StageTimed, TextDeadLettered, TextReceived,
};
use super::ServeSummary;
use crate::events::decode::Reason;
use crate::events::HallucinationKind;
use crate::events::PredictionStatus;
use crate::events::Source;
use crate::telemetry::event::InternalEvent;
use crate::telemetry::metrics::Metrics;

pub struct Stats {
    summary: ServeSummary,
    metrics: Arc<Metrics>,
}

impl Stats {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            summary: ServeSummary::default(),
            metrics,
        }
    }

    /// An event the summary does not count (a measurement, a correction, a community pass);
    /// the ones it counts have a method of their own below.
    pub fn emit(&self, event: impl InternalEvent) {
        self.metrics.emit(event);
    }

    pub fn summary(&self) -> &ServeSummary {
        &self.summary
    }

    pub fn text_received(&mut self) {
        self.summary.texts_in += 1;
        self.emit(TextReceived);
    }

    /// A prediction published; `source` is where its label came from (`llm`, `graph`).
    pub fn predicted(&mut self, source: Source, status: PredictionStatus) {
        self.summary.predictions += 1;
        self.emit(PredictionPublished { source, status });
    }

    pub fn hallucination(&mut self, kind: HallucinationKind) {
        *self
            .summary
            .hallucinations
            .entry(kind.as_str().to_string())
            .or_default() += 1;
        self.emit(Hallucinated { kind });
    }

    /// A text sent to the dead letters.
    pub fn dead_letter(&mut self, reason: Reason) {
        self.count_dead_letter(reason);
        self.emit(TextDeadLettered { reason });
    }

    fn count_dead_letter(&mut self, reason: Reason) {
        *self
            .summary
            .dead_letters
            .entry(reason.code().to_string())
            .or_default() += 1;
    }

    /// The LLM failed and the graph's label was published instead.
    pub fn llm_fallback(&mut self) {
        self.summary.llm_fallbacks += 1;
        self.emit(LlmFellBack);
    }

    pub fn label_applied(&mut self, applied: LabelEventApplied) {
        self.summary.label_events += 1;
        self.emit(applied);
    }

    /// A label event refused: a label event, and a dead letter.
    pub fn label_rejected(&mut self, rejected: LabelEventRejected) {
        self.summary.label_events += 1;
        self.count_dead_letter(rejected.rejection.reason);
        self.emit(rejected);
    }

    /// A text held for review because it reads like an open proposal.
    pub fn held_for_proposal(&mut self) {
        self.emit(HeldForProposal);
    }

    /// A text predicted again but not learned twice (learned before a restart or rebalance).
    pub fn relearn_skipped(&mut self) {
        self.summary.relearn_skipped += 1;
    }

    /// A text whose learn record the broker refused: predicted, not learned.
    pub fn learn_refused(&mut self) {
        self.summary.learns_refused += 1;
    }

    pub fn stage(&self, stage: &'static str, seconds: f64) {
        self.emit(StageTimed { stage, seconds });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find(|line| line.starts_with(series))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|value| value.parse().ok())
    }

    #[test]
    fn every_count_reaches_the_summary_and_the_metrics() {
        let metrics = Arc::new(Metrics::new());
        let mut stats = Stats::new(metrics.clone());
        stats.text_received();
        stats.text_received();
        stats.predicted(Source::Llm, PredictionStatus::Decided);
        stats.hallucination(HallucinationKind::UnknownLabel);
        stats.dead_letter(Reason::LlmFailed);
        stats.dead_letter(Reason::LlmFailed);
        stats.llm_fallback();
        stats.label_applied(LabelEventApplied {
            offset: 0,
            labels_added: 1,
            texts_indexed: 0,
            label_version: 1,
            apply_ms: 0,
        });
        let rejection = crate::events::decode::Rejection::new(Reason::InvalidEvent, "no labels");
        stats.label_rejected(LabelEventRejected {
            offset: 1,
            rejection: &rejection,
        });
        stats.relearn_skipped();
        stats.learn_refused();

        let summary = stats.summary();
        assert_eq!(summary.texts_in, 2);
        assert_eq!(summary.predictions, 1);
        assert_eq!(summary.hallucinations.get("unknown_label"), Some(&1));
        assert_eq!(summary.dead_letters.get(Reason::LlmFailed.code()), Some(&2));
        assert_eq!(
            summary.dead_letters.get(Reason::InvalidEvent.code()),
            Some(&1)
        );
        assert_eq!(
            (summary.llm_fallbacks, summary.label_events),
            (1, 2),
            "fallbacks, label events"
        );
        assert_eq!((summary.relearn_skipped, summary.learns_refused), (1, 1));

        let text = metrics.encode();
        assert_eq!(counter(&text, "gorag_texts_received_total"), Some(2.0));
        assert_eq!(
            counter(
                &text,
                "gorag_predictions_total{source=\"llm\",status=\"decided\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            counter(&text, "gorag_hallucinations_total{kind=\"unknown_label\"}"),
            Some(1.0)
        );
        let reason = format!(
            "gorag_dead_letters_total{{reason=\"{}\"}}",
            Reason::LlmFailed.code()
        );
        assert_eq!(counter(&text, &reason), Some(2.0));
        assert_eq!(counter(&text, "gorag_llm_fallbacks_total"), Some(1.0));
        assert_eq!(counter(&text, "gorag_label_events_total"), Some(2.0));
        assert_eq!(
            counter(&text, "gorag_dead_letters_total{reason=\"invalid_event\"}"),
            Some(1.0)
        );
    }
}
