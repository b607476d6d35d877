//! `gorag eval`'s no-match flags: the rule's thresholds (the service's `engine.no_match_*`)
//! and the out-of-scope texts to measure it on.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::engine::no_match::NoMatchConfig;

/// When a text is published with no label, and texts that fit no class to measure it on.
#[derive(Debug, Clone, Args)]
pub struct NoMatchArgs {
    /// Publish a text that nothing the labels know explains with no label (`no_match`); false
    /// gives every text a label, as before the rule.
    #[arg(help_heading = "No match", long, default_value_t = NoMatchConfig::default().enabled, action = clap::ArgAction::Set)]
    pub no_match: bool,
    /// A label matched by at most this many of the text's words is matched "by a word or two".
    #[arg(help_heading = "No match", long, default_value_t = NoMatchConfig::default().max_words)]
    pub no_match_max_words: usize,
    /// …and the text is no match when the meaning signal's similarity to it is below this.
    #[arg(help_heading = "No match", long, default_value_t = NoMatchConfig::default().min_meaning)]
    pub no_match_min_meaning: f64,
    /// …or, without the meaning signal, when its confidence is below this.
    #[arg(help_heading = "No match", long, default_value_t = NoMatchConfig::default().below_confidence)]
    pub no_match_below_confidence: f64,
    /// A CSV file of texts (a `text` column) that fit none of the dataset's classes: classified
    /// after every round, never learned from; the table gives the share published decided,
    /// needing review, with no label (examples/out-of-scope/texts.csv is the repository's).
    #[arg(help_heading = "No match", long)]
    pub out_of_scope: Option<PathBuf>,
}

impl NoMatchArgs {
    /// The rule's settings, or what is wrong with them.
    pub fn config(&self) -> Result<NoMatchConfig> {
        let config = NoMatchConfig {
            enabled: self.no_match,
            max_words: self.no_match_max_words,
            min_meaning: self.no_match_min_meaning,
            below_confidence: self.no_match_below_confidence,
        };
        if let Some(problem) = config.problem() {
            bail!("--{}", problem.replace('_', "-"));
        }
        Ok(config)
    }

    /// The out-of-scope texts (none without `--out-of-scope`).
    pub fn texts(&self) -> Result<Vec<String>> {
        match &self.out_of_scope {
            Some(path) => {
                read_texts(path).with_context(|| format!("--out-of-scope {}", path.display()))
            }
            None => Ok(Vec::new()),
        }
    }
}

/// The `text` column of a CSV file; an error names the first unreadable row.
fn read_texts(path: &Path) -> Result<Vec<String>> {
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
