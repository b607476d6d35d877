//! JSON Schemas of the events, generated from the types. `gorag schemas --out schemas`
//! rewrites the files; a test fails when the committed files differ from what the types say.

use schemars::schema_for;
use serde_json::Value;

use super::proposal::ProposalEvent;
use super::{DeadLetterHeaders, HallucinationReport, LabelEvent, Prediction, TextEvent};

/// (file stem, schema) for every event, in a fixed order.
pub fn all() -> Vec<(&'static str, Value)> {
    let to_value = |schema: schemars::Schema| schema.to_value();
    vec![
        ("label-event", to_value(schema_for!(LabelEvent))),
        ("text-event", to_value(schema_for!(TextEvent))),
        ("prediction", to_value(schema_for!(Prediction))),
        ("hallucination", to_value(schema_for!(HallucinationReport))),
        (
            "dead-letter-headers",
            to_value(schema_for!(DeadLetterHeaders)),
        ),
        ("proposal-event", to_value(schema_for!(ProposalEvent))),
    ]
}

/// The schema file's text: pretty JSON with a trailing newline.
pub fn render(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}
