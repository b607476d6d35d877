//! JSON Schemas of the events, generated from the types. `gorag schemas --out schemas`
//! rewrites the files; a test fails when the committed files differ from what the types say.

use schemars::schema_for;
use serde_json::Value;

use super::proposal::{ProposalEvent, PROPOSAL_EVENT_VERSION};
use super::{
    DeadLetterHeaders, HallucinationReport, LabelEvent, Prediction, TextEvent, EVENT_VERSION,
    LABEL_EVENT_VERSION, PREDICTION_VERSION,
};

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

/// (file stem, version) for every event: the version this build writes (the newest it reads,
/// for inputs). A schema is pinned to its version: `tests/schemas.rs` keeps a copy of each
/// version's schema under `tests/fixtures/events/` and fails when the types give another schema
/// under the same version (docs/maintainers.md, "Add a field to an event").
pub fn versions() -> Vec<(&'static str, u32)> {
    vec![
        ("label-event", LABEL_EVENT_VERSION),
        ("text-event", EVENT_VERSION),
        ("prediction", PREDICTION_VERSION),
        ("hallucination", EVENT_VERSION),
        ("dead-letter-headers", EVENT_VERSION),
        ("proposal-event", PROPOSAL_EVENT_VERSION),
    ]
}

/// The schema file's text: pretty JSON with a trailing newline.
pub fn render(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}
