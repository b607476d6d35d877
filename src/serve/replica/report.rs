//! What a replica tells operators: the counts, logs and dead letters an applied record asks
//! for, the state's gauges, and a span per label event.

use std::time::Duration;

use super::{Effect, Replica};
use crate::events::InputPosition;
use crate::serve::outputs;
use crate::serve::stats::Stats;
use crate::state::codec::{Change, ChangeDecodeError, ChangeRecord, LabelOutcome};
use crate::state::Update;
use crate::telemetry::metrics::{Metrics, ParamLabel, StateLabel};

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
                stats.label_event();
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
                    if let Some((decided, confidence)) = &correction.decided {
                        stats.correction(Some(decided.as_str()) == label, *confidence);
                    }
                    tracing::info!(
                        text_id,
                        label = label.unwrap_or("(none of these)"),
                        audit = matches!(
                            update.as_ref(),
                            Update::Audit { .. } | Update::AuditNone { .. }
                        ),
                        took_back = correction.took_back,
                        "correction applied"
                    );
                }
                if report.unencoded > 0 {
                    tracing::warn!(
                        offset = labels_offset,
                        unencoded = report.unencoded,
                        "the embedding model failed on names or examples of this round: indexed \
                         without their vectors"
                    );
                }
                tracing::info!(
                    offset = labels_offset,
                    labels_added = report.labels_added,
                    texts_indexed = report.texts_indexed,
                    label_version = self.state.engine().labels().version(),
                    apply_ms = held.as_millis() as u64,
                    "label event applied"
                );
                self.gauges(stats.metrics());
            }
            Effect::LabelRejected {
                labels_offset,
                key,
                payload,
                stage,
                rejection,
            } => {
                stats.label_event();
                tracing::warn!(offset = labels_offset, %rejection, "label event rejected");
                stats.dead_letter(rejection.reason);
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
                self.gauges(stats.metrics());
            }
        }
    }

    /// Dead letters waiting to be delivered.
    /// Graph size, the keyword statistics' size, labels and the confidence's refit, as gauges.
    pub fn gauges(&self, metrics: &Metrics) {
        let outcomes = self.state.engine().outcomes();
        metrics
            .confidence_outcomes
            .set(outcomes.outcomes().len() as i64);
        let recalibration = outcomes.recalibration();
        for (param, value) in [
            ("shift", recalibration.shift),
            ("scale", recalibration.scale),
        ] {
            metrics
                .confidence_recalibration
                .get_or_create(&ParamLabel {
                    param: param.into(),
                })
                .set(value);
        }
        let graph = self.state.engine().graph();
        metrics.graph_nodes.set(graph.node_count() as i64);
        metrics.graph_edges.set(graph.edge_count() as i64);
        let phrases = self.state.engine().stats().phrase_count();
        metrics.keyword_phrases.set(phrases as i64);
        let active = self.state.engine().labels().active().count();
        let total = self.state.engine().labels().len();
        for (state, count) in [("active", active), ("retired", total - active)] {
            metrics
                .labels
                .get_or_create(&StateLabel {
                    state: state.into(),
                })
                .set(count as i64);
        }
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
