//! The committed JSON Schemas match the types, and every documented example (README.md,
//! schemas/README.md, docs/**/*.md) validates.

use std::path::Path;

use gorag::bounds::Bounds;
use gorag::events::{decode, schema};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn schema_named(name: &str) -> Value {
    schema::all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no schema {name}"))
}

fn assert_valid(schema_name: &str, instance: &Value, origin: &str) {
    let schema = schema_named(schema_name);
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{origin} ({schema_name}): {errors:?}");
}

#[test]
fn committed_schemas_match_the_types() {
    for (name, value) in schema::all() {
        let path = root().join("schemas").join(format!("{name}.schema.json"));
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            committed,
            schema::render(&value),
            "{} is stale: run `gorag schemas --out schemas`",
            path.display()
        );
    }
}

/// A schema never changes under the same version: each version's schema is kept under
/// `tests/fixtures/events/` (`GORAG_WRITE_GOLDEN=1` writes the file of a new version), and the
/// types must give it again. Only its descriptions may change under the same version (they
/// change nothing a consumer validates): `GORAG_WRITE_GOLDEN=1` then re-pins the file.
#[test]
fn a_schema_changes_only_with_its_version() {
    let names: Vec<&str> = schema::all().iter().map(|(name, _)| *name).collect();
    let versioned: Vec<&str> = schema::versions().iter().map(|(name, _)| *name).collect();
    assert_eq!(names, versioned, "every schema has a version");
    let folder = root().join("tests/fixtures/events");
    let write = std::env::var_os("GORAG_WRITE_GOLDEN").is_some();
    for ((name, value), (_, version)) in schema::all().into_iter().zip(schema::versions()) {
        let path = folder.join(format!("{name}.v{version}.schema.json"));
        let text = schema::render(&value);
        if !path.exists() && write {
            std::fs::create_dir_all(&folder).expect("fixtures folder");
            std::fs::write(&path, &text).expect("write the new version's schema");
        }
        let pinned = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "no schema pinned for {name} version {version}: GORAG_WRITE_GOLDEN=1 cargo test \
                 --test schemas writes {}",
                path.display()
            )
        });
        let pinned_value: Value = serde_json::from_str(&pinned).expect("a pinned schema is JSON");
        assert!(
            without_descriptions(&pinned_value) == without_descriptions(&value),
            "the {name} schema changed but its version is still {version}: bump the version, \
             say what it added (docs/maintainers.md, \"Add a field to an event\"), and pin the new \
             schema (GORAG_WRITE_GOLDEN=1 cargo test --test schemas)"
        );
        if pinned != text && write {
            std::fs::write(&path, &text).expect("re-pin the schema's descriptions");
        } else {
            assert!(
                pinned == text,
                "the {name} schema's descriptions changed: GORAG_WRITE_GOLDEN=1 cargo test --test \
                 schemas re-pins them under version {version}"
            );
        }
    }
}

/// Keywords whose value maps names to schemas: a name there is not a keyword (a field may be
/// called `description`).
const NAMED_SCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Keywords whose value is data, compared as it is.
const DATA: &[&str] = &["default", "examples", "const", "enum"];

/// A schema with its descriptions (a `description` keyword with text) taken out: what a
/// consumer validates against.
fn without_descriptions(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, value)| !(key.as_str() == "description" && value.is_string()))
                .map(|(key, value)| {
                    let value = match value {
                        _ if DATA.contains(&key.as_str()) => value.clone(),
                        Value::Object(named) if NAMED_SCHEMAS.contains(&key.as_str()) => {
                            Value::Object(
                                named
                                    .iter()
                                    .map(|(name, schema)| {
                                        (name.clone(), without_descriptions(schema))
                                    })
                                    .collect(),
                            )
                        }
                        _ => without_descriptions(value),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_descriptions).collect()),
        other => other.clone(),
    }
}

/// What the version check reads as the same schema: another description, and nothing else.
#[test]
fn only_descriptions_may_change_under_a_version() {
    let schema = |field: &str, kind: &str, text: &str| {
        serde_json::json!({
            "description": text,
            "properties": { field: { "type": kind, "description": text } },
            "$defs": { "Spec": { "properties": { "description": { "type": "string" } } } },
            "default": { "description": "a default" },
        })
    };
    let pinned = without_descriptions(&schema("description", "string", "old"));
    let documented = without_descriptions(&schema("description", "string", "new"));
    assert_eq!(pinned, documented, "a description's text may change");
    for (changed, what) in [
        (schema("summary", "string", "old"), "a field renamed"),
        (schema("description", "integer", "old"), "a field retyped"),
    ] {
        assert_ne!(pinned, without_descriptions(&changed), "{what}");
    }
    let mut default_changed = schema("description", "string", "old");
    default_changed["default"]["description"] = "other".into();
    assert_ne!(
        pinned,
        without_descriptions(&default_changed),
        "data is compared as it is"
    );
}

/// (schema name, JSON) of every ```json <schema> block of a Markdown file.
fn fenced_examples(markdown: &str) -> Vec<(String, String)> {
    let mut examples = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in markdown.lines() {
        match &mut current {
            None => {
                if let Some(name) = line.trim().strip_prefix("```json ") {
                    current = Some((name.trim().to_string(), String::new()));
                }
            }
            Some(_) if line.trim() == "```" => {
                examples.extend(current.take());
            }
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    examples
}

/// The Markdown pages under `dir` (recursively), relative to the repository root, sorted.
fn markdown_pages(dir: &str, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
        return;
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|entry| format!("{dir}/{}", entry.file_name().to_string_lossy()))
        .collect();
    names.sort();
    for name in names {
        if root().join(&name).is_dir() {
            markdown_pages(&name, found);
        } else if name.ends_with(".md") {
            found.push(name);
        }
    }
}

#[test]
fn every_documented_example_validates_and_decodes() {
    let mut docs = vec!["README.md".to_string(), "schemas/README.md".to_string()];
    markdown_pages("docs", &mut docs);
    let mut checked = 0;
    for doc in &docs {
        let text =
            std::fs::read_to_string(root().join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
        for (index, (name, body)) in fenced_examples(&text).into_iter().enumerate() {
            let origin = format!("{doc} example {index}");
            let value: Value =
                serde_json::from_str(&body).unwrap_or_else(|e| panic!("{origin} is not JSON: {e}"));
            assert_valid(&name, &value, &origin);
            match name.as_str() {
                "label-event" => {
                    decode::label_event(body.as_bytes())
                        .unwrap_or_else(|e| panic!("{origin}: {e}"));
                }
                "text-event" => {
                    decode::text_event(body.as_bytes(), &Bounds::with_text_bytes(100_000))
                        .unwrap_or_else(|e| panic!("{origin}: {e}"));
                }
                "prediction" => {
                    serde_json::from_value::<gorag::events::Prediction>(value)
                        .unwrap_or_else(|e| panic!("{origin}: {e}"));
                }
                "hallucination" => {
                    serde_json::from_value::<gorag::events::HallucinationReport>(value)
                        .unwrap_or_else(|e| panic!("{origin}: {e}"));
                }
                "dead-letter-headers" => {
                    serde_json::from_value::<gorag::events::DeadLetterHeaders>(value)
                        .unwrap_or_else(|e| panic!("{origin}: {e}"));
                }
                "proposal-event" => {
                    serde_json::from_value::<gorag::events::proposal::ProposalEvent>(value)
                        .unwrap_or_else(|e| panic!("{origin}: {e}"));
                }
                other => panic!("{origin}: unknown schema {other}"),
            }
            checked += 1;
        }
    }
    assert!(checked >= 7, "only {checked} examples found");
}

#[test]
fn example_stream_files_validate() {
    let dir = root().join("examples/stream");
    let mut lines = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let schema_name = if file.starts_with("round") {
            "label-event"
        } else if file.starts_with("texts") {
            "text-event"
        } else {
            continue; // bad.jsonl is bad on purpose
        };
        for (n, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line).unwrap();
            assert_valid(schema_name, &value, &format!("{file}:{}", n + 1));
            lines += 1;
        }
    }
    assert!(lines >= 10, "only {lines} lines checked");
}

#[test]
fn the_schema_refuses_what_the_decoder_refuses() {
    let schema = schema_named("label-event");
    let validator = jsonschema::validator_for(&schema).unwrap();
    for bad in [
        r#"{"type":"rename_label","label":"a"}"#,
        r#"{"type":"round","round":"r1","labels":[{"id":"a","exmples":[]}]}"#,
        r#"{"type":"round","labels":[]}"#,
    ] {
        let value: Value = serde_json::from_str(bad).unwrap();
        assert!(!validator.is_valid(&value), "schema accepted {bad}");
        assert!(
            decode::label_event(bad.as_bytes()).is_err(),
            "decoder accepted {bad}"
        );
    }
}
