//! One place that counts what the service does: each call moves the run's summary (logged at
//! shutdown, returned by `serve`) and the Prometheus counters together, so the two cannot drift.

use std::sync::Arc;

use super::ServeSummary;
use crate::engine::answer::HallucinationKind;
use crate::engine::Source;
use crate::events::decode::Reason;
use crate::events::PredictionStatus;
use crate::telemetry::metrics::{KindLabel, Metrics, PredictionLabel, CONFIDENCE_BUCKETS};

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

    /// The gauges and histograms, for what is measured rather than counted.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub fn summary(&self) -> &ServeSummary {
        &self.summary
    }

    pub fn text_received(&mut self) {
        self.summary.texts_in += 1;
        self.metrics.texts_received.inc();
    }

    /// A prediction published; `source` is where its label came from (`llm`, `graph`).
    pub fn predicted(&mut self, source: Source, status: PredictionStatus) {
        self.summary.predictions += 1;
        self.metrics
            .predictions
            .get_or_create(&PredictionLabel {
                source: source.as_str().to_string(),
                status: status.as_str().to_string(),
            })
            .inc();
    }

    pub fn hallucination(&mut self, kind: HallucinationKind) {
        *self
            .summary
            .hallucinations
            .entry(kind.as_str().to_string())
            .or_default() += 1;
        self.metrics
            .hallucinations
            .get_or_create(&KindLabel {
                kind: kind.as_str().to_string(),
            })
            .inc();
    }

    pub fn dead_letter(&mut self, reason: Reason) {
        self.metrics.dead_letter(reason.code());
        *self
            .summary
            .dead_letters
            .entry(reason.code().to_string())
            .or_default() += 1;
    }

    /// The LLM failed and the graph's label was published instead.
    pub fn llm_fallback(&mut self) {
        self.summary.llm_fallbacks += 1;
        self.metrics.llm_fallbacks.inc();
    }

    /// A correction applied: whether gorag's own decision for the text agreed with it, and
    /// that decision's confidence.
    pub fn correction(&mut self, agreed: bool, confidence: f64) {
        let [low, middle, high, top] = CONFIDENCE_BUCKETS;
        let bucket = match confidence {
            c if c < 0.5 => low,
            c if c < 0.8 => middle,
            c if c < 0.9 => high,
            _ => top,
        };
        self.metrics
            .corrections
            .get_or_create(&crate::telemetry::metrics::CorrectionLabel {
                agreed: agreed.to_string(),
                confidence: bucket.to_string(),
            })
            .inc();
    }

    pub fn label_event(&mut self) {
        self.summary.label_events += 1;
        self.metrics.label_events.inc();
    }

    /// A text predicted again but not learned twice (learned before a restart or rebalance).
    pub fn relearn_skipped(&mut self) {
        self.summary.relearn_skipped += 1;
    }

    /// A text whose learn record the broker refused: predicted, not learned.
    pub fn learn_refused(&mut self) {
        self.summary.learns_refused += 1;
    }

    pub fn stage(&self, stage: &str, seconds: f64) {
        self.metrics.observe_stage(stage, seconds);
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
        stats.label_event();
        stats.relearn_skipped();
        stats.learn_refused();

        let summary = stats.summary();
        assert_eq!(summary.texts_in, 2);
        assert_eq!(summary.predictions, 1);
        assert_eq!(summary.hallucinations.get("unknown_label"), Some(&1));
        assert_eq!(summary.dead_letters.get(Reason::LlmFailed.code()), Some(&2));
        assert_eq!(
            (summary.llm_fallbacks, summary.label_events),
            (1, 1),
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
        assert_eq!(counter(&text, "gorag_label_events_total"), Some(1.0));
    }
}
