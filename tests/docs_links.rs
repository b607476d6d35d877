//! Docs point only at what exists: every relative link in README.md and docs/*.md names a
//! file of the repository, every `docs/NAME.md` a comment or script names exists, and every
//! README section a comment names (`README, "Title"`) is a heading or a bold paragraph title.

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

#[test]
fn pages_and_sections_named_in_code_exist() {
    let readme = read(Path::new("README.md"));
    // A section is a heading, or a paragraph that opens with its title in bold.
    let is_section = |title: &str| {
        readme.lines().any(|line| {
            let line = line.trim_start();
            (line.starts_with('#') && line.trim_start_matches('#').trim().starts_with(title))
                || line.starts_with(&format!("**{title}"))
        })
    };
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
            if name.ends_with(".md") && !Path::new(name).exists() {
                missing.push(format!("{}: {name}", source.display()));
            }
        }
        for marker in ["README, \"", "README's \"", "README's \\\"", "README (\""] {
            for (at, _) in text.match_indices(marker) {
                let after = &text[at + marker.len()..];
                let raw: String = after
                    .chars()
                    .take_while(|c| *c != '"' && *c != '\\')
                    .collect();
                // A title wrapped over comment lines: its words, one space apart.
                let title = raw
                    .split_whitespace()
                    .filter(|w| !w.chars().all(|c| c == '/' || c == '!' || c == '#'))
                    .collect::<Vec<_>>()
                    .join(" ");
                if !title.is_empty() && !is_section(&title) {
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
