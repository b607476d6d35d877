//! The bounds on what gorag takes in (docs/guide/bounds.md), in one place: the limits a text
//! and a label event must keep ([`Bounds`], from the configuration's `[input]` and `[labels]`),
//! and the one rule for error texts — never longer than [`ERROR_TEXT_BYTES`], quoting an
//! input value only as a short excerpt ([`error_text`], [`excerpt`]).
//!
//! Lowest layer: every module, the engine's errors included, cuts its texts the same way.

use std::borrow::Cow;

/// The most an error text carries (a dead letter's `exception.message` header, a prediction's
/// `llm_error`, a log line's error, a command's message for one line), in bytes.
pub const ERROR_TEXT_BYTES: usize = 1024;

/// The most of one input value an error text quotes, in bytes.
pub const EXCERPT_BYTES: usize = 64;

/// What a cut text ends with.
const ELLIPSIS: &str = "…";

/// `text` whole when it fits in `max_bytes`, else its longest start that fits with an
/// ellipsis after it (cut on a character boundary; never longer than `max_bytes`).
pub fn cut(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let room = max_bytes.saturating_sub(ELLIPSIS.len());
    let end = (0..=room)
        .rev()
        .find(|&at| text.is_char_boundary(at))
        .unwrap_or(0);
    if max_bytes < ELLIPSIS.len() {
        return Cow::Borrowed(&text[..end]);
    }
    Cow::Owned(format!("{}{ELLIPSIS}", &text[..end]))
}

/// An input value as an error text may quote it: its first [`EXCERPT_BYTES`], in quotes
/// (escaped as Rust's `{:?}` escapes), with an ellipsis when cut.
pub fn excerpt(value: &str) -> String {
    format!("{:?}", cut(value, EXCERPT_BYTES))
}

/// `message` as an error text may carry it: every quoted run in it (`"…"`, as serde_json quotes
/// the values it rejects, or `` `…` ``, as it quotes field names) cut to [`EXCERPT_BYTES`],
/// and the whole cut to [`ERROR_TEXT_BYTES`]. Every error text that quotes input goes through
/// here (the dead-letter [`Rejection`](crate::events::decode::Rejection), a file's line
/// errors): a 700 kB value in a wrong-typed field would otherwise be copied whole.
pub fn error_text(message: impl Into<String>) -> String {
    let message = message.into();
    if message.len() <= EXCERPT_BYTES {
        return message;
    }
    let shortened = shorten_quoted(&message);
    cut(&shortened, ERROR_TEXT_BYTES).into_owned()
}

/// `message` with each quoted run longer than [`EXCERPT_BYTES`] cut; what follows once the
/// result is past [`ERROR_TEXT_BYTES`] is not looked at (it is cut anyway).
fn shorten_quoted(message: &str) -> Cow<'_, str> {
    if !message.contains(['"', '`']) {
        return Cow::Borrowed(message);
    }
    let mut out = String::new();
    let mut rest = message;
    while let Some(open) = rest.find(['"', '`']) {
        if out.len() > ERROR_TEXT_BYTES {
            return Cow::Owned(out);
        }
        let quote = if rest.as_bytes()[open] == b'"' {
            '"'
        } else {
            '`'
        };
        out.push_str(&rest[..=open]);
        let inner = &rest[open + 1..];
        let close = closing(inner, quote);
        let content = &inner[..close.unwrap_or(inner.len())];
        let kept = cut(content, EXCERPT_BYTES);
        // A cut right after an escape's backslash would escape the ellipsis.
        let kept = match &kept {
            Cow::Owned(cut) if cut.trim_end_matches(ELLIPSIS).ends_with('\\') => {
                let body = cut.trim_end_matches(ELLIPSIS).trim_end_matches('\\');
                Cow::Owned(format!("{body}{ELLIPSIS}"))
            }
            _ => kept,
        };
        out.push_str(&kept);
        match close {
            Some(at) => {
                out.push(quote);
                rest = &inner[at + 1..];
            }
            None => return Cow::Owned(out),
        }
    }
    out.push_str(&cut(rest, ERROR_TEXT_BYTES));
    Cow::Owned(out)
}

/// Where the quoted run that `inner` starts ends: the next `quote` (for `"`, one that no
/// backslash escapes).
fn closing(inner: &str, quote: char) -> Option<usize> {
    if quote == '`' {
        return inner.find('`');
    }
    let bytes = inner.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

/// The limits an input must keep: texts (the texts topic, `gorag classify`'s texts, labelled
/// examples, corrections) and label events (the labels topic, the labels file of
/// `gorag classify` and `gorag labels import`). Every front end checks them alike
/// (docs/guide/bounds.md); the defaults are [`Bounds::default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// A text's (and a labelled example's) UTF-8 length: `input.max_text_bytes`.
    pub text_bytes: usize,
    /// A text's id: `input.max_id_bytes`.
    pub text_id_bytes: usize,
    /// A label's id, a round's id, a text's gold label: `labels.max_id_bytes`.
    pub label_id_bytes: usize,
    /// A label's name: `labels.max_name_bytes`.
    pub name_bytes: usize,
    /// A label's description: `labels.max_description_bytes`.
    pub description_bytes: usize,
    /// Examples one event gives one label (a round's label, an `add_examples` event):
    /// `labels.max_examples`.
    pub examples_per_label: usize,
    /// Labels one round announces: `labels.max_per_round`.
    pub labels_per_round: usize,
    /// Active labels in all (announced, not retired): `labels.max_active`.
    pub active_labels: usize,
}

/// The configuration key of each bound, as error texts name them.
pub mod keys {
    pub const TEXT_BYTES: &str = "input.max_text_bytes";
    pub const TEXT_ID_BYTES: &str = "input.max_id_bytes";
    pub const LABEL_ID_BYTES: &str = "labels.max_id_bytes";
    pub const NAME_BYTES: &str = "labels.max_name_bytes";
    pub const DESCRIPTION_BYTES: &str = "labels.max_description_bytes";
    pub const EXAMPLES_PER_LABEL: &str = "labels.max_examples";
    pub const LABELS_PER_ROUND: &str = "labels.max_per_round";
    pub const ACTIVE_LABELS: &str = "labels.max_active";
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            text_bytes: 100_000,
            text_id_bytes: 1024,
            label_id_bytes: 256,
            name_bytes: 256,
            description_bytes: 4096,
            examples_per_label: 10_000,
            labels_per_round: 50_000,
            active_labels: 100_000,
        }
    }
}

impl Bounds {
    /// The defaults with texts (and examples) of at most `text_bytes`.
    pub fn with_text_bytes(text_bytes: usize) -> Self {
        Self {
            text_bytes,
            ..Self::default()
        }
    }
}

/// What exceeds a bound: "`what` is N bytes; the limit (`key`) is M". `None` when it fits.
pub fn over_bytes(what: &str, value: &str, limit: usize, key: &str) -> Option<String> {
    (value.len() > limit).then(|| {
        format!(
            "{what} is {} bytes; the limit ({key}) is {limit}: {}",
            value.len(),
            excerpt(value)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_ends_on_a_character_boundary_with_an_ellipsis_and_fits() {
        assert_eq!(cut("short", 10), "short");
        let cut_text = cut("ééééé", 6); // 10 bytes
        assert_eq!(cut_text, "é…");
        assert!(cut_text.len() <= 6);
        for max in 0..12 {
            assert!(cut("aéb€cdefgh", max).len() <= max, "{max}");
        }
    }

    #[test]
    fn an_excerpt_is_short_and_quoted() {
        let long = "x".repeat(10_000);
        let quoted = excerpt(&long);
        assert!(quoted.len() <= EXCERPT_BYTES + 2, "{}", quoted.len());
        assert!(
            quoted.starts_with("\"xxx") && quoted.ends_with("…\""),
            "{quoted}"
        );
        assert_eq!(excerpt("billing"), "\"billing\"");
    }

    /// serde_json quotes the value it rejects whole: a 700 kB string would be a 700 kB error.
    #[test]
    fn serde_json_errors_quoting_a_huge_value_are_cut() {
        let huge = "a\\\"b".repeat(200_000);
        let json = format!(r#"{{"id":"{huge}"}}"#);
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Typed {
            id: u32,
        }
        let error = serde_json::from_str::<Typed>(&json)
            .unwrap_err()
            .to_string();
        assert!(error.len() > 600_000);
        let text = error_text(error);
        assert!(text.len() <= 200, "{}: {text}", text.len());
        assert!(text.starts_with("invalid type: string \"a\\\"b"), "{text}");
        assert!(text.contains("…\", expected u32"), "{text}");
    }

    #[test]
    fn unknown_field_names_are_cut_and_short_texts_kept() {
        let name = "f".repeat(5_000);
        let message = format!("unknown field `{name}`, expected one of `id`, `text`");
        let text = error_text(message);
        assert!(text.len() < 200, "{text}");
        assert!(text.ends_with("…`, expected one of `id`, `text`"), "{text}");
        let short = "missing field `type`";
        assert_eq!(error_text(short), short);
    }

    #[test]
    fn any_error_text_is_at_most_the_limit() {
        for message in [
            "x".repeat(50_000),
            format!("\"{}", "y".repeat(50_000)),
            "\"ab\" ".repeat(10_000),
            format!("`{}` and \"{}\"", "é".repeat(3_000), "\\".repeat(3_001)),
        ] {
            let text = error_text(message);
            assert!(text.len() <= ERROR_TEXT_BYTES, "{}", text.len());
        }
    }

    #[test]
    fn over_bytes_names_the_key_and_quotes_an_excerpt() {
        assert_eq!(over_bytes("label id", "ok", 2, keys::LABEL_ID_BYTES), None);
        let message =
            over_bytes("label id", &"z".repeat(1000), 256, keys::LABEL_ID_BYTES).expect("over");
        assert!(
            message.starts_with("label id is 1000 bytes; the limit (labels.max_id_bytes) is 256"),
            "{message}"
        );
        assert!(message.len() < 200, "{message}");
    }
}
