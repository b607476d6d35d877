//! What the CLI writes to a terminal from input — text ids, label ids and names, texts, whole
//! records — passes through [`printable`]: a control character (an ESC starting a terminal
//! command, a newline splitting one record's line in two, a C1 control) or a bidirectional
//! override shows as a `\u{…}` escape instead of acting on the terminal.

use std::borrow::Cow;

/// `text` with every control character and bidirectional control written as `\u{…}`.
pub fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, |c| format!("\\u{{{:x}}}", u32::from(c)))
}

/// A line of JSON (serde_json's: C0 controls escaped already) with the controls it leaves
/// raw — DEL, C1, the bidirectional ones, which occur only inside its strings — written as
/// JSON escapes (`\u009b`), so the line stays JSON.
pub fn printable_json(line: &str) -> Cow<'_, str> {
    escaped(line, |c| format!("\\u{:04x}", u32::from(c)))
}

fn escaped(text: &str, escape: impl Fn(char) -> String) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            shown.push_str(&escape(c));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// A character a terminal may act on rather than show: the characters a label's name may not
/// hold either.
fn acts(c: char) -> bool {
    crate::events::label_id::unsafe_in_text(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_overrides_show_as_escapes_and_the_rest_as_it_is() {
        assert!(matches!(
            printable("plain — ünïcode 請求"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            printable("a\u{1b}]0;pwned\u{7}\u{1b}[2Jb"),
            "a\\u{1b}]0;pwned\\u{7}\\u{1b}[2Jb"
        );
        assert_eq!(printable("two\nlines\ttab"), "two\\u{a}lines\\u{9}tab");
        assert_eq!(printable("c1\u{9b}x"), "c1\\u{9b}x");
        assert_eq!(printable("evil\u{202e}txt"), "evil\\u{202e}txt");
        let json = serde_json::json!({"text": "a\u{1b}b\u{9b}c\u{202e}d\u{7f}"}).to_string();
        let shown = printable_json(&json);
        let back: serde_json::Value = serde_json::from_str(&shown).expect("still JSON");
        assert_eq!(back["text"], "a\u{1b}b\u{9b}c\u{202e}d\u{7f}");
        assert!(!shown.chars().any(acts), "{shown}");
    }
}
