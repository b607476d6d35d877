//! Docs point only at what exists: every relative link in README.md and docs/**/*.md names a
//! file of the repository, every `docs/PATH.md` a comment or script names exists, every section
//! of a docs page a comment, script or chart names (`docs/PATH.md, "Heading"`) is a heading or a
//! bold paragraph title of that page, and so is every README section named (`README, "Title"`).

use std::path::{Path, PathBuf};

/// Files under `dir` (recursively) whose name ends with one of `endings`.
fn files(dir: &Path, endings: &[&str], found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, endings, found);
        } else if endings.iter().any(|e| path.to_string_lossy().ends_with(e)) {
            found.push(path);
        }
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The targets of `[text](target)` links that are not URLs or anchors, without their anchor.
fn relative_links(markdown: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        let path = target.split('#').next().unwrap_or("");
        if !path.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            links.push(path.to_string());
        }
    }
    links
}

#[test]
fn relative_links_in_the_docs_name_files_that_exist() {
    let mut pages = vec![PathBuf::from("README.md")];
    files(Path::new("docs"), &[".md"], &mut pages);
    files(Path::new("helm"), &[".md"], &mut pages);
    files(Path::new("docker"), &[".md"], &mut pages);
    files(Path::new("schemas"), &[".md"], &mut pages);
    let mut broken = Vec::new();
    for page in &pages {
        let base = page.parent().unwrap_or(Path::new("."));
        for link in relative_links(&read(page)) {
            if !base.join(&link).exists() {
                broken.push(format!("{}: {link}", page.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

/// Whether `markdown` has a section called `title`: a heading that starts with it, or a
/// paragraph that opens with it in bold.
fn has_section(markdown: &str, title: &str) -> bool {
    markdown.lines().any(|line| {
        let line = line.trim_start();
        (line.starts_with('#') && line.trim_start_matches('#').trim().starts_with(title))
            || line.starts_with(&format!("**{title}"))
    })
}

/// A quoted title as a comment writes it, up to its closing quote (`"` or `\"`): its words one
/// space apart, without the comment markers (`//`, `///`, `//!`, `#`) of the lines it wraps over.
fn quoted_title(after_quote: &str) -> String {
    let raw: String = after_quote
        .chars()
        .take_while(|c| *c != '"' && *c != '\\')
        .collect();
    raw.split_whitespace()
        .filter(|w| !w.chars().all(|c| c == '/' || c == '!' || c == '#'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The title of a `docs/PATH.md, "Heading"` reference, given the text right after the path:
/// a comma, then (across a line break and its comment markers, if the reference wraps) an
/// opening quote, `"` or `\"` inside a Rust string. None when no heading is named.
fn named_heading(after_path: &str) -> Option<String> {
    let rest = after_path.strip_prefix(',')?;
    let mut rest = rest.trim_start_matches(|c: char| c.is_whitespace() || "/!#".contains(c));
    rest = rest.strip_prefix('\\').unwrap_or(rest);
    let title = quoted_title(rest.strip_prefix('"')?);
    (!title.is_empty()).then_some(title)
}

#[test]
fn pages_and_sections_named_in_code_exist() {
    let readme = read(Path::new("README.md"));
    let mut sources = Vec::new();
    for dir in [
        "src", "tests", "benches", "examples", "scripts", "helm", "docker",
    ] {
        files(
            Path::new(dir),
            &[".rs", ".sh", ".py", ".yaml", ".json", "Dockerfile"],
            &mut sources,
        );
    }
    let mut missing = Vec::new();
    for source in &sources {
        if source.ends_with("docs_links.rs") {
            continue; // its own doc comment shows the forms it checks
        }
        let text = read(source);
        for (at, _) in text.match_indices("docs/") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "/_-.".contains(*c))
                .collect();
            let name = name.trim_end_matches('.');
            if !name.ends_with(".md") {
                continue;
            }
            let page = Path::new(name);
            if !page.exists() {
                missing.push(format!("{}: {name}", source.display()));
                continue;
            }
            if let Some(title) = named_heading(&text[at + name.len()..]) {
                if !has_section(&read(page), &title) {
                    missing.push(format!("{}: {name} section {title:?}", source.display()));
                }
            }
        }
        for marker in ["README, \"", "README's \"", "README's \\\"", "README (\""] {
            for (at, _) in text.match_indices(marker) {
                let title = quoted_title(&text[at + marker.len()..]);
                if !title.is_empty() && !has_section(&readme, &title) {
                    missing.push(format!("{}: README section {title:?}", source.display()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but absent:\n{}",
        missing.join("\n")
    );
}
