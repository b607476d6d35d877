//! The records a finished text turns into (the events themselves are built in
//! [`crate::events::classification`]).

use crate::events::decode::Rejection;
use crate::events::{DeadLetterHeaders, InputPosition, DEAD_LETTER_MAX_KEY_BYTES};

use crate::broker::{Outgoing, RecordLimit};

/// What of the limit a dead letter leaves free for the framing Kafka counts beside its key,
/// value and headers (the batch's header, length fields: under 200 bytes for its headers).
const FRAMING_BYTES: usize = 512;

/// The most of a rejected key a dead letter keeps once it was refused as too large.
const REFUSED_KEY_BYTES: usize = 256;

const TRUNCATED_FROM: &str = "gorag.truncated_from";
const KEY_TRUNCATED_FROM: &str = "gorag.key_truncated_from";

/// The original record with Connect-style headers saying why, no larger than `limit` (the
/// producer's `message.max.bytes`): a key longer than [`DEAD_LETTER_MAX_KEY_BYTES`] is cut (the
/// header `gorag.key_truncated_from` says so), and a value that does not fit beside the key
/// and the headers keeps only its start (the header `gorag.truncated_from` says so).
pub fn dead_letter(
    topic: &str,
    position: &InputPosition,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    stage: &str,
    rejection: &Rejection,
    limit: RecordLimit,
) -> Outgoing {
    let mut headers = DeadLetterHeaders::new(position, stage, rejection);
    let key = key.map(|mut key| {
        if key.len() > DEAD_LETTER_MAX_KEY_BYTES {
            headers.key_truncated_from = Some(key.len().to_string());
            key.truncate(DEAD_LETTER_MAX_KEY_BYTES);
        }
        key
    });
    let mut payload = payload;
    // Counted as if the value were cut, so that cutting it cannot make it not fit.
    let length_header = TRUNCATED_FROM.len() + payload.len().to_string().len();
    let headers_bytes: usize = headers
        .pairs()
        .iter()
        .map(|(name, value)| name.len() + value.len())
        .sum();
    let room = limit.bytes().saturating_sub(
        FRAMING_BYTES + key.as_ref().map_or(0, Vec::len) + headers_bytes + length_header,
    );
    if payload.len() > room {
        headers.truncated_from = Some(payload.len().to_string());
        payload.truncate(room);
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

/// `letter`, a dead letter the broker refused as too large (its topic takes less than the
/// producer), without its value and with at most [`REFUSED_KEY_BYTES`] of its key: a record of
/// its headers alone, which any broker takes. The length headers keep the original lengths.
pub fn without_value(letter: &Outgoing) -> Outgoing {
    let mut headers = letter.headers.clone();
    let mut note = |name: &str, length: usize| {
        if !headers.iter().any(|(n, _)| n == name) {
            headers.push((name.to_string(), length.to_string()));
        }
    };
    if !letter.payload.is_empty() {
        note(TRUNCATED_FROM, letter.payload.len());
    }
    let key = letter.key.as_ref().map(|key| {
        if key.len() > REFUSED_KEY_BYTES {
            note(KEY_TRUNCATED_FROM, key.len());
        }
        key[..key.len().min(REFUSED_KEY_BYTES)].to_vec()
    });
    Outgoing {
        topic: letter.topic.clone(),
        key,
        payload: Vec::new(),
        headers,
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

    fn letter(key: Option<Vec<u8>>, payload: Vec<u8>, message: &str, limit: usize) -> Outgoing {
        let position = InputPosition {
            topic: "texts".into(),
            partition: 1,
            offset: 7,
        };
        let rejection = Rejection::new(Reason::OversizedText, message);
        dead_letter(
            "dlq",
            &position,
            key,
            payload,
            "decode",
            &rejection,
            RecordLimit::new(limit),
        )
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
        let record = letter(
            Some(b"t1".to_vec()),
            vec![b'x'; 500_000],
            "too long",
            1_000_000,
        );
        assert_eq!(record.payload.len(), 500_000);
        assert_eq!(header(&record, TRUNCATED_FROM), None);
        assert_eq!(header(&record, "gorag.reason"), Some("oversized_text"));
        assert_eq!(record.key.as_deref(), Some(&b"t1"[..]));
    }

    /// Key, value and headers together never pass the limit, whatever their sizes: a 700 kB
    /// record whose error quoted it used to make a dead letter of 1.2 MB.
    #[test]
    fn a_dead_letter_never_passes_the_limit() {
        let huge_message = format!("invalid type: string \"{}\"", "v".repeat(700_000));
        for (key, payload, limit) in [
            (None, vec![b'x'; 10 * 1024 * 1024], 1_000_000),
            (Some(vec![b'k'; 900_000]), vec![b'x'; 900_000], 1_000_000),
            (Some(vec![b'k'; 10]), vec![b'x'; 700_000], 1_000_000),
            (Some(vec![b'k'; 10]), vec![b'x'; 9_000], 8_000),
        ] {
            let payload_len = payload.len();
            let record = letter(key, payload, &huge_message, limit);
            assert!(
                record.batch_bytes() <= limit,
                "{} > {limit}",
                record.batch_bytes()
            );
            if record.payload.len() < payload_len {
                assert_eq!(
                    header(&record, TRUNCATED_FROM),
                    Some(payload_len.to_string().as_str())
                );
                // Cut only as far as needed: within the framing's allowance of the limit.
                assert!(record.batch_bytes() + FRAMING_BYTES + 40 >= limit);
            }
        }
    }

    #[test]
    fn a_huge_key_is_cut_and_says_so() {
        let record = letter(Some(vec![b'k'; 100_000]), b"{}".to_vec(), "id", 1_000_000);
        assert_eq!(
            record.key.as_ref().map(Vec::len),
            Some(DEAD_LETTER_MAX_KEY_BYTES)
        );
        assert_eq!(header(&record, KEY_TRUNCATED_FROM), Some("100000"));
        assert_eq!(record.payload, b"{}");
    }

    #[test]
    fn without_its_value_a_refused_letter_keeps_the_original_lengths() {
        let record = letter(Some(vec![b'k'; 5_000]), vec![b'x'; 900_000], "m", 500_000);
        let stripped = without_value(&record);
        assert!(stripped.payload.is_empty());
        assert_eq!(stripped.key.as_ref().map(Vec::len), Some(REFUSED_KEY_BYTES));
        assert_eq!(header(&stripped, TRUNCATED_FROM), Some("900000"));
        assert_eq!(header(&stripped, KEY_TRUNCATED_FROM), Some("5000"));
        assert_eq!(header(&stripped, "gorag.reason"), Some("oversized_text"));
        assert!(stripped.batch_bytes() < 2_000, "{}", stripped.batch_bytes());

        let small = letter(None, b"bad".to_vec(), "m", 1_000_000);
        assert_eq!(header(&without_value(&small), TRUNCATED_FROM), Some("3"));
    }
}
