//! Turning input bytes into events, or into a [`Rejection`] that names why for the
//! dead-letter topic.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    LabelEvent, TextEvent, EVENT_VERSION, LABEL_EVENT_VERSION, NONE_OF_THESE_VERSION,
    PROPOSAL_VOTE_VERSION, REVIEWER_VERSION,
};
use crate::bounds::{error_text, excerpt, keys, over_bytes, Bounds};

/// Why a record went to the dead-letter topic. The code is the `gorag.reason` header and the
/// metric label (and its serde form, in changelog records); the message says what exactly was
/// wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    InvalidUtf8,
    MalformedJson,
    /// Well-formed JSON that is not a valid event (wrong types, missing or unknown fields).
    InvalidEvent,
    UnknownEventType,
    UnsupportedVersion,
    EmptyText,
    OversizedText,
    /// A round announces a label that exists, or the same label twice.
    DuplicateLabel,
    /// An update names a label that was never announced.
    UnknownLabel,
    /// An update names a retired label.
    RetiredLabel,
    /// A round that is valid JSON but cannot be applied (e.g. an empty label id).
    InvalidRound,
    /// A text arrived before any round gave it a class to choose from.
    NoActiveLabels,
    /// The LLM failed after its retries and the service is set to dead-letter such texts.
    LlmFailed,
    /// The prediction for this text is larger than the broker accepts (huge metadata).
    OutputTooLarge,
    /// An input past one of the bounds of docs/guide/bounds.md (a label id, name or
    /// description too long, too many labels or examples, a text id too long); the message
    /// names the bound's configuration key.
    OverLimit,
}

impl Reason {
    pub const ALL: [Reason; 15] = [
        Reason::InvalidUtf8,
        Reason::MalformedJson,
        Reason::InvalidEvent,
        Reason::UnknownEventType,
        Reason::UnsupportedVersion,
        Reason::EmptyText,
        Reason::OversizedText,
        Reason::DuplicateLabel,
        Reason::UnknownLabel,
        Reason::RetiredLabel,
        Reason::InvalidRound,
        Reason::NoActiveLabels,
        Reason::LlmFailed,
        Reason::OutputTooLarge,
        Reason::OverLimit,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Reason::InvalidUtf8 => "invalid_utf8",
            Reason::MalformedJson => "malformed_json",
            Reason::InvalidEvent => "invalid_event",
            Reason::UnknownEventType => "unknown_event_type",
            Reason::UnsupportedVersion => "unsupported_version",
            Reason::EmptyText => "empty_text",
            Reason::OversizedText => "oversized_text",
            Reason::DuplicateLabel => "duplicate_label",
            Reason::UnknownLabel => "unknown_label",
            Reason::RetiredLabel => "retired_label",
            Reason::InvalidRound => "invalid_round",
            Reason::NoActiveLabels => "no_active_labels",
            Reason::LlmFailed => "llm_failed",
            Reason::OutputTooLarge => "output_too_large",
            Reason::OverLimit => "over_limit",
        }
    }
}

#[cfg(test)]
#[test]
fn every_reason_serialises_as_its_code() {
    for reason in Reason::ALL {
        let json = serde_json::to_string(&reason).unwrap_or_default();
        assert_eq!(json, format!("\"{}\"", reason.code()));
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Why an input was refused: its reason, and a message of at most
/// [`ERROR_TEXT_BYTES`](crate::bounds::ERROR_TEXT_BYTES) that quotes the input only as short
/// excerpts (made so by [`Rejection::new`], the only way one is made).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct Rejection {
    pub reason: Reason,
    pub message: String,
}

impl Rejection {
    /// A rejection whose message is bounded ([`error_text`]): it goes into a dead letter's
    /// header, a log line, a command's output.
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: error_text(message),
        }
    }

    /// An input past a bound: [`Reason::OverLimit`] with `message` (which names the bound's key).
    pub fn over_limit(message: impl Into<String>) -> Self {
        Self::new(Reason::OverLimit, message)
    }
}

const LABEL_EVENT_TYPES: [&str; 4] = ["round", "add_examples", "retire_label", "correct"];

fn json(bytes: &[u8]) -> Result<Value, Rejection> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Rejection::new(Reason::InvalidUtf8, format!("payload is not UTF-8: {e}")))?;
    serde_json::from_str(text).map_err(|e| Rejection::new(Reason::MalformedJson, e.to_string()))
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, Rejection> {
    serde_json::from_value(value).map_err(|e| Rejection::new(Reason::InvalidEvent, e.to_string()))
}

fn check_version(version: u32) -> Result<(), Rejection> {
    if version == EVENT_VERSION {
        Ok(())
    } else {
        Err(Rejection::new(
            Reason::UnsupportedVersion,
            format!("event version {version}; this build reads version {EVENT_VERSION}"),
        ))
    }
}

/// Decode a proposals-topic record.
pub fn proposal_event(bytes: &[u8]) -> Result<super::proposal::ProposalEvent, Rejection> {
    let event: super::proposal::ProposalEvent = typed(json(bytes)?)?;
    let newest = super::proposal::PROPOSAL_EVENT_VERSION;
    if !(EVENT_VERSION..=newest).contains(&event.version) {
        return Err(Rejection::new(
            Reason::UnsupportedVersion,
            format!(
                "proposal event version {}; this build reads versions {EVENT_VERSION} to {newest}",
                event.version
            ),
        ));
    }
    if event.closest_label.is_some() && event.version < 2 {
        return Err(Rejection::new(
            Reason::InvalidEvent,
            "`closest_label` needs \"version\": 2 (an older build would refuse the field)",
        ));
    }
    Ok(event)
}

/// Decode a labels-topic record.
pub fn label_event(bytes: &[u8]) -> Result<LabelEvent, Rejection> {
    let value = json(bytes)?;
    match value.get("type") {
        Some(Value::String(kind)) if !LABEL_EVENT_TYPES.contains(&kind.as_str()) => {
            return Err(Rejection::new(
                Reason::UnknownEventType,
                format!(
                    "event type {}; expected one of {}",
                    excerpt(kind),
                    LABEL_EVENT_TYPES.join(", ")
                ),
            ))
        }
        Some(Value::String(_)) => {}
        Some(_) => {
            return Err(Rejection::new(
                Reason::InvalidEvent,
                "field `type` must be a string",
            ))
        }
        None if value.is_object() => {
            return Err(Rejection::new(Reason::InvalidEvent, "missing field `type`"))
        }
        None => {
            return Err(Rejection::new(
                Reason::InvalidEvent,
                "a label event is a JSON object",
            ))
        }
    }
    let event: LabelEvent = typed(value)?;
    check_label_version(&event)?;
    Ok(event)
}

/// Label events are read from version 1 to [`LABEL_EVENT_VERSION`]; a correction to none of
/// the labels needs version 2, and one that names its reviewer version 3: the first that have them.
fn check_label_version(event: &LabelEvent) -> Result<(), Rejection> {
    let version = event.version();
    if !(EVENT_VERSION..=LABEL_EVENT_VERSION).contains(&version) {
        return Err(Rejection::new(
            Reason::UnsupportedVersion,
            format!(
                "label event version {version}; this build reads versions {EVENT_VERSION} to \
                 {LABEL_EVENT_VERSION}"
            ),
        ));
    }
    if let LabelEvent::Correct {
        none_of_these,
        reviewer,
        proposal,
        ..
    } = event
    {
        if proposal.is_some() && version < PROPOSAL_VOTE_VERSION {
            return Err(Rejection::new(
                Reason::InvalidEvent,
                "`proposal` needs \"version\": 4 (an older build would refuse the field)",
            ));
        }
        if proposal.as_deref().is_some_and(|id| id.trim().is_empty()) {
            return Err(Rejection::new(
                Reason::InvalidEvent,
                "field `proposal` must not be empty",
            ));
        }
        if proposal.is_some() && !*none_of_these {
            return Err(Rejection::new(
                Reason::InvalidEvent,
                "`proposal` goes with `none_of_these`: a text placed in a proposal fits no \
                 active label",
            ));
        }
        if *none_of_these && version < NONE_OF_THESE_VERSION {
            return Err(Rejection::new(
                Reason::InvalidEvent,
                "`none_of_these` needs \"version\": 2 (an older build would refuse the field)",
            ));
        }
        if reviewer.is_some() && version < REVIEWER_VERSION {
            return Err(Rejection::new(
                Reason::InvalidEvent,
                "`reviewer` needs \"version\": 3 (an older build would refuse the field)",
            ));
        }
    }
    Ok(())
}

/// Decode a texts-topic record, within `bounds` (the text's length, its id's, its gold label's).
pub fn text_event(bytes: &[u8], bounds: &Bounds) -> Result<TextEvent, Rejection> {
    let event: TextEvent = typed(json(bytes)?)?;
    check_version(event.version)?;
    if event.id.trim().is_empty() {
        return Err(Rejection::new(
            Reason::InvalidEvent,
            "field `id` must not be empty",
        ));
    }
    if let Some(over) = over_bytes(
        "the text's id",
        &event.id,
        bounds.text_id_bytes,
        keys::TEXT_ID_BYTES,
    ) {
        return Err(Rejection::over_limit(over));
    }
    if event.text.len() > bounds.text_bytes {
        return Err(Rejection::new(
            Reason::OversizedText,
            format!(
                "text is {} bytes; the limit ({}) is {}",
                event.text.len(),
                keys::TEXT_BYTES,
                bounds.text_bytes
            ),
        ));
    }
    if let Some(over) = event.gold_label.as_deref().and_then(|gold| {
        over_bytes(
            "the gold label",
            gold,
            bounds.label_id_bytes,
            keys::LABEL_ID_BYTES,
        )
    }) {
        return Err(Rejection::over_limit(over));
    }
    // Control characters carry no words: a text of nothing else has nothing to classify.
    if event
        .text
        .chars()
        .all(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Rejection::new(
            Reason::EmptyText,
            "field `text` is empty or only whitespace and control characters",
        ));
    }
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason_of_label(bytes: &[u8]) -> Reason {
        label_event(bytes).unwrap_err().reason
    }

    fn reason_of_text(bytes: &[u8]) -> Reason {
        text_event(bytes, &Bounds::with_text_bytes(100))
            .unwrap_err()
            .reason
    }

    #[test]
    fn label_events_decode() {
        let round = br#"{"type":"round","round":"r1","labels":[{"id":"a","examples":["x"]},{"id":"b","name":"B"}]}"#;
        match label_event(round).unwrap() {
            LabelEvent::Round {
                version,
                round,
                labels,
            } => {
                assert_eq!((version, round.as_str(), labels.len()), (1, "r1", 2));
                assert!(labels[1].examples.is_empty());
            }
            other => panic!("{other:?}"),
        }
        let retire = br#"{"type":"retire_label","label":"a","version":1}"#;
        assert!(matches!(
            label_event(retire).unwrap(),
            LabelEvent::RetireLabel { .. }
        ));
    }

    #[test]
    fn bad_label_events_name_their_reason() {
        assert_eq!(reason_of_label(b"\xff\xfe{}"), Reason::InvalidUtf8);
        assert_eq!(reason_of_label(b"{\"type\":"), Reason::MalformedJson);
        assert_eq!(
            reason_of_label(br#"{"type":"rename_label","label":"a"}"#),
            Reason::UnknownEventType
        );
        assert_eq!(reason_of_label(br#"{"round":"r1"}"#), Reason::InvalidEvent);
        assert_eq!(reason_of_label(b"[1,2]"), Reason::InvalidEvent);
        assert_eq!(
            reason_of_label(br#"{"type":"round","round":"r1","labels":"a"}"#),
            Reason::InvalidEvent
        );
        assert_eq!(
            reason_of_label(
                br#"{"type":"round","round":"r1","labels":[{"id":"a","exmples":["x"]}]}"#
            ),
            Reason::InvalidEvent
        );
        assert_eq!(
            reason_of_label(br#"{"type":"retire_label","label":"a","version":5}"#),
            Reason::UnsupportedVersion
        );
        // A text placed in a proposal: version 4, and only as none of the labels.
        let placed = |version: u32, none: bool| {
            let label = if none { "" } else { r#","label":"a""# };
            format!(
                r#"{{"type":"correct","version":{version},"text_id":"t","none_of_these":{none},"text":"x","proposal":"p-1"{label}}}"#
            )
        };
        assert_eq!(
            reason_of_label(placed(3, true).as_bytes()),
            Reason::InvalidEvent
        );
        assert_eq!(
            reason_of_label(placed(4, false).as_bytes()),
            Reason::InvalidEvent
        );
        let unnamed = placed(4, true).replace("p-1", " ");
        assert_eq!(reason_of_label(unnamed.as_bytes()), Reason::InvalidEvent);
        assert!(matches!(
            label_event(placed(4, true).as_bytes()),
            Ok(LabelEvent::Correct { proposal: Some(p), .. }) if p == "p-1"
        ));
        // A correction to none of the labels needs version 2, the first that has it.
        assert_eq!(
            reason_of_label(br#"{"type":"correct","text_id":"t","none_of_these":true,"text":"x"}"#),
            Reason::InvalidEvent
        );
        let none =
            br#"{"type":"correct","version":2,"text_id":"t","none_of_these":true,"text":"x"}"#;
        match label_event(none) {
            Ok(LabelEvent::Correct {
                label: None,
                none_of_these: true,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(reason_of_label(deep.as_bytes()), Reason::MalformedJson);
    }

    #[test]
    fn text_events_decode_and_pass_metadata() {
        let event = text_event(
            br#"{"id":"t1","text":"hello","metadata":{"a":[1]}}"#,
            &Bounds::with_text_bytes(100),
        )
        .unwrap();
        assert_eq!(event.id, "t1");
        assert_eq!(event.metadata, Some(serde_json::json!({"a": [1]})));
    }

    #[test]
    fn bad_texts_name_their_reason() {
        assert_eq!(
            reason_of_text(br#"{"id":"t","text":"  "}"#),
            Reason::EmptyText
        );
        let long = format!(r#"{{"id":"t","text":"{}"}}"#, "a".repeat(101));
        assert_eq!(reason_of_text(long.as_bytes()), Reason::OversizedText);
        assert_eq!(
            reason_of_text(br#"{"id":"","text":"x"}"#),
            Reason::InvalidEvent
        );
        assert_eq!(
            reason_of_text(br#"{"id":7,"text":"x"}"#),
            Reason::InvalidEvent
        );
        assert_eq!(reason_of_text(br#"{"text":"x"}"#), Reason::InvalidEvent);
        assert_eq!(reason_of_text(b"not json"), Reason::MalformedJson);
        assert_eq!(
            reason_of_text(b"{\"id\":\"t\",\"text\":\"\xc3\x28\"}"),
            Reason::InvalidUtf8
        );
    }

    #[test]
    fn a_text_id_or_gold_label_past_its_bound_is_over_limit() {
        let bounds = Bounds::default();
        let long_id = format!(
            r#"{{"id":"{}","text":"x"}}"#,
            "i".repeat(bounds.text_id_bytes + 1)
        );
        let rejection = text_event(long_id.as_bytes(), &bounds).unwrap_err();
        assert_eq!(rejection.reason, Reason::OverLimit);
        assert!(
            rejection.message.contains(keys::TEXT_ID_BYTES),
            "{rejection}"
        );
        let fits = format!(
            r#"{{"id":"{}","text":"x"}}"#,
            "i".repeat(bounds.text_id_bytes)
        );
        assert!(text_event(fits.as_bytes(), &bounds).is_ok());
        let gold = format!(
            r#"{{"id":"t","text":"x","gold_label":"{}"}}"#,
            "g".repeat(bounds.label_id_bytes + 1)
        );
        let rejection = text_event(gold.as_bytes(), &bounds).unwrap_err();
        assert_eq!(rejection.reason, Reason::OverLimit);
        assert!(
            rejection.message.contains(keys::LABEL_ID_BYTES),
            "{rejection}"
        );
    }

    /// A 700 kB value in a field of the wrong type: serde_json's message quotes it whole.
    #[test]
    fn a_rejection_quotes_a_huge_value_only_as_an_excerpt() {
        let huge = "v".repeat(700_000);
        let record = format!(r#"{{"id":"t","text":"x","version":"{huge}"}}"#);
        let rejection = text_event(record.as_bytes(), &Bounds::default()).unwrap_err();
        assert_eq!(rejection.reason, Reason::InvalidEvent);
        assert!(rejection.message.len() <= 200, "{}", rejection.message);
        let label = format!(r#"{{"type":"{huge}"}}"#);
        let rejection = label_event(label.as_bytes()).unwrap_err();
        assert_eq!(rejection.reason, Reason::UnknownEventType);
        assert!(rejection.message.len() <= 200, "{}", rejection.message);
        let field = format!(r#"{{"type":"round","round":"r","labels":[],"{huge}":1}}"#);
        let rejection = label_event(field.as_bytes()).unwrap_err();
        assert!(rejection.message.len() <= 200, "{}", rejection.message);
    }
}
