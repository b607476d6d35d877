//! What a replica tells operators: the counts, logs and dead letters an applied record asks
//! for, the state's gauges, and a span per label event.

use std::time::Duration;

use super::{Effect, Replica};
use crate::events::InputPosition;
use crate::serve::internal_events::{
    CorrectionApplied, Decided, LabelEventApplied, LabelEventRejected, StateMeasured,
};
use crate::serve::outputs;
use crate::serve::stats::Stats;
use crate::state::codec::{Change, ChangeDecodeError, ChangeRecord, LabelOutcome};
use crate::state::Update;

impl Replica {
    /// Count, log and dead-letter what an applied record asks for (`held`: how long applying
    /// it held the loop).
    pub(super) fn report(
        &mut self,
        offset: i64,
        effect: Effect,
        mine: bool,
        held: Duration,
        stats: &mut Stats,
    ) {
        match effect {
            Effect::Behind | Effect::Copy => {}
            Effect::Unreadable(error) => {
                tracing::error!(offset, %error, "unreadable changelog record skipped");
            }
            Effect::Learned {
                copies, refused, ..
            } => {
                for _ in 0..copies {
                    stats.relearn_skipped();
                }
                for error in refused {
                    tracing::warn!(%error, "online indexing refused");
                }
            }
            Effect::Label {
                labels_offset,
                report,
                update,
            } => {
                if let (Some(text_id), Some(correction)) =
                    (update.corrected_text(), &report.correction)
                {
                    // None: an operator's "none of these", which no decided label matches.
                    let label = match update.as_ref() {
                        Update::Correct { label, .. } | Update::Audit { label, .. } => {
                            Some(label.as_str())
                        }
                        _ => None,
                    };
                    stats.emit(CorrectionApplied {
                        text_id,
                        label,
                        audit: matches!(
                            update.as_ref(),
                            Update::Audit { .. } | Update::AuditNone { .. }
                        ),
                        took_back: correction.took_back,
                        decided: correction
                            .decided
                            .as_ref()
                            .map(|(decided, confidence)| Decided {
                                agreed: Some(decided.as_str()) == label,
                                confidence: *confidence,
                            }),
                    });
                }
                if report.unencoded > 0 {
                    tracing::warn!(
                        offset = labels_offset,
                        unencoded = report.unencoded,
                        "the embedding model failed on names or examples of this round: indexed \
                         without their vectors"
                    );
                }
                stats.label_applied(LabelEventApplied {
                    offset: labels_offset,
                    labels_added: report.labels_added,
                    texts_indexed: report.texts_indexed,
                    label_version: self.state.engine().labels().version(),
                    apply_ms: held.as_millis() as u64,
                });
                self.gauges(stats);
            }
            Effect::LabelRejected {
                labels_offset,
                key,
                payload,
                stage,
                rejection,
            } => {
                stats.label_rejected(LabelEventRejected {
                    offset: labels_offset,
                    rejection: &rejection,
                });
                // One dead letter per event: from the instance whose forward counted.
                if mine {
                    let position = InputPosition {
                        topic: self.topics.labels.clone(),
                        partition: 0,
                        offset: labels_offset,
                    };
                    self.outbox.push(outputs::dead_letter(
                        &self.dead_letter_topic,
                        &position,
                        key,
                        payload,
                        stage.as_str(),
                        &rejection,
                        self.dead_letter_limit,
                    ));
                }
                self.gauges(stats);
            }
        }
    }

    /// Graph size, the keyword statistics' size, labels and the confidence's refit, as gauges.
    pub fn gauges(&self, stats: &Stats) {
        let engine = self.state.engine();
        let outcomes = engine.outcomes();
        let recalibration = outcomes.recalibration();
        let active = engine.labels().active().count();
        stats.emit(StateMeasured {
            graph_nodes: engine.graph().node_count(),
            graph_edges: engine.graph().edge_count(),
            keyword_phrases: engine.stats().phrase_count(),
            active_labels: active,
            retired_labels: engine.labels().len().saturating_sub(active),
            confidence_outcomes: outcomes.outcomes().len(),
            recalibration_shift: recalibration.shift,
            recalibration_scale: recalibration.scale,
        });
    }
}

/// Label events get a span of their own (learn records are too many to trace).
pub(super) fn label_span(record: &Result<ChangeRecord, ChangeDecodeError>) -> tracing::Span {
    let Ok(ChangeRecord {
        change: Change::Label {
            offset, outcome, ..
        },
        ..
    }) = record
    else {
        return tracing::Span::none();
    };
    let (event, round) = match outcome {
        LabelOutcome::Apply(Update::Round { round, .. }) => ("round", round.as_str()),
        LabelOutcome::Apply(Update::AddExamples { .. }) => ("add_examples", ""),
        LabelOutcome::Apply(Update::RetireLabel { .. }) => ("retire_label", ""),
        LabelOutcome::Apply(Update::Correct { text_id, .. }) => ("correct", text_id.as_str()),
        LabelOutcome::Apply(Update::Audit { text_id, .. }) => ("audit", text_id.as_str()),
        LabelOutcome::Apply(Update::CorrectNone { text_id, .. }) => ("correct", text_id.as_str()),
        LabelOutcome::Apply(Update::AuditNone { text_id, .. }) => ("audit", text_id.as_str()),
        LabelOutcome::Apply(Update::Learn { .. }) => ("learn", ""),
        LabelOutcome::Apply(Update::Pooled { .. }) => ("unexplained", ""),
        LabelOutcome::Reject { .. } => ("rejected", ""),
    };
    tracing::info_span!("label_event", offset, event, round)
}
