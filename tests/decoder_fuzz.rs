//! Property tests on the event decoders: whatever the bytes, no panic, and every refusal names a
//! reason the dead-letter topic knows.

use gorag::bounds::{Bounds, ERROR_TEXT_BYTES};
use gorag::events::decode::{self, Reason};
use proptest::prelude::*;

fn json_like() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        "[a-z_ \\\\\"\\u{0}-\\u{1f}\\u{80}-\\u{10ffff}]{0,12}".prop_map(|s| format!("{s:?}")),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("type".to_string()),
                        Just("round".to_string()),
                        Just("labels".to_string()),
                        Just("id".to_string()),
                        Just("text".to_string()),
                        Just("label".to_string()),
                        Just("examples".to_string()),
                        Just("version".to_string()),
                        "[a-z]{1,6}".prop_map(|s| s),
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|fields| {
                let body: Vec<String> = fields
                    .into_iter()
                    .map(|(k, v)| format!("{k:?}:{v}"))
                    .collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}

fn known(reason: Reason) -> bool {
    Reason::ALL.contains(&reason)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Err(rejection) = decode::label_event(&bytes) {
            prop_assert!(known(rejection.reason));
            prop_assert!(!rejection.message.is_empty());
            prop_assert!(rejection.message.len() <= ERROR_TEXT_BYTES);
        }
        if let Err(rejection) = decode::text_event(&bytes, &Bounds::with_text_bytes(100)) {
            prop_assert!(known(rejection.reason));
            prop_assert!(!rejection.message.is_empty());
            prop_assert!(rejection.message.len() <= ERROR_TEXT_BYTES);
        }
    }

    #[test]
    fn json_shaped_input_is_decoded_or_refused_with_a_reason(doc in json_like()) {
        match decode::label_event(doc.as_bytes()) {
            Ok(event) => prop_assert_eq!(event.version(), 1),
            Err(rejection) => prop_assert!(known(rejection.reason)),
        }
        match decode::text_event(doc.as_bytes(), &Bounds::with_text_bytes(64)) {
            Ok(event) => {
                prop_assert!(!event.id.trim().is_empty());
                prop_assert!(!event.text.trim().is_empty() && event.text.len() <= 64);
            }
            Err(rejection) => prop_assert!(known(rejection.reason)),
        }
    }

    /// Whatever long value a record carries, and wherever, its rejection quotes at most a
    /// short excerpt of it (a field name with backticks in it, which serde_json quotes between
    /// backticks, can only be cut with the whole message, at 1 KiB).
    #[test]
    fn a_rejection_never_copies_a_long_value(
        value in "[a-z\\\\\"`é]{2000,4000}",
        at in 0usize..5,
    ) {
        let quoted = serde_json::to_string(&value).unwrap();
        let doc = match at {
            0 => format!(r#"{{"id":{quoted},"text":"x","version":{quoted}}}"#),
            1 => format!(r#"{{"id":"t",{quoted}:2,"text":"x"}}"#),
            2 => format!(r#"{{"type":{quoted}}}"#),
            3 => format!(r#"{{"type":"round","round":"r","labels":[{{"id":1,"name":{quoted}}}]}}"#),
            _ => format!(r#"{{"type":"retire_label","label":"a","version":{quoted}}}"#),
        };
        for rejection in [
            decode::label_event(doc.as_bytes()).err(),
            decode::text_event(doc.as_bytes(), &Bounds::default()).err(),
        ]
        .into_iter()
        .flatten()
        {
            let limit = if value.contains('`') { ERROR_TEXT_BYTES } else { 400 };
            prop_assert!(
                rejection.message.len() <= limit,
                "{} bytes: {}",
                rejection.message.len(),
                rejection.message
            );
        }
    }

    #[test]
    fn a_valid_text_event_with_any_text_decodes(
        id in "[a-zA-Z0-9-]{1,16}",
        text in "\\PC{1,200}",
    ) {
        let doc = serde_json::json!({"id": id, "text": text}).to_string();
        let decoded = decode::text_event(doc.as_bytes(), &Bounds::with_text_bytes(1_000));
        if text.trim().is_empty() {
            prop_assert_eq!(decoded.unwrap_err().reason, Reason::EmptyText);
        } else {
            let event = decoded.unwrap();
            prop_assert_eq!(event.text, text);
        }
    }
}

#[test]
fn nesting_beyond_the_limit_is_malformed_not_a_stack_overflow() {
    for depth in [200, 10_000, 100_000] {
        let doc = format!("{}{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        assert_eq!(
            decode::text_event(doc.as_bytes(), &Bounds::with_text_bytes(100))
                .unwrap_err()
                .reason,
            Reason::MalformedJson,
            "depth {depth}"
        );
    }
}

#[test]
fn control_characters_and_huge_texts_are_handled() {
    let doc =
        serde_json::json!({"id": "c", "text": "bell\u{7} nul\u{0} esc\u{1b}[31m"}).to_string();
    assert!(decode::text_event(doc.as_bytes(), &Bounds::with_text_bytes(1_000)).is_ok());
    let only_controls =
        serde_json::json!({"id": "c", "text": "\u{0}\u{7}\u{1b} \t\u{7f}"}).to_string();
    assert_eq!(
        decode::text_event(only_controls.as_bytes(), &Bounds::with_text_bytes(1_000))
            .unwrap_err()
            .reason,
        Reason::EmptyText
    );
    let huge = serde_json::json!({"id": "h", "text": "x".repeat(10 * 1024 * 1024)}).to_string();
    assert_eq!(
        decode::text_event(huge.as_bytes(), &Bounds::with_text_bytes(100_000))
            .unwrap_err()
            .reason,
        Reason::OversizedText
    );
}
