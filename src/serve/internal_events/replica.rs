//! What a replica reports as it applies the changelog: label events applied or rejected,
//! corrections, and the state's size.

use super::texts::gauge;
use super::REPLICA_TARGET;
use crate::events::decode::Rejection;
use crate::telemetry::event::InternalEvent;
use crate::telemetry::metrics::{
    CorrectionLabel, Instruments, ParamLabel, ReasonLabel, StateLabel, CONFIDENCE_BUCKETS,
};

/// A label event applied to the state (`offset` on the labels topic; `apply_ms`: how long
/// applying it held the loop).
#[derive(Debug, Clone, Copy)]
pub struct LabelEventApplied {
    pub offset: i64,
    pub labels_added: usize,
    pub texts_indexed: usize,
    pub label_version: u64,
    pub apply_ms: u64,
}

impl InternalEvent for LabelEventApplied {
    fn emit(self, instruments: &Instruments) {
        tracing::info!(
            target: REPLICA_TARGET,
            offset = self.offset,
            labels_added = self.labels_added,
            texts_indexed = self.texts_indexed,
            label_version = self.label_version,
            apply_ms = self.apply_ms,
            "label event applied"
        );
        instruments.label_events.inc();
    }
}

/// A label event the state refused: counted with the label events and the dead letters (one
/// instance sends the dead letter itself).
#[derive(Debug, Clone, Copy)]
pub struct LabelEventRejected<'a> {
    pub offset: i64,
    pub rejection: &'a Rejection,
}

impl InternalEvent for LabelEventRejected<'_> {
    fn emit(self, instruments: &Instruments) {
        tracing::warn!(
            target: REPLICA_TARGET,
            offset = self.offset,
            rejection = %self.rejection,
            "label event rejected"
        );
        instruments.label_events.inc();
        instruments
            .dead_letters
            .get_or_create(&ReasonLabel {
                reason: self.rejection.reason.code().to_string(),
            })
            .inc();
    }
}

/// gorag's own decision for a corrected text: whether it agreed with the correction, and its
/// confidence.
#[derive(Debug, Clone, Copy)]
pub struct Decided {
    pub agreed: bool,
    pub confidence: f64,
}

/// A correction (or an audit) applied to a text. `label` None: an operator's "none of these".
/// Counted by agreement and confidence bucket when gorag had decided the text itself.
#[derive(Debug, Clone, Copy)]
pub struct CorrectionApplied<'a> {
    pub text_id: &'a str,
    pub label: Option<&'a str>,
    pub audit: bool,
    pub took_back: bool,
    pub decided: Option<Decided>,
}

impl InternalEvent for CorrectionApplied<'_> {
    fn emit(self, instruments: &Instruments) {
        if let Some(Decided { agreed, confidence }) = self.decided {
            let [low, middle, high, top] = CONFIDENCE_BUCKETS;
            let bucket = match confidence {
                c if c < 0.5 => low,
                c if c < 0.8 => middle,
                c if c < 0.9 => high,
                _ => top,
            };
            instruments
                .corrections
                .get_or_create(&CorrectionLabel {
                    agreed: agreed.to_string(),
                    confidence: bucket.to_string(),
                })
                .inc();
        }
        tracing::info!(
            target: REPLICA_TARGET,
            text_id = self.text_id,
            label = self.label.unwrap_or("(none of these)"),
            audit = self.audit,
            took_back = self.took_back,
            "correction applied"
        );
    }
}

/// The state's size measured: the graph, the keyword statistics, the labels, and the
/// confidence's refit (its outcomes and the recalibration they give).
#[derive(Debug, Clone, Copy)]
pub struct StateMeasured {
    pub graph_nodes: usize,
    pub graph_edges: usize,
    pub keyword_phrases: usize,
    pub active_labels: usize,
    pub retired_labels: usize,
    pub confidence_outcomes: usize,
    pub recalibration_shift: f64,
    pub recalibration_scale: f64,
}

impl InternalEvent for StateMeasured {
    fn emit(self, instruments: &Instruments) {
        instruments
            .confidence_outcomes
            .set(gauge(self.confidence_outcomes));
        for (param, value) in [
            ("shift", self.recalibration_shift),
            ("scale", self.recalibration_scale),
        ] {
            instruments
                .confidence_recalibration
                .get_or_create(&ParamLabel {
                    param: param.into(),
                })
                .set(value);
        }
        instruments.graph_nodes.set(gauge(self.graph_nodes));
        instruments.graph_edges.set(gauge(self.graph_edges));
        instruments.keyword_phrases.set(gauge(self.keyword_phrases));
        for (state, count) in [
            ("active", self.active_labels),
            ("retired", self.retired_labels),
        ] {
            instruments
                .labels
                .get_or_create(&StateLabel {
                    state: state.into(),
                })
                .set(gauge(count));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::decode::Reason;
    use crate::telemetry::event::{logged, sample};
    use crate::telemetry::metrics::Metrics;

    #[test]
    fn a_rejected_label_event_is_a_label_event_and_a_dead_letter() {
        let metrics = Metrics::new();
        let rejection = Rejection::new(Reason::InvalidEvent, "no labels");
        let log = logged(|| {
            metrics.emit(LabelEventApplied {
                offset: 4,
                labels_added: 2,
                texts_indexed: 0,
                label_version: 1,
                apply_ms: 3,
            });
            metrics.emit(LabelEventRejected {
                offset: 5,
                rejection: &rejection,
            });
        });
        // The lines operators' queries and the service tests wait for, as they were.
        let lines: Vec<&str> = log.lines().map(str::trim).collect();
        assert_eq!(
            lines,
            [
                "INFO gorag::serve::replica::report: label event applied offset=4 \
                 labels_added=2 texts_indexed=0 label_version=1 apply_ms=3",
                "WARN gorag::serve::replica::report: label event rejected offset=5 \
                 rejection=invalid_event: no labels",
            ],
            "{log}"
        );
        assert_eq!(sample(&metrics, "gorag_label_events_total"), Some(2.0));
        assert_eq!(
            sample(
                &metrics,
                "gorag_dead_letters_total{reason=\"invalid_event\"}"
            ),
            Some(1.0)
        );
    }

    #[test]
    fn a_correction_is_counted_by_agreement_and_confidence_bucket() {
        let metrics = Metrics::new();
        let correction = |decided| CorrectionApplied {
            text_id: "t1",
            label: Some("sports"),
            audit: false,
            took_back: false,
            decided,
        };
        metrics.emit(correction(Some(Decided {
            agreed: false,
            confidence: 0.85,
        })));
        metrics.emit(correction(Some(Decided {
            agreed: true,
            confidence: 0.95,
        })));
        // Not decided by gorag (no decision of its own to agree with): logged, not counted.
        metrics.emit(correction(None));
        let series = |agreed, bucket| {
            format!("gorag_corrections_total{{agreed=\"{agreed}\",confidence=\"{bucket}\"}}")
        };
        assert_eq!(sample(&metrics, &series(false, "0.8-0.9")), Some(1.0));
        assert_eq!(sample(&metrics, &series(true, "0.9-1")), Some(1.0));
        assert_eq!(sample(&metrics, &series(true, "0-0.5")), Some(0.0));
    }

    #[test]
    fn the_state_s_size_sets_its_gauges() {
        let metrics = Metrics::new();
        metrics.emit(StateMeasured {
            graph_nodes: 10,
            graph_edges: 20,
            keyword_phrases: 30,
            active_labels: 3,
            retired_labels: 1,
            confidence_outcomes: 12,
            recalibration_shift: -0.5,
            recalibration_scale: 1.5,
        });
        for (series, value) in [
            ("gorag_graph_nodes", 10.0),
            ("gorag_graph_edges", 20.0),
            ("gorag_keyword_phrases", 30.0),
            ("gorag_labels{state=\"active\"}", 3.0),
            ("gorag_labels{state=\"retired\"}", 1.0),
            ("gorag_confidence_outcomes", 12.0),
            ("gorag_confidence_recalibration{param=\"shift\"}", -0.5),
            ("gorag_confidence_recalibration{param=\"scale\"}", 1.5),
        ] {
            assert_eq!(sample(&metrics, series), Some(value), "{series}");
        }
    }
}
