//! The texts `gorag classify` reads, as items in input order: a text event or a label event
//! (JSONL may carry rounds between texts), each as the bytes its topic's record would hold, or
//! a line that cannot be used. Read on a thread of its own, so stdin is classified as it comes.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::input::{self, Format, Row, RowError};

/// One thing read.
#[derive(Debug)]
pub enum Item {
    /// A text event's JSON (the texts topic's record), and its line.
    Text { line: usize, json: Vec<u8> },
    /// A label event's JSON (the labels topic's record), and its line.
    Label { line: usize, json: Vec<u8> },
    /// A line that cannot be used.
    Unreadable(RowError),
}

/// Where the texts come from.
#[derive(Debug, Clone)]
pub struct TextsInput {
    /// None: stdin.
    pub path: Option<PathBuf>,
    pub format: Format,
}

impl TextsInput {
    /// `path` (None or `-`: stdin) in `format`, else the one its extension names (stdin: JSONL).
    pub fn new(path: Option<PathBuf>, format: Option<Format>) -> Result<Self> {
        let path = path.filter(|p| p.as_os_str() != "-");
        let format = match (format, &path) {
            (Some(format), _) => format,
            (None, None) => Format::Jsonl,
            (None, Some(path)) => match Format::of_path(path) {
                Some(format) => format,
                None => bail!(
                    "{}: cannot tell the format from the extension; pass --format csv or \
                     --format jsonl",
                    path.display()
                ),
            },
        };
        Ok(Self { path, format })
    }

    /// How predictions name it (`input.topic`).
    pub fn name(&self) -> String {
        self.path
            .as_deref()
            .map_or("stdin".to_string(), |p| p.display().to_string())
    }

    /// Start reading: the items arrive on the receiver, in order. A CSV file's header is
    /// checked before anything is sent (an error here stops the command at once).
    pub fn read(&self) -> Result<mpsc::Receiver<Item>> {
        let (sender, receiver) = mpsc::channel(64);
        match self.format {
            Format::Csv => {
                let text = self.whole_text()?;
                let read =
                    input::csv(&text).map_err(|e| anyhow::anyhow!("{}: {e}", self.name()))?;
                if !read.columns.iter().any(|c| c == "text") {
                    bail!(
                        "{}: no `text` column (the columns are {}); a texts CSV has `text`, and \
                         optionally `id` and `gold_label`",
                        self.name(),
                        read.columns.join(", ")
                    );
                }
                std::thread::spawn(move || {
                    for row in read.rows {
                        let item = row.and_then(csv_text);
                        if sender.blocking_send(item_of(item, false)).is_err() {
                            return;
                        }
                    }
                });
            }
            Format::Jsonl => {
                let reader = self.reader()?;
                std::thread::spawn(move || {
                    for row in input::json_lines(reader) {
                        let item = row.map(|row| {
                            let is_label = row.fields.contains_key("type");
                            (row, is_label)
                        });
                        let item = match item {
                            Ok((row, is_label)) => item_of(Ok(row), is_label),
                            Err(error) => Item::Unreadable(error),
                        };
                        if sender.blocking_send(item).is_err() {
                            return;
                        }
                    }
                });
            }
        }
        Ok(receiver)
    }

    fn reader(&self) -> Result<Box<dyn BufRead + Send>> {
        Ok(match &self.path {
            None => Box::new(std::io::BufReader::new(std::io::stdin())),
            Some(path) => Box::new(std::io::BufReader::new(open(path)?)),
        })
    }

    /// A CSV is read whole (a quoted cell may span lines), and so is checked whole: bytes that
    /// are not UTF-8 stop the run before any text is classified (a file in another encoding
    /// has them on many lines; classifying the rest would learn texts the corrected file
    /// teaches again).
    fn whole_text(&self) -> Result<String> {
        let mut bytes = Vec::new();
        self.reader()?
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {}", self.name()))?;
        if let Err(error) = input::text_of(&bytes) {
            bail!("{}: {error}; nothing was classified", self.name());
        }
        String::from_utf8(bytes).with_context(|| format!("reading {}", self.name()))
    }
}

impl TextsInput {
    /// The texts of the ids in `wanted` that this file holds (a corrections file's rows without
    /// a `text`). Not stdin: it is read again to be classified.
    pub fn texts_of(
        &self,
        wanted: &std::collections::HashSet<String>,
    ) -> Result<std::collections::HashMap<String, String>> {
        if self.path.is_none() {
            bail!(
                "the corrections name texts without their `text`, and the texts come from \
                 stdin: give the texts as a file, or a `text` column in the corrections"
            );
        }
        let rows: Box<dyn Iterator<Item = Result<Row, RowError>>> = match self.format {
            Format::Csv => {
                let text = self.whole_text()?;
                let read =
                    input::csv(&text).map_err(|e| anyhow::anyhow!("{}: {e}", self.name()))?;
                Box::new(read.rows.into_iter().map(|r| r.and_then(csv_text)))
            }
            // Line by line: only the wanted texts are kept.
            Format::Jsonl => Box::new(input::json_lines(self.reader()?)),
        };
        let mut found = std::collections::HashMap::new();
        for row in rows.flatten() {
            let field = |name: &str| row.fields.get(name).and_then(Value::as_str);
            if let (Some(id), Some(text)) = (field("id"), field("text")) {
                if wanted.contains(id) {
                    found.insert(id.to_string(), text.to_string());
                }
            }
        }
        Ok(found)
    }
}

fn open(path: &Path) -> Result<std::fs::File> {
    std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))
}

fn item_of(row: Result<Row, RowError>, is_label: bool) -> Item {
    match row {
        Err(error) => Item::Unreadable(error),
        Ok(row) => {
            let line = row.line;
            let json = Value::Object(row.fields).to_string().into_bytes();
            if is_label {
                Item::Label { line, json }
            } else {
                Item::Text { line, json }
            }
        }
    }
}

/// A CSV row as a text event: `id` (else `line-N`), `text`, `gold_label` (or `label`); every
/// other cell goes to `metadata`, which the prediction carries.
fn csv_text(row: Row) -> Result<Row, RowError> {
    let Row { line, mut fields } = row;
    if fields.contains_key("gold_label") && fields.contains_key("label") {
        return Err(RowError::new(
            line,
            "both `gold_label` and `label` given: they mean the same (the text's true label)",
        ));
    }
    let mut event = Map::new();
    let id = fields
        .remove("id")
        .unwrap_or_else(|| Value::String(format!("line-{line}")));
    event.insert("id".into(), id);
    event.insert(
        "text".into(),
        fields
            .remove("text")
            .unwrap_or(Value::String(String::new())),
    );
    if let Some(gold) = fields
        .remove("gold_label")
        .or_else(|| fields.remove("label"))
    {
        event.insert("gold_label".into(), gold);
    }
    if !fields.is_empty() {
        event.insert("metadata".into(), Value::Object(fields));
    }
    Ok(Row {
        line,
        fields: event,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(line: usize, json: &str) -> Row {
        match serde_json::from_str(json) {
            Ok(Value::Object(fields)) => Row { line, fields },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_csv_row_becomes_a_text_event_with_the_rest_as_metadata() {
        let event = csv_text(row(
            4,
            r#"{"text":"hi","label":"billing","channel":"mail"}"#,
        ))
        .expect("row");
        assert_eq!(
            Value::Object(event.fields).to_string(),
            r#"{"gold_label":"billing","id":"line-4","metadata":{"channel":"mail"},"text":"hi"}"#
        );
        assert!(csv_text(row(2, r#"{"text":"hi","label":"a","gold_label":"b"}"#)).is_err());
    }
}
