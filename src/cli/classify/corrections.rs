//! `gorag classify --corrections FILE`: reviewers' answers for texts a classify state has seen,
//! from a CSV (`id,label[,audit][,text]`), applied as the labels topic's `correct` events are.
//! Every row is checked before any is applied, and every problem said at once with its line.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use anyhow::{bail, Result};
use serde::Deserialize;

use super::texts::TextsInput;
use crate::bounds::excerpt;
use crate::classify::{Correction, Session};
use crate::input;

/// The label cell that says no active label fits the text.
pub const NONE_OF_THESE: &str = "none_of_these";

const COLUMNS: [&str; 4] = ["id", "label", "audit", "text"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    #[serde(default)]
    id: String,
    #[serde(default)]
    label: String,
    #[serde(default)]
    audit: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// What applying a corrections file did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub applied: usize,
    /// Given the same answer before (a corrections file given again).
    pub repeated: usize,
}

/// Read `path`, check every row against `session`'s active labels and find each text (its
/// `text` cell, else the row of the same id in `texts`), then apply them in file order.
pub async fn apply(path: &Path, texts: &TextsInput, session: &mut Session) -> Result<Applied> {
    let name = path.display().to_string();
    let text = super::super::labels::read_text_file(path)?;
    let read = input::csv(&text).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let unknown: Vec<&String> = read
        .columns
        .iter()
        .filter(|c| !COLUMNS.contains(&c.as_str()))
        .collect();
    if !unknown.is_empty()
        || !["id", "label"]
            .iter()
            .all(|c| read.columns.iter().any(|k| k == c))
    {
        bail!(
            "{name}: a corrections file has the columns id and label, and optionally audit and \
             text (found: {})",
            read.columns.join(", ")
        );
    }
    let active: BTreeSet<String> = session
        .engine()
        .labels()
        .active()
        .map(|l| l.id.clone())
        .collect();
    let mut errors = Vec::new();
    let mut rows = Vec::new();
    let mut first_line: std::collections::HashMap<String, usize> = Default::default();
    for row in read.rows {
        match row.and_then(|row| Ok((row.line, row.parse::<Row>()?))) {
            Ok((line, row)) => match checked(row, &active) {
                Ok(correction) => match first_line.get(&correction.text_id) {
                    Some(first) => errors.push(format!(
                        "{name}: line {line}: {} is answered on line {first} already: one \
                         answer a text",
                        excerpt(&correction.text_id)
                    )),
                    None => {
                        first_line.insert(correction.text_id.clone(), line);
                        rows.push((line, correction));
                    }
                },
                Err(problem) => errors.push(format!("{name}: line {line}: {problem}")),
            },
            Err(error) => errors.push(format!("{name}: {error}")),
        }
    }
    let missing: HashSet<String> = rows
        .iter()
        .filter(|(_, c)| c.text.is_empty())
        .map(|(_, c)| c.text_id.clone())
        .collect();
    if !missing.is_empty() {
        let found = texts.texts_of(&missing)?;
        for (line, correction) in &mut rows {
            if !correction.text.is_empty() {
                continue;
            }
            match found.get(&correction.text_id) {
                Some(text) => correction.text = text.clone(),
                None => errors.push(format!(
                    "{name}: line {line}: text {} is in neither this file's `text` column nor {}",
                    excerpt(&correction.text_id),
                    texts.name()
                )),
            }
        }
    }
    // The bounds the labels topic keeps (a text's length, its id's), as the service would.
    for (line, correction) in &rows {
        if let Err(rejection) =
            crate::events::bounds::label_event(&correction.event(), session.bounds())
        {
            errors.push(format!("{name}: line {line}: {}", rejection.message));
        }
    }
    if !errors.is_empty() {
        bail!("{}\nno correction was applied", errors.join("\n"));
    }
    let mut applied = Applied::default();
    for (line, correction) in rows {
        match session.correct(correction).await {
            Ok(true) => applied.applied += 1,
            Ok(false) => applied.repeated += 1,
            Err(rejection) => bail!("{name}: line {line}: {rejection}"),
        }
    }
    session.record()?;
    Ok(applied)
}

/// A row as a correction, or what is wrong with it.
fn checked(row: Row, active: &BTreeSet<String>) -> Result<Correction, String> {
    let id = row.id.trim();
    if id.is_empty() {
        return Err("no id".into());
    }
    let label = row.label.trim();
    let label = match label {
        "" => return Err(format!("no label for {}", excerpt(id))),
        NONE_OF_THESE if active.contains(NONE_OF_THESE) => {
            return Err(format!(
                "{NONE_OF_THESE} is both an active label and the word for \"no label fits\": \
                 rename the label"
            ))
        }
        NONE_OF_THESE => None,
        label if active.contains(label) => Some(label.to_string()),
        label => {
            let listed: Vec<String> = active.iter().take(20).map(|l| excerpt(l)).collect();
            return Err(format!(
                "{} is not an active label (active: {}; {NONE_OF_THESE} says no label fits)",
                excerpt(label),
                listed.join(", ")
            ));
        }
    };
    let audit = match row.audit.as_deref().map(str::trim) {
        None | Some("" | "false" | "0" | "no") => false,
        Some("true" | "1" | "yes") => true,
        Some(other) => return Err(format!("audit is {}: write true or false", excerpt(other))),
    };
    Ok(Correction {
        text_id: id.to_string(),
        label,
        text: row.text.unwrap_or_default(),
        audit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, label: &str, audit: Option<&str>) -> Row {
        Row {
            id: id.into(),
            label: label.into(),
            audit: audit.map(str::to_string),
            text: Some("a text".into()),
        }
    }

    #[test]
    fn rows_are_checked_against_the_active_labels() {
        let active: BTreeSet<String> = ["billing".to_string()].into();
        let ok = checked(row("t1", "billing", Some("yes")), &active).expect("ok");
        assert_eq!(ok.label.as_deref(), Some("billing"));
        assert!(ok.audit);
        let none = checked(row("t2", "none_of_these", None), &active).expect("ok");
        assert_eq!(none.label, None);
        let unknown = checked(row("t3", "none", None), &active).unwrap_err();
        assert!(unknown.contains("not an active label"), "{unknown}");
        assert!(checked(row("", "billing", None), &active).is_err());
        assert!(checked(row("t4", "billing", Some("maybe")), &active).is_err());
    }
}
