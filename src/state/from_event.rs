//! A label event as the update the replicated state applies, checked as every path checks it
//! (the service's labels forwarder, `gorag classify`, `gorag labels import`) — its bounds
//! (docs/guide/bounds.md), then against the state; a refused one becomes the dead-letter
//! [`Rejection`] that says why.
//!
//! The service checks where every replica agrees: its forwarder writes the verdict (the update,
//! or the rejection) into the changelog, and every replica applies that. A bound changed later
//! changes no verdict already logged, so a replica rebuilding from the changelog gets the state
//! the others have.

use std::collections::HashSet;

use super::Update;
use crate::bounds::Bounds;
use crate::engine::correct::CorrectionKind;
use crate::engine::{Engine, EngineError, NewLabel};
use crate::events::decode::{Reason, Rejection};
use crate::events::{bounds as event_bounds, LabelEvent};

/// Turn a label event into an engine update, checked against `bounds` and `engine` before any
/// LLM call.
pub fn label_update(
    engine: &Engine,
    event: LabelEvent,
    bounds: &Bounds,
) -> Result<Update, Rejection> {
    LabelChecks::new(engine, *bounds).update(event)
}

/// Label events checked in a row against one state that does not hold the ones checked
/// before them yet (the service's forwarder checks what the labels topic brings, then applies
/// it from the changelog): the active labels they add and retire count towards the bound on
/// active labels as if applied.
pub struct LabelChecks<'a> {
    engine: &'a Engine,
    bounds: Bounds,
    /// Active labels, with the rounds and retirements checked so far.
    active: usize,
    retired: HashSet<String>,
}

impl<'a> LabelChecks<'a> {
    pub fn new(engine: &'a Engine, bounds: Bounds) -> Self {
        Self {
            engine,
            bounds,
            active: engine.labels().active().count(),
            retired: HashSet::new(),
        }
    }

    /// The update `event` makes, or why it is refused; a round or a retirement that passes
    /// counts towards the next events' check.
    pub fn update(&mut self, event: LabelEvent) -> Result<Update, Rejection> {
        event_bounds::label_event(&event, &self.bounds)?;
        if let LabelEvent::Round { labels, .. } = &event {
            event_bounds::active_labels(self.active, labels.len(), &self.bounds)?;
        }
        let update = checked_update(self.engine, event)?;
        match &update {
            Update::Round { labels, .. } => self.active += labels.len(),
            Update::RetireLabel { label }
                if self.engine.labels().get(label).is_some_and(|l| l.active)
                    && self.retired.insert(label.clone()) =>
            {
                self.active = self.active.saturating_sub(1);
            }
            _ => {}
        }
        Ok(update)
    }
}

/// A label event (within its bounds) as an engine update, checked against `engine`.
fn checked_update(engine: &Engine, event: LabelEvent) -> Result<Update, Rejection> {
    match event {
        LabelEvent::Round { round, labels, .. } => {
            if labels.is_empty() {
                return Err(Rejection::new(
                    Reason::InvalidRound,
                    "a round needs at least one label",
                ));
            }
            if round.trim().is_empty() {
                return Err(Rejection::new(Reason::InvalidRound, "round id is empty"));
            }
            let labels: Vec<NewLabel> = labels.iter().map(NewLabel::from).collect();
            engine
                .labels()
                .check_round(&labels)
                .map_err(|e| engine_rejection(&e))?;
            Ok(Update::Round { round, labels })
        }
        LabelEvent::AddExamples {
            label, examples, ..
        } => Ok(Update::AddExamples { label, examples }),
        LabelEvent::RetireLabel { label, .. } => Ok(Update::RetireLabel { label }),
        LabelEvent::Correct {
            text_id,
            label,
            none_of_these,
            text,
            audit,
            ..
        } => {
            match (&label, none_of_these) {
                (Some(_), true) => {
                    return Err(Rejection::new(
                        Reason::InvalidEvent,
                        "a correction names a label or says `none_of_these`, not both",
                    ))
                }
                (None, false) => {
                    return Err(Rejection::new(
                        Reason::InvalidEvent,
                        "a correction needs a `label` (or `none_of_these`: no label fits)",
                    ))
                }
                _ => {}
            }
            if text_id.trim().is_empty() {
                return Err(Rejection::new(
                    Reason::InvalidEvent,
                    "a correction needs the text's id",
                ));
            }
            if text.trim().is_empty() {
                return Err(Rejection::new(
                    Reason::EmptyText,
                    "a correction needs the text it corrects",
                ));
            }
            let kind = if audit {
                CorrectionKind::Audit
            } else {
                CorrectionKind::Review
            };
            Ok(Update::correction(text_id, label, text, kind))
        }
    }
}

/// The dead-letter reason for an update the engine refused.
pub fn engine_rejection(error: &EngineError) -> Rejection {
    let reason = match error {
        EngineError::DuplicateLabel(_) | EngineError::RepeatedInRound(_) => Reason::DuplicateLabel,
        EngineError::UnknownLabel(_) => Reason::UnknownLabel,
        EngineError::RetiredLabel(_) => Reason::RetiredLabel,
        EngineError::EmptyLabelId => Reason::InvalidRound,
        EngineError::NoActiveLabels => Reason::NoActiveLabels,
    };
    Rejection::new(reason, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::keys;
    use crate::engine::EngineConfig;
    use crate::events::{LabelSpec, EVENT_VERSION};

    fn round(id: &str, labels: &[&str]) -> LabelEvent {
        LabelEvent::Round {
            version: EVENT_VERSION,
            round: id.into(),
            labels: labels
                .iter()
                .map(|label| LabelSpec {
                    id: label.to_string(),
                    name: None,
                    description: None,
                    examples: vec![format!("{label} example text")],
                })
                .collect(),
        }
    }

    fn retire(label: &str) -> LabelEvent {
        LabelEvent::RetireLabel {
            version: EVENT_VERSION,
            label: label.into(),
        }
    }

    fn engine_with(labels: &[&str]) -> Engine {
        let mut engine = Engine::new(EngineConfig::default());
        let update = label_update(&engine, round("r0", labels), &Bounds::default()).unwrap();
        let Update::Round { labels, .. } = update else {
            panic!("a round")
        };
        engine.apply_round(None, &labels).unwrap();
        engine
    }

    #[test]
    fn a_round_past_the_active_labels_bound_is_refused_naming_it() {
        let engine = engine_with(&["a", "b"]);
        let bounds = Bounds {
            active_labels: 3,
            ..Bounds::default()
        };
        assert!(label_update(&engine, round("r1", &["c"]), &bounds).is_ok());
        let rejection = label_update(&engine, round("r1", &["c", "d"]), &bounds).unwrap_err();
        assert_eq!(rejection.reason, Reason::OverLimit);
        assert!(
            rejection
                .message
                .contains("4 active labels (2 active, 2 new)")
                && rejection.message.contains(keys::ACTIVE_LABELS),
            "{rejection}"
        );
    }

    /// The forwarder checks several events before it applies them: the ones it passed count.
    #[test]
    fn events_checked_in_a_row_count_the_rounds_and_retirements_before_them() {
        let engine = engine_with(&["a", "b"]);
        let bounds = Bounds {
            active_labels: 3,
            ..Bounds::default()
        };
        let mut checks = LabelChecks::new(&engine, bounds);
        assert!(checks.update(round("r1", &["c"])).is_ok());
        let refused = checks.update(round("r2", &["d"])).unwrap_err();
        assert_eq!(refused.reason, Reason::OverLimit, "{refused}");
        assert!(checks.update(retire("a")).is_ok());
        // Retiring it twice frees one place, not two.
        assert!(checks.update(retire("a")).is_ok());
        assert!(checks.update(round("r2", &["d"])).is_ok());
        assert!(checks.update(round("r3", &["e"])).is_err());
    }

    #[test]
    fn a_bound_on_one_event_is_checked_before_the_state() {
        let engine = engine_with(&["a"]);
        let long = "x".repeat(Bounds::default().label_id_bytes + 1);
        // Unknown to the engine too: the bound is what it is refused for.
        let rejection = label_update(&engine, retire(&long), &Bounds::default()).unwrap_err();
        assert_eq!(rejection.reason, Reason::OverLimit, "{rejection}");
    }
}
