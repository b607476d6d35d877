//! `gorag eval --out-of-scope`: texts that fit none of the dataset's classes, to measure the
//! no-match rule on.

use std::path::Path;

use anyhow::{bail, Result};

/// The `text` column of a CSV file; an error names the first unreadable row.
pub fn read_texts(path: &Path) -> Result<Vec<String>> {
    let bytes = std::fs::read(path)?;
    let csv = crate::input::csv(crate::input::text_of(&bytes)?)?;
    if !csv.columns.iter().any(|c| c == "text") {
        bail!("no `text` column (a CSV with a header naming it is needed)");
    }
    let mut texts = Vec::with_capacity(csv.rows.len());
    for row in csv.rows {
        let row = row?;
        let line = row.line;
        match row.fields.get("text").and_then(|t| t.as_str()) {
            Some(text) if !text.trim().is_empty() => texts.push(text.to_string()),
            _ => bail!("line {line}: an empty text"),
        }
    }
    if texts.is_empty() {
        bail!("no texts");
    }
    Ok(texts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_s_out_of_scope_set_reads_and_a_bad_file_says_why() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/out-of-scope/texts.csv");
        let texts = read_texts(&path).unwrap_or_default();
        assert!(texts.len() >= 60, "{}", texts.len());
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let bad = dir.path().join("bad.csv");
        std::fs::write(&bad, "id,body\n1,hello\n").unwrap_or_else(|e| panic!("{e}"));
        let error = read_texts(&bad).map_or_else(|e| e.to_string(), |_| String::new());
        assert!(error.contains("no `text` column"), "{error}");
    }
}
