//! No type has more than 20 inherent methods: a type past that does several things, which
//! belong in parts with one home each (issue 54, "Split the wide types"; the cap came down from
//! 25 in issue 66, and the types then over it were split: `Service`, `TextIndex`, `Replica`,
//! `Decisions`, `Documents`, `Desk`, `Retriever`, `KeywordGraph`, `LogSync` and `Engine`).

use std::collections::BTreeMap;

use super::blocks::{blocks_only, walk_blocks};
use super::{module_path, path_segments, sources};

/// Most inherent methods a type may have: past it, a type does several things and they belong
/// in parts with one home each (issue 54, "Split the wide types").
const MOST_METHODS: usize = 20;

/// The type an inherent `impl` header names (`impl<'t> Side<'_, 't>` → `Side`); None for a
/// trait impl or another item.
fn inherent_impl_of(header: &str) -> Option<String> {
    let header = header.trim_start();
    let rest = header
        .strip_prefix("unsafe ")
        .unwrap_or(header)
        .strip_prefix("impl")?;
    if header.contains(" for ") || rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
        return None;
    }
    // Past the impl's own generics.
    let mut rest = rest.trim_start();
    if let Some(generics) = rest.strip_prefix('<') {
        let mut level = 1;
        let end = generics.char_indices().find_map(|(at, c)| {
            level += match c {
                '<' => 1,
                '>' => -1,
                _ => 0,
            };
            (level == 0).then_some(at)
        })?;
        rest = &generics[end + 1..];
    }
    path_segments(rest).pop()
}

/// Inherent methods per type (every `fn` directly in an `impl Type {…}`, across files), outside
/// `#[cfg(test)]` items and test files: type → (count, files).
fn inherent_methods() -> BTreeMap<String, (usize, Vec<String>)> {
    enum Frame {
        Impl(String),
        Test,
        Other,
    }
    let mut methods: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    for path in sources() {
        if module_path(&path).iter().any(|part| part == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        let code = blocks_only(&text);
        walk_blocks(
            &code,
            |header, frames: &[Frame]| {
                let (attributes, item) = attributes_and_item(header);
                let in_test = frames.iter().any(|f| matches!(f, Frame::Test));
                if attributes.contains("#[cfg(test)]") {
                    Frame::Test
                } else if let Some(name) = inherent_impl_of(item) {
                    Frame::Impl(name)
                } else {
                    if let (Some(Frame::Impl(name)), false) = (frames.last(), in_test) {
                        if is_fn(item) {
                            let entry = methods.entry(name.clone()).or_default();
                            entry.0 += 1;
                            let file = path.display().to_string();
                            if !entry.1.contains(&file) {
                                entry.1.push(file);
                            }
                        }
                    }
                    Frame::Other
                }
            },
            |_, _| {},
        );
    }
    methods
}

/// An item's header split into its attributes and the item itself.
fn attributes_and_item(header: &str) -> (&str, &str) {
    let mut item_from = 0;
    let mut rest = header;
    while let Some(at) = rest.find("#[") {
        let Some(end) = rest[at..].find(']') else {
            break;
        };
        item_from += at + end + 1;
        rest = &header[item_from..];
    }
    (&header[..item_from], rest)
}

/// Whether an item header is a function's (`pub(crate) const fn name…`).
fn is_fn(item: &str) -> bool {
    let words: Vec<&str> = item.split_whitespace().take(6).collect();
    words.contains(&"fn")
        && words
            .iter()
            .take_while(|w| **w != "fn")
            .all(|w| w.starts_with("pub") || ["const", "async", "unsafe", "extern"].contains(w))
}

#[test]
fn no_type_has_more_than_20_inherent_methods() {
    let methods = inherent_methods();
    let wide: Vec<String> = methods
        .iter()
        .filter(|(_, (count, _))| *count > MOST_METHODS)
        .map(|(name, (count, files))| format!("{name}: {count} methods in {}", files.join(", ")))
        .collect();
    assert!(
        wide.is_empty(),
        "types over {MOST_METHODS} inherent methods (split each by purpose):\n{}",
        wide.join("\n")
    );
}

/// The counter reads methods in inherent impls only, across blocks and files.
#[test]
fn inherent_methods_are_counted_in_inherent_impls_only() {
    assert_eq!(
        inherent_impl_of("impl<'t> Side<'_, 't> "),
        Some("Side".into())
    );
    assert_eq!(
        inherent_impl_of("impl crate::x::Engine "),
        Some("Engine".into())
    );
    assert_eq!(inherent_impl_of("impl Default for Engine "), None);
    assert_eq!(
        inherent_impl_of("impl<T: Into<u8>> fmt::Display for W<T> "),
        None
    );
    assert!(is_fn("pub(super) fn x(&self) -> u8 "));
    assert!(!is_fn("let f = |x| x"));
    let (attributes, item) = attributes_and_item("\n#[cfg(test)]\n    pub fn store(&self) ");
    assert!(attributes.contains("#[cfg(test)]") && is_fn(item));
}
