//! The facts the architecture page states about the source tree (docs/design/architecture.md,
//! "Layers"), checked on every file under `src/`: each module imports only from the layers
//! below it (so there is no import cycle), rdkafka is imported under `src/stream/kafka/` only,
//! and no source file is longer than 600 lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each top-level module of the crate and the modules it may use, lowest layer first. A module
/// may use only those listed before it.
const LAYERS: &[(&str, &[&str])] = &[
    ("threads", &[]),
    ("input", &[]),
    ("engine", &["threads"]),
    ("events", &["engine", "input"]),
    ("llm", &["engine"]),
    ("discovery", &["engine", "events"]),
    ("state", &["engine", "discovery", "events"]),
    ("store", &["engine", "state"]),
    ("embed", &["engine", "state", "store"]),
    ("config", &["engine", "discovery", "embed", "llm"]),
    ("classify", &["engine", "llm", "threads"]),
    ("telemetry", &["engine", "llm"]),
    (
        "eval",
        &[
            "threads",
            "engine",
            "events",
            "llm",
            "discovery",
            "classify",
        ],
    ),
    (
        "stream",
        &[
            "threads",
            "engine",
            "events",
            "llm",
            "discovery",
            "state",
            "store",
            "embed",
            "config",
            "classify",
            "telemetry",
        ],
    ),
    (
        "embedded",
        &[
            "threads",
            "input",
            "engine",
            "events",
            "llm",
            "discovery",
            "state",
            "store",
            "embed",
            "config",
            "classify",
        ],
    ),
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

/// The code of a line, without a trailing or whole-line comment.
fn code(line: &str) -> &str {
    match line.find("//") {
        Some(at) => &line[..at],
        None => line,
    }
}

/// The crate modules a line names (`crate::engine::…` → `engine`).
fn named_modules(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code(line);
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            found.push(name);
        }
    }
    found
}

#[test]
fn each_module_uses_only_the_layers_below_it() {
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let mut wrong = Vec::new();
    for path in sources() {
        let module = module_of(&path);
        if TOP.contains(&module.as_str()) {
            continue;
        }
        let Some(may_use) = allowed.get(module.as_str()) else {
            wrong.push(format!("{}: module {module} has no layer", path.display()));
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("readable source");
        for (number, line) in text.lines().enumerate() {
            for used in named_modules(line) {
                if used != module && !may_use.contains(&used.as_str()) {
                    wrong.push(format!(
                        "{}:{}: {module} uses {used}",
                        path.display(),
                        number + 1
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports across layers:\n{}",
        wrong.join("\n")
    );
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
