//! What a new label's id, name and description may hold (docs/guide/topics-and-schemas.md,
//! "Label ids"). Ids travel everywhere — record keys, terminals, file names, the desk's page —
//! so a new one is letters and digits of any script plus `_`, `.` and `-`, in Unicode
//! normalisation form C (one spelling per id: "café" typed two ways is one label). Names and
//! descriptions are free text, but hold no control characters (a description may break lines)
//! and no bidirectional overrides, which make a text read other than it is.
//!
//! Only labels a round announces are checked: a label already in a state keeps working under
//! the id it has, whatever it holds.

use unicode_normalization::{is_nfc, UnicodeNormalization};

/// Why an id, name or description is refused, in words an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    #[error("a label id may not be empty")]
    EmptyId,
    #[error(
        "a label id holds only letters and digits (of any script), `_`, `.` and `-`; this one \
         holds {0}"
    )]
    IdCharacter(String),
    #[error("a label id must be in Unicode normalisation form C (NFC): send {0:?}")]
    NotNormalised(String),
    #[error("a label's {what} may not hold {character}")]
    TextCharacter {
        what: &'static str,
        character: String,
    },
}

/// Whether `id` may name a new label.
pub fn check_id(id: &str) -> Result<(), Unfit> {
    if id.is_empty() {
        return Err(Unfit::EmptyId);
    }
    if let Some(c) = id.chars().find(|c| !id_character(*c)) {
        return Err(Unfit::IdCharacter(shown(c)));
    }
    if !is_nfc(id) {
        return Err(Unfit::NotNormalised(id.nfc().collect()));
    }
    Ok(())
}

/// `typed` as an id: trimmed and normalised (NFC), then checked.
pub fn normalise_id(typed: &str) -> Result<String, Unfit> {
    let id: String = typed.trim().nfc().collect();
    check_id(&id)?;
    Ok(id)
}

/// Whether a label's name may be `name`: no control character, no bidirectional override.
pub fn check_name(name: &str) -> Result<(), Unfit> {
    check_text("name", name, false)
}

/// Whether a label's description may be `description`: as a name, but lines may break.
pub fn check_description(description: &str) -> Result<(), Unfit> {
    check_text("description", description, true)
}

fn check_text(what: &'static str, text: &str, lines: bool) -> Result<(), Unfit> {
    let allowed = |c: char| lines && (c == '\n' || c == '\t');
    match text.chars().find(|c| unsafe_in_text(*c) && !allowed(*c)) {
        Some(c) => Err(Unfit::TextCharacter {
            what,
            character: shown(c),
        }),
        None => Ok(()),
    }
}

fn id_character(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-') || is_combining_mark(c)
}

/// The marks that complete a letter in many scripts (Devanagari vowel signs, Thai tone marks):
/// part of a word, though not letters themselves.
fn is_combining_mark(c: char) -> bool {
    use unicode_normalization::char::is_combining_mark;
    is_combining_mark(c) && !is_invisible(c)
}

/// A control character (C0, DEL, C1) or a bidirectional control: what a terminal or a page may
/// act on rather than show (the CLI escapes the same characters, `crate::cli::printable`).
pub fn unsafe_in_text(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Characters that show nothing: zero-width spaces and joiners, the byte-order mark, the
/// combining grapheme joiner, variation selectors.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{034F}' | '\u{FE00}'..='\u{FE0F}')
}

/// A character as a message shows it: a printable one quoted, any other as its code point.
fn shown(c: char) -> String {
    if c.is_control() || is_bidi_control(c) || is_invisible(c) || c.is_whitespace() {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("{c:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_letters_and_digits_of_any_script_with_three_marks() {
        for ok in [
            "billing",
            "alarm_query",
            "v2.1-beta",
            "Rechnungsprüfung",
            "請求書",
            "счёт",
            "हिन्दी",
            "café",
        ] {
            assert_eq!(check_id(ok), Ok(()), "{ok}");
        }
        for (bad, shown) in [
            ("a b", "U+0020"),
            ("a\u{0}b", "U+0000"),
            ("a\nb", "U+000A"),
            ("a\u{1b}[2Jb", "U+001B"),
            ("pri\u{200B}vacy", "U+200B"),
            ("\"><img src=x onerror=alert(1)>", "'\"'"),
            ("a/b", "'/'"),
            ("x\u{202E}y", "U+202E"),
        ] {
            assert_eq!(
                check_id(bad),
                Err(Unfit::IdCharacter(shown.into())),
                "{bad:?}"
            );
        }
        assert_eq!(check_id(""), Err(Unfit::EmptyId));
        let decomposed = "cafe\u{301}";
        assert_eq!(
            check_id(decomposed),
            Err(Unfit::NotNormalised("café".into()))
        );
        assert_eq!(normalise_id(" cafe\u{301} "), Ok("café".to_string()));
    }

    #[test]
    fn names_and_descriptions_refuse_controls_and_overrides_but_descriptions_break_lines() {
        assert_eq!(check_name("Privacy requests — GDPR"), Ok(()));
        assert!(check_name("a\u{1b}]0;pwned\u{7}").is_err());
        assert!(check_name("two\nlines").is_err());
        assert!(check_name("evil\u{202E}txt.exe").is_err());
        assert!(check_name("c1\u{9b}2J").is_err());
        assert_eq!(check_description("Line one.\n\tLine two."), Ok(()));
        assert_eq!(
            check_description("bell\u{7}"),
            Err(Unfit::TextCharacter {
                what: "description",
                character: "U+0007".into()
            })
        );
    }
}
