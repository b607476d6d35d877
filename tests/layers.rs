//! The facts the architecture page states about the source tree (docs/design/architecture.md,
//! "Layers"), checked on every file under `src/`: each module imports only from the layers
//! below it (so there is no import cycle), rdkafka is imported under `src/broker/` only, no module
//! imports a sibling that imports it back (anywhere in the tree),
//! no source file is longer than 600 lines, no type has more than 20 inherent methods
//! ([`wide_types`]), metrics move only in an internal event's `emit` ([`metric_updates`]),
//! the published events' types are the events' own ([`public_events`]), no setting is declared
//! outside its owner ([`settings`]), and a type is imported under one path ([`import_paths`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[path = "layers/blocks.rs"]
mod blocks;
#[path = "layers/import_paths.rs"]
mod import_paths;
#[path = "layers/metric_updates.rs"]
mod metric_updates;
#[path = "layers/public_events.rs"]
mod public_events;
#[path = "layers/settings.rs"]
mod settings;
#[path = "layers/wide_types.rs"]
mod wide_types;

/// The crate's top-level modules by layer, lowest first: a module may use the modules of the
/// layers below its own, and no other.
const LAYERS: &[&[&str]] = &[
    // The floor: limits, the clock, a record's position, secrets, thread pools, and telemetry (metrics and logs
    // know no domain type: callers hand them names and counts).
    &[
        "bounds",
        "clock",
        "position",
        "secret",
        "threads",
        "telemetry",
    ],
    // Seams to the outside that know nothing of the classifier: the one CSV/JSONL reader, and
    // the broker (its own settings, errors and positions).
    &["input", "broker"],
    // The pure algorithm.
    &["engine"],
    // The public events, the LLM client, and the sentence encoders (behind the engine's
    // encoder trait; the vectors they keep go through their own `VectorStore` trait).
    &["events", "llm", "embed"],
    // Emerging classes, and one text's steps (retrieval-augmented generation: the LLM's calls
    // around the engine's steps).
    &["discovery", "one_text"],
    // The replicated state, its formats, and its store.
    &["state"],
    &["store"],
    // A saved state reopened: restored, with the embedding signal attached and the vectors its
    // store kept.
    &["reopen"],
    &["config"],
    // The front ends: `gorag eval`, `gorag serve`, `gorag classify`.
    &["eval", "serve", "classify"],
    // `gorag review`, the desk: it reads and writes the service's topics through the broker
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
/// `src/engine/rank.rs` → 2, `src/one_text.rs` → 1): that many `super::` reach the crate.
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
    let members = match text.trim_start().strip_prefix('{') {
        Some(group) => split_group(group),
        None => vec![text.to_string()],
    };
    members
        .iter()
        .map(|member| identifier(member))
        .filter(|name| !name.is_empty() && name != "self")
        .collect()
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
    let seam = Path::new("src/broker");
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

/// A file's module path (`src/serve/replica/sync.rs` → `serve::replica::sync`,
/// `src/broker/mod.rs` → `broker`, `src/lib.rs` → the crate root).
fn module_path(path: &Path) -> Vec<String> {
    let relative = path.strip_prefix("src").expect("under src");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap_or_default();
    match file.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// The identifier chain at the start of `text` (`a::b::{c, d}` → `[a, b]`).
fn path_segments(text: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        let name = identifier(rest);
        if name.is_empty() {
            break;
        }
        rest = &rest.trim_start()[name.len()..];
        segments.push(name);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    segments
}

/// The paths a file's code (before its test module) names from the crate root: `crate::…`
/// and `super::…` resolved against the file's module, each group member on its own.
fn named_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let code: String = text.lines().map(code).collect::<Vec<_>>().join("\n");
    let code = code.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let preceded = code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        let (base, after): (Vec<String>, &str) = if preceded {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        } else if let Some(after) = rest.strip_prefix("crate::") {
            (Vec::new(), after)
        } else if rest.starts_with("super::") {
            // A file's own module is `module`; `super` is its parent (a `mod.rs` is the module
            // of its folder, so `super` from it leaves the folder).
            let mut base = module.to_vec();
            let mut after = rest;
            while let Some(next) = after.strip_prefix("super::") {
                base.pop();
                after = next;
            }
            (base, after)
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let members = match after.trim_start().strip_prefix('{') {
            Some(group) => split_group(group),
            None => vec![after.to_string()],
        };
        for member in members {
            let mut full = base.clone();
            full.extend(path_segments(&member));
            found.push(full);
        }
        at = code.len() - after.len();
    }
    found
}

/// The members of a `{…}` group (the text after its `{`), each with its nested groups.
fn split_group(group: &str) -> Vec<String> {
    let (mut members, mut level, mut start) = (Vec::new(), 0usize, 0usize);
    for (at, c) in group.char_indices() {
        match c {
            '{' => level += 1,
            '}' if level == 0 => {
                members.push(group[start..at].to_string());
                break;
            }
            '}' => level -= 1,
            ',' if level == 0 => {
                members.push(group[start..at].to_string());
                start = at + 1;
            }
            _ => {}
        }
    }
    members
        .into_iter()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty() && m != "self")
        .collect()
}

/// Every import between sibling modules, anywhere in the tree: (parent, from, to) with the
/// file that makes it. A file using a module inside or around its own is not counted (a
/// parent and its parts are one unit).
fn sibling_imports() -> BTreeMap<(Vec<String>, String, String), String> {
    let files = sources();
    let modules: Vec<Vec<String>> = files.iter().map(|p| module_path(p)).collect();
    let mut edges = BTreeMap::new();
    for (path, module) in files.iter().zip(&modules) {
        if is_test_module(path) {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("readable source");
        for named in named_paths(&text, module) {
            // The longest prefix of the path that is a module of the tree.
            let Some(target) = (1..=named.len())
                .rev()
                .map(|n| &named[..n])
                .find(|prefix| modules.iter().any(|m| m.as_slice() == *prefix))
            else {
                continue;
            };
            let common = module
                .iter()
                .zip(target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == module.len() || common == target.len() {
                continue;
            }
            let key = (
                module[..common].to_vec(),
                module[common].clone(),
                target[common].clone(),
            );
            edges
                .entry(key)
                .or_insert_with(|| path.display().to_string());
        }
    }
    edges
}

/// Whether a file is a module its parent declares under `#[cfg(test)]` (tests may use
/// anything).
fn is_test_module(path: &Path) -> bool {
    let Some(name) = path.file_stem().and_then(|n| n.to_str()) else {
        return false;
    };
    let (name, folder) = if name == "mod" {
        let folder = path.parent().unwrap_or(path);
        let name = folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        (name, folder.parent().unwrap_or(folder))
    } else {
        (name, path.parent().unwrap_or(path))
    };
    let parents = [
        folder.join("mod.rs"),
        folder.join("lib.rs"),
        folder.with_extension("rs"),
    ];
    parents.iter().any(|parent| {
        let text = std::fs::read_to_string(parent).unwrap_or_default();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        lines.windows(2).any(|pair| {
            pair[0] == "#[cfg(test)]"
                && (pair[1] == format!("mod {name};") || pair[1] == format!("pub mod {name};"))
        })
    })
}

#[test]
fn no_import_loop_anywhere_in_src() {
    let edges = sibling_imports();
    let mut loops = Vec::new();
    for ((parent, from, to), file) in &edges {
        // A loop through this edge: `to` reaches `from` among the same siblings.
        let mut seen = vec![to.clone()];
        let mut frontier = vec![to.clone()];
        while let Some(at) = frontier.pop() {
            for (p, f, t) in edges.keys() {
                if p == parent && *f == at && !seen.contains(t) {
                    seen.push(t.clone());
                    frontier.push(t.clone());
                }
            }
        }
        if seen.contains(from) {
            loops.push(format!(
                "in {}: {from} → {to} ({file}) and {to} reaches {from}",
                if parent.is_empty() {
                    "the crate".to_string()
                } else {
                    parent.join("::")
                }
            ));
        }
    }
    assert!(loops.is_empty(), "import loops:\n{}", loops.join("\n"));
}

#[test]
fn sibling_imports_are_read_through_super_and_groups() {
    let module = vec![
        "serve".to_string(),
        "replica".to_string(),
        "sync".to_string(),
    ];
    let paths = named_paths(
        "use super::super::{intake::X, broker};\nuse crate::engine::rank::Y;\nlet z = super::apply::go();",
        &module,
    );
    assert_eq!(
        paths,
        [
            vec!["serve", "intake", "X"],
            vec!["serve", "broker"],
            vec!["engine", "rank", "Y"],
            vec!["serve", "replica", "apply", "go"],
        ]
    );
}
