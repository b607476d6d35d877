//! One import path per type: a type defined once in `src/` is imported under the same path
//! everywhere, so a reader searching for `crate::position::Position` finds every user (a
//! re-export is a second name for the same thing; the crate's callers outside `src/` may use
//! either). Types that share a name but are different types (`engine::Source`,
//! `events::Source`) are not compared.

use std::collections::{BTreeMap, BTreeSet};

use super::blocks::blocks_only;
use super::{is_test_module, module_path, named_paths, sources};

/// The `use` statements of a file's code (as [`blocks_only`] leaves it) before its tests, each
/// ending in `;` on its own line.
pub(super) fn use_statements(code: &str) -> String {
    let code = code.split("#[cfg(test)]").next().unwrap_or_default();
    let mut statements = String::new();
    for chunk in code.split(';') {
        // A statement starts a line: `use …` or `pub(crate) use …`.
        let start = chunk
            .match_indices('\n')
            .map(|(at, _)| at + 1)
            .chain([0])
            .find(|&at| {
                let line = chunk[at..].trim_start();
                let line = line.strip_prefix("pub").map_or(line, |rest| {
                    rest.trim_start_matches(|c: char| c != ' ' && c != '\n')
                        .trim_start()
                });
                line.starts_with("use ")
            });
        if let Some(start) = start {
            statements.push_str(chunk[start..].trim());
            statements.push_str(";\n");
        }
    }
    statements
}

/// The names of the types (`struct`, `enum`, `trait`, `type`) a file's code defines.
fn defined_types(code: &str) -> Vec<String> {
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|pair| ["struct", "enum", "trait", "type"].contains(&pair[0]))
        .map(|pair| pair[1].to_string())
        .filter(|name| name.starts_with(|c: char| c.is_ascii_uppercase()))
        .collect()
}

#[test]
fn a_type_is_imported_under_one_path() {
    let mut definitions: BTreeMap<String, usize> = BTreeMap::new();
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in sources() {
        let text = std::fs::read_to_string(&path).expect("readable source");
        let code = blocks_only(&text);
        for name in defined_types(&code) {
            *definitions.entry(name).or_default() += 1;
        }
        if is_test_module(&path) {
            continue;
        }
        let uses = use_statements(&code);
        for named in named_paths(&uses, &module_path(&path)) {
            let Some((name, module)) = named.split_last() else {
                continue;
            };
            if name.starts_with(|c: char| c.is_ascii_uppercase()) && !module.is_empty() {
                imports
                    .entry(name.clone())
                    .or_default()
                    .insert(module.join("::"));
            }
        }
    }
    let twice: Vec<String> = imports
        .iter()
        .filter(|(name, modules)| modules.len() > 1 && definitions.get(*name) == Some(&1))
        .map(|(name, modules)| format!("{name}: {modules:?}"))
        .collect();
    assert!(
        twice.is_empty(),
        "types imported under more than one path:\n{}",
        twice.join("\n")
    );
}
