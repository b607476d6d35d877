//! A label event as the update the replicated state applies, checked as every path checks it
//! (the service's labels forwarder, `gorag classify`); a refused one becomes the dead-letter
//! [`Rejection`] that says why.

use super::Update;
use crate::engine::correct::CorrectionKind;
use crate::engine::{Engine, EngineError, NewLabel};
use crate::events::decode::{Reason, Rejection};
use crate::events::LabelEvent;

/// Turn a label event into an engine update, checked before any LLM call.
pub fn label_update(engine: &Engine, event: LabelEvent) -> Result<Update, Rejection> {
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
            text,
            audit,
            ..
        } => {
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
