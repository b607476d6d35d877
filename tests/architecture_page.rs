//! The architecture page cannot drift from the tree (docs/design/architecture.md, "The source
//! tree, folder by folder"): it has a section for every folder under `src/` and names every
//! top-level file, every source path it names exists (a bare `file.rs` under a folder's section
//! is looked for in that folder, or a folder the section names), and every `Type::method` it names is a type and a function of
//! the source.

use std::path::{Path, PathBuf};

const PAGE: &str = "docs/design/architecture.md";

fn page() -> String {
    std::fs::read_to_string(PAGE).expect("the architecture page")
}

/// The backticked spans of `text`.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Every file and folder under `dir`, relative to the repository.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable folder").flatten() {
        let path = entry.path();
        out.push(path.clone());
        if path.is_dir() {
            walk(&path, out);
        }
    }
}

/// (heading, body) of each `###` section of the source tree's part of the page.
fn folder_sections(page: &str) -> Vec<(String, String)> {
    let tree = page
        .split("## The source tree, folder by folder")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the page has its source tree");
    tree.split("\n### ")
        .skip(1)
        .map(|section| {
            let (heading, body) = section.split_once('\n').unwrap_or((section, ""));
            (heading.to_string(), body.to_string())
        })
        .collect()
}

#[test]
fn every_folder_has_its_section_and_every_top_level_file_is_named() {
    let page = page();
    let headings: Vec<String> = folder_sections(&page).into_iter().map(|(h, _)| h).collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir("src").expect("src").flatten() {
        let path = entry.path();
        let name = path.display().to_string();
        if path.is_dir() {
            let named = format!("`{name}/`");
            if !headings.iter().any(|h| h.contains(&named)) {
                missing.push(format!("no section headed {named}"));
            }
        } else if !page.contains(&format!("`{name}`"))
            && !page.contains(&format!("`{}`", name.trim_start_matches("src/")))
        {
            missing.push(format!("{name} is not named"));
        }
    }
    assert!(missing.is_empty(), "{PAGE}:\n{}", missing.join("\n"));
}

#[test]
fn every_path_the_page_names_exists() {
    let page = page();
    let mut files = Vec::new();
    walk(Path::new("src"), &mut files);
    let mut absent = Vec::new();
    for span in spans(&page) {
        let path = span.trim_end_matches('/');
        if span.starts_with("src/") && !Path::new(path).exists() {
            absent.push(span.to_string());
        }
    }
    for (heading, body) in folder_sections(&page) {
        // The heading's folders, and any folder the section names before its files.
        let folders: Vec<&str> = spans(&heading)
            .into_iter()
            .chain(spans(&body))
            .filter(|s| s.starts_with("src/") && s.ends_with('/'))
            .collect();
        if folders.is_empty() {
            continue;
        }
        for span in spans(&body) {
            // `text.rs`/`terms.rs` are written as one span: each is a name.
            for name in span.split('/').filter(|n| n.ends_with(".rs")) {
                if name.contains(' ') || span.starts_with("src/") || span.starts_with("tests/") {
                    continue;
                }
                let found = files.iter().any(|file| {
                    folders.iter().any(|folder| file.starts_with(folder))
                        && file.file_name().is_some_and(|f| f == name)
                });
                if !found {
                    absent.push(format!("{name} (under {folders:?})"));
                }
            }
        }
    }
    assert!(
        absent.is_empty(),
        "{PAGE} names what is not there:\n{}",
        absent.join("\n")
    );
}

#[test]
fn every_method_the_page_names_exists() {
    let page = page();
    let mut files = Vec::new();
    walk(Path::new("src"), &mut files);
    let source: String = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect();
    let mut absent = Vec::new();
    for span in spans(&page) {
        let Some((owner, method)) = span.split_once("::") else {
            continue;
        };
        let is_type = owner.starts_with(|c: char| c.is_ascii_uppercase())
            && owner.chars().all(|c| c.is_ascii_alphanumeric());
        let is_fn = !method.is_empty()
            && method
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit());
        if !(is_type && is_fn) {
            continue;
        }
        let type_defined = ["struct", "enum", "trait"]
            .iter()
            .any(|kind| source.contains(&format!("{kind} {owner}")));
        let fn_defined =
            source.contains(&format!("fn {method}(")) || source.contains(&format!("fn {method}<"));
        if !(type_defined && fn_defined) {
            absent.push(span.to_string());
        }
    }
    assert!(
        absent.is_empty(),
        "{PAGE} names methods that are not there:\n{}",
        absent.join("\n")
    );
}
