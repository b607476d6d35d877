//! The records a finished text turns into (the events themselves are built in
//! [`crate::events::classification`]).

use crate::events::decode::Rejection;
use crate::events::{DeadLetterHeaders, InputPosition, DEAD_LETTER_MAX_VALUE_BYTES};

use super::kafka::Outgoing;

/// The original record, untouched, with Connect-style headers saying why; a value too large
/// for the topic is cut to its first [`DEAD_LETTER_MAX_VALUE_BYTES`] (see the header
/// `gorag.truncated_from`).
pub fn dead_letter(
    topic: &str,
    position: &InputPosition,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    stage: &str,
    rejection: &Rejection,
) -> Outgoing {
    let mut headers = DeadLetterHeaders::new(position, stage, rejection);
    let mut payload = payload;
    if payload.len() > DEAD_LETTER_MAX_VALUE_BYTES {
        headers.truncated_from = Some(payload.len().to_string());
        payload.truncate(DEAD_LETTER_MAX_VALUE_BYTES);
    }
    Outgoing {
        topic: topic.to_string(),
        key,
        payload,
        headers: headers
            .pairs()
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect(),
    }
}

pub fn json_record<T: serde::Serialize>(topic: &str, key: &str, value: &T) -> Outgoing {
    Outgoing {
        topic: topic.to_string(),
        key: Some(key.as_bytes().to_vec()),
        // Serialising these plain structs cannot fail.
        payload: serde_json::to_vec(value).unwrap_or_default(),
        headers: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::decode::Reason;

    fn letter(payload: Vec<u8>) -> Outgoing {
        let position = InputPosition {
            topic: "texts".into(),
            partition: 1,
            offset: 7,
        };
        let rejection = Rejection::new(Reason::OversizedText, "too long");
        dead_letter("dlq", &position, None, payload, "decode", &rejection)
    }

    fn header<'a>(record: &'a Outgoing, name: &str) -> Option<&'a str> {
        record
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn a_value_that_fits_is_kept_whole() {
        let record = letter(vec![b'x'; DEAD_LETTER_MAX_VALUE_BYTES]);
        assert_eq!(record.payload.len(), DEAD_LETTER_MAX_VALUE_BYTES);
        assert_eq!(header(&record, "gorag.truncated_from"), None);
        assert_eq!(header(&record, "gorag.reason"), Some("oversized_text"));
    }

    #[test]
    fn a_huge_value_is_cut_and_says_so() {
        let record = letter(vec![b'x'; 10 * 1024 * 1024]);
        assert_eq!(record.payload.len(), DEAD_LETTER_MAX_VALUE_BYTES);
        assert_eq!(header(&record, "gorag.truncated_from"), Some("10485760"));
    }
}
