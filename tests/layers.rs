//! The facts the architecture page states about the source tree (docs/design/architecture.md,
//! "Layers"), checked on every file under `src/`: each module imports only from the layers
//! below it (so there is no import cycle), rdkafka is imported under `src/stream/kafka/` only,
//! and no source file is longer than 600 lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The crate's top-level modules by layer, lowest first: a module may use the modules of the
/// layers below its own, and no other.
const LAYERS: &[&[&str]] = &[
    &["bounds"],
    &["threads", "input", "secret"],
    &["engine"],
    &["events", "llm"],
    &["discovery", "classify", "telemetry"],
    &["state"],
    &["store"],
    &["embed"],
    &["config"],
    // The front ends: `gorag eval`, `gorag serve`, `gorag classify`.
    &["eval", "stream", "embedded"],
    // `gorag review`, the desk: it reads and writes the service's topics through its broker
    // seam.
    &["review"],
];

/// Modules free to use any other: the command line, and the crate's roots.
const TOP: &[&str] = &["cli", "lib", "main"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    files.sort();
    files
}

/// The top-level module a file belongs to (`src/engine/index/mod.rs` → `engine`).
fn module_of(path: &Path) -> String {
    let relative = path.strip_prefix("src").expect("under src");
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.trim_end_matches(".rs").to_string()
}

/// The code of a line, without a trailing or whole-line comment (a `//` inside a string cuts
/// it too: then less is checked, never more).
fn code(line: &str) -> &str {
    match line.find("//") {
        Some(at) => &line[..at],
        None => line,
    }
}

/// How many modules deep a file's module is (`src/engine/index/mod.rs` → 2,
/// `src/engine/rank.rs` → 2, `src/classify.rs` → 1): that many `super::` reach the crate.
fn depth_of(path: &Path) -> usize {
    let relative = path.strip_prefix("src").expect("under src");
    let parts = relative.components().count();
    match relative.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs") => parts - 1,
        _ => parts,
    }
}

fn identifier(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The first names of a path or of each path in a `{…}` group at the start of `text`.
fn first_names(text: &str) -> Vec<String> {
    let Some(group) = text.trim_start().strip_prefix('{') else {
        return Some(identifier(text))
            .filter(|n| !n.is_empty())
            .into_iter()
            .collect();
    };
    let (mut names, mut level, mut start) = (Vec::new(), 0usize, 0usize);
    for (at, c) in group.char_indices() {
        match c {
            '{' => level += 1,
            '}' if level == 0 => {
                names.push(identifier(&group[start..at]));
                break;
            }
            '}' => level -= 1,
            ',' if level == 0 => {
                names.push(identifier(&group[start..at]));
                start = at + 1;
            }
            _ => {}
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

/// The crate modules a file's code names: `crate::engine::…`, `crate::{engine::X, state}`,
/// and `super::…` with as many `super`s as reach the crate from the file's own module (not
/// from its test module, one deeper, which the `crate::` paths cover).
fn named_modules(text: &str, depth: usize) -> Vec<String> {
    let code: String = text.lines().map(code).collect::<Vec<_>>().join("\n");
    let outside_tests = code.split("#[cfg(test)]").next().unwrap_or_default();
    let to_root = "super::".repeat(depth);
    let mut found = Vec::new();
    for (prefix, searched) in [
        ("crate::", code.as_str()),
        (to_root.as_str(), outside_tests),
    ] {
        if prefix.is_empty() {
            continue;
        }
        let mut rest = searched;
        while let Some(at) = rest.find(prefix) {
            let after = &rest[at + prefix.len()..];
            let deeper = prefix.starts_with("super") && after.starts_with("super::");
            let preceded = rest[..at].ends_with("super::");
            if !deeper && !preceded {
                found.extend(first_names(after));
            }
            rest = after;
        }
    }
    found
}

#[test]
fn each_module_uses_only_the_layers_below_it() {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(layer, modules)| modules.iter().map(move |&m| (m, layer)))
        .collect();
    let mut wrong = Vec::new();
    for path in sources() {
        let module = module_of(&path);
        if TOP.contains(&module.as_str()) {
            continue;
        }
        let Some(&layer) = layer_of.get(module.as_str()) else {
            wrong.push(format!("{}: module {module} has no layer", path.display()));
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("readable source");
        for used in named_modules(&text, depth_of(&path)) {
            let below = layer_of.get(used.as_str()).is_some_and(|&l| l < layer);
            if used != module && !below {
                wrong.push(format!("{}: {module} uses {used}", path.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports across layers:\n{}",
        wrong.join("\n")
    );
}

/// The reader sees through the ways a path can be written.
#[test]
fn paths_are_read_in_every_form() {
    let text = "use crate::{engine::Engine, state::{self, State}};\nlet x = crate::store::X; // crate::cli\nsuper::super::events::Y;";
    assert_eq!(
        named_modules(text, 2),
        ["engine", "state", "store", "events"]
    );
    // One `super` too few reaches a sibling, not the crate.
    assert!(named_modules("super::index::X", 2).is_empty());
}

#[test]
fn rdkafka_is_imported_under_the_broker_seam_only() {
    let seam = Path::new("src/stream/kafka");
    let outside: Vec<String> = sources()
        .into_iter()
        .filter(|path| !path.starts_with(seam))
        .filter(|path| {
            let text = std::fs::read_to_string(path).expect("readable source");
            text.lines().any(|line| code(line).contains("rdkafka::"))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "rdkafka used outside {seam:?}: {outside:?}"
    );
}

#[test]
fn no_source_file_is_longer_than_600_lines() {
    let long: Vec<String> = sources()
        .into_iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(&path).ok()?.lines().count();
            (lines > 600).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "{long:?}");
}
