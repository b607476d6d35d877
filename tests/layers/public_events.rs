//! The published events are the events' own types: every type with a JSON Schema lives under
//! `src/events/`, and none of them names an engine type (docs/design/formats.md, "Published
//! events"), so renaming an engine variant cannot change what consumers read.

use std::path::Path;

use super::blocks::blocks_only;
use super::import_paths::use_statements;
use super::{module_path, named_paths, sources};

/// The bodies (`{…}`) of the items of `code` whose attributes derive `JsonSchema`.
fn schema_bodies(code: &str) -> Vec<&str> {
    let mut bodies = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("JsonSchema") {
        let after = &rest[at..];
        let in_derive = rest[..at]
            .rfind("#[derive(")
            .is_some_and(|open| !rest[open..at].contains(']'));
        let Some(open) = after.find('{') else { break };
        if in_derive {
            let mut level = 0usize;
            let end = after[open..].char_indices().find_map(|(i, c)| {
                match c {
                    '{' => level += 1,
                    '}' => level -= 1,
                    _ => {}
                }
                (level == 0).then_some(open + i)
            });
            bodies.push(&after[open..=end.unwrap_or(after.len() - 1)]);
        }
        rest = &after[open..];
    }
    bodies
}

#[test]
fn published_types_live_in_events_and_name_no_engine_type() {
    let events = Path::new("src/events");
    let mut wrong = Vec::new();
    for path in sources() {
        let text = std::fs::read_to_string(&path).expect("readable source");
        let code = blocks_only(&text);
        let bodies = schema_bodies(&code);
        if bodies.is_empty() {
            continue;
        }
        if !path.starts_with(events) {
            wrong.push(format!(
                "{}: a JSON Schema outside src/events/",
                path.display()
            ));
            continue;
        }
        // The names this file takes from the engine (`use crate::engine::{Basis, …}`).
        let uses = use_statements(&code);
        let from_engine: Vec<String> = named_paths(&uses, &module_path(&path))
            .into_iter()
            .filter(|p| p.first().is_some_and(|m| m == "engine"))
            .filter_map(|p| p.last().cloned())
            .collect();
        for body in bodies {
            let words: Vec<&str> = body
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .collect();
            if body.contains("engine::") {
                wrong.push(format!(
                    "{}: a published type names engine::",
                    path.display()
                ));
            }
            for name in &from_engine {
                if words.contains(&name.as_str()) {
                    wrong.push(format!(
                        "{}: a published type names engine's {name}",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The reader finds a derived schema's body, and only a derived one's.
#[test]
fn schema_bodies_are_the_derived_items_bodies() {
    let code = "#[derive(Debug, JsonSchema)]\n#[serde(x)]\npub struct P { pub basis: Basis, inner: Q<{ 1 }> }\nimpl JsonSchema for R { fn f() {} }";
    assert_eq!(
        schema_bodies(code),
        ["{ pub basis: Basis, inner: Q<{ 1 }> }"]
    );
}
