//! A text's way through the service: read, timed stage by stage, predicted or dead-lettered;
//! the texts in flight and the consumer lag. None of these writes a log line: a text's own
//! lines are its span's.

use crate::events::decode::Reason;
use crate::events::HallucinationKind;
use crate::events::PredictionStatus;
use crate::events::Source;
use crate::telemetry::event::InternalEvent;
use crate::telemetry::metrics::{
    Instruments, KindLabel, PartitionLabel, PredictionLabel, ReasonLabel, StageLabel,
};

/// A record read from the texts topic.
#[derive(Debug, Clone, Copy)]
pub struct TextReceived;

impl InternalEvent for TextReceived {
    fn emit(self, instruments: &Instruments) {
        instruments.texts_received.inc();
    }
}

/// One stage of a text took `seconds` (`decode`, `keywords`, `retrieve`, `index`,
/// `produce` …).
#[derive(Debug, Clone, Copy)]
pub struct StageTimed {
    pub stage: &'static str,
    pub seconds: f64,
}

impl InternalEvent for StageTimed {
    fn emit(self, instruments: &Instruments) {
        instruments
            .stage_seconds
            .get_or_create(&StageLabel {
                stage: self.stage.to_string(),
            })
            .observe(self.seconds);
    }
}

/// An LLM request answered or given up, retries included: its latency, also the text's `llm`
/// stage.
#[derive(Debug, Clone, Copy)]
pub struct LlmRequestTimed {
    pub seconds: f64,
}

impl InternalEvent for LlmRequestTimed {
    fn emit(self, instruments: &Instruments) {
        instruments.llm_seconds.observe(self.seconds);
        instruments
            .stage_seconds
            .get_or_create(&StageLabel {
                stage: "llm".to_string(),
            })
            .observe(self.seconds);
    }
}

/// A prediction published: where its label came from, and its status.
#[derive(Debug, Clone, Copy)]
pub struct PredictionPublished {
    pub source: Source,
    pub status: PredictionStatus,
}

impl InternalEvent for PredictionPublished {
    fn emit(self, instruments: &Instruments) {
        instruments
            .predictions
            .get_or_create(&PredictionLabel {
                source: self.source.as_str().to_string(),
                status: self.status.as_str().to_string(),
            })
            .inc();
    }
}

/// The LLM's answer flagged.
#[derive(Debug, Clone, Copy)]
pub struct Hallucinated {
    pub kind: HallucinationKind,
}

impl InternalEvent for Hallucinated {
    fn emit(self, instruments: &Instruments) {
        instruments
            .hallucinations
            .get_or_create(&KindLabel {
                kind: self.kind.as_str().to_string(),
            })
            .inc();
    }
}

/// The LLM failed and the graph's label was published instead.
#[derive(Debug, Clone, Copy)]
pub struct LlmFellBack;

impl InternalEvent for LlmFellBack {
    fn emit(self, instruments: &Instruments) {
        instruments.llm_fallbacks.inc();
    }
}

/// A text held for review because it reads like an open proposal.
#[derive(Debug, Clone, Copy)]
pub struct HeldForProposal;

impl InternalEvent for HeldForProposal {
    fn emit(self, instruments: &Instruments) {
        instruments.texts_held_for_proposal.inc();
    }
}

/// A text sent to the dead-letter topic (a label event's dead letter is
/// [`LabelEventRejected`](super::LabelEventRejected)'s).
#[derive(Debug, Clone, Copy)]
pub struct TextDeadLettered {
    pub reason: Reason,
}

impl InternalEvent for TextDeadLettered {
    fn emit(self, instruments: &Instruments) {
        instruments
            .dead_letters
            .get_or_create(&ReasonLabel {
                reason: self.reason.code().to_string(),
            })
            .inc();
    }
}

/// Texts taken in and not yet finished, measured.
#[derive(Debug, Clone, Copy)]
pub struct InFlight {
    pub texts: usize,
}

impl InternalEvent for InFlight {
    fn emit(self, instruments: &Instruments) {
        instruments.in_flight.set(gauge(self.texts));
    }
}

/// A partition's consumer lag measured: records on the texts topic not yet done.
#[derive(Debug, Clone, Copy)]
pub struct ConsumerLag {
    pub partition: i32,
    pub records: i64,
}

impl InternalEvent for ConsumerLag {
    fn emit(self, instruments: &Instruments) {
        instruments
            .consumer_lag
            .get_or_create(&PartitionLabel {
                partition: self.partition,
            })
            .set(self.records.max(0));
    }
}

/// A count as a gauge's value (saturating: no count comes near it).
pub(super) fn gauge(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::event::sample;
    use crate::telemetry::metrics::Metrics;

    #[test]
    fn a_text_s_events_move_their_series() {
        let metrics = Metrics::new();
        metrics.emit(TextReceived);
        metrics.emit(TextReceived);
        metrics.emit(PredictionPublished {
            source: Source::Graph,
            status: PredictionStatus::NeedsReview,
        });
        metrics.emit(TextDeadLettered {
            reason: Reason::MalformedJson,
        });
        metrics.emit(ConsumerLag {
            partition: 3,
            records: -2,
        });
        metrics.emit(InFlight { texts: 7 });
        metrics.emit(LlmRequestTimed { seconds: 0.25 });
        for (series, value) in [
            ("gorag_texts_received_total", 2.0),
            (
                "gorag_predictions_total{source=\"graph\",status=\"needs_review\"}",
                1.0,
            ),
            ("gorag_dead_letters_total{reason=\"malformed_json\"}", 1.0),
            // A partition read past its high watermark (a race) shows no lag, never a negative.
            ("gorag_consumer_lag{partition=\"3\"}", 0.0),
            ("gorag_in_flight", 7.0),
            ("gorag_llm_request_seconds_count", 1.0),
            ("gorag_stage_seconds_count{stage=\"llm\"}", 1.0),
            ("gorag_stage_seconds_sum{stage=\"llm\"}", 0.25),
        ] {
            assert_eq!(sample(&metrics, series), Some(value), "{series}");
        }
    }
}
