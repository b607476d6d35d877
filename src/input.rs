//! Records from CSV and JSONL files, read the same way by every command (`classify`,
//! `labels import`, `eval --labels`): a byte-order mark is dropped, and a row that cannot be
//! read — an unclosed quote, more or fewer cells than the header, a line that is not a JSON
//! object — is an error naming its line, never a row silently merged, cut or dropped.
//!
//! A line ends at LF, CRLF or a lone CR, and bytes that are not UTF-8 are named by line, column
//! and value with the fix ([`text`]): a file read whole is refused at its first such byte, a
//! JSONL line holding one is a row that cannot be read.
//!
//! A row is a JSON object whatever the format, so each command deserialises its own type from
//! it. CSV cells are strings, trimmed; an empty cell is absent.

mod text;

use std::io::BufRead;
use std::path::Path;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::bounds::{error_text, excerpt};
pub use text::{utf8, NotUtf8};

/// A file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
}

impl Format {
    /// The format a file's extension names (`.csv`; `.jsonl`, `.ndjson`).
    pub fn of_path(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?;
        if extension.eq_ignore_ascii_case("csv") {
            Some(Self::Csv)
        } else if extension.eq_ignore_ascii_case("jsonl")
            || extension.eq_ignore_ascii_case("ndjson")
        {
            Some(Self::Jsonl)
        } else {
            None
        }
    }
}

/// A row that cannot be read, with its line (from 1).
#[derive(Debug, Clone, PartialEq, Error)]
#[error("line {line}: {message}")]
pub struct RowError {
    pub line: usize,
    pub message: String,
}

impl RowError {
    /// The message is bounded as every error text is ([`error_text`]): serde_json's quote the
    /// cell they refuse.
    pub fn new(line: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            message: error_text(message),
        }
    }
}

impl From<NotUtf8> for RowError {
    fn from(error: NotUtf8) -> Self {
        Self::new(error.line, error.to_string())
    }
}

/// A whole file's bytes as text, or an error at the line of its first byte that is not UTF-8.
pub fn text_of(bytes: &[u8]) -> Result<&str, RowError> {
    Ok(utf8(bytes)?)
}

/// One record: its first line, and its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub line: usize,
    pub fields: Map<String, Value>,
}

impl Row {
    /// The row as `T`, or an error naming its line.
    pub fn parse<T: serde::de::DeserializeOwned>(self) -> Result<T, RowError> {
        serde_json::from_value(Value::Object(self.fields))
            .map_err(|e| RowError::new(self.line, e.to_string()))
    }
}

/// A CSV file read whole: its header's columns and its rows in order (each read or not).
#[derive(Debug, Clone, PartialEq)]
pub struct Csv {
    pub columns: Vec<String>,
    pub rows: Vec<Result<Row, RowError>>,
}

/// Read CSV text with a header line. No header at all (an empty file) is an error.
pub fn csv(text: &str) -> Result<Csv, RowError> {
    // The reader ends a record at a lone CR too, but counts lines at line feeds only.
    let text = text::with_line_feeds(without_bom(text));
    let text = text.as_ref();
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(text.as_bytes());
    let columns: Vec<String> = reader
        .headers()
        .map_err(|e| RowError::new(1, e.to_string()))?
        .iter()
        .map(str::to_string)
        .collect();
    if unclosed_quote(text) == Some(1) {
        return Err(RowError::new(
            1,
            "a quote opens a column name here and is never closed",
        ));
    }
    if columns.iter().all(String::is_empty) {
        return Err(RowError::new(
            1,
            "empty: a header line naming the columns is needed",
        ));
    }
    if let Some(twice) = columns
        .iter()
        .enumerate()
        .find(|(i, c)| columns[..*i].contains(c))
        .map(|(_, c)| c)
    {
        return Err(RowError::new(
            1,
            format!("column {} is named twice", excerpt(twice)),
        ));
    }
    let mut rows: Vec<Result<Row, RowError>> = reader
        .records()
        .map(|record| match record {
            Ok(record) => {
                let line = record.position().map_or(0, |p| p.line() as usize);
                cells(&columns, &record, line)
            }
            Err(error) => Err(RowError::new(
                error.position().map_or(0, |p| p.line() as usize),
                error.to_string(),
            )),
        })
        .collect();
    if let Some(opened) = unclosed_quote(text) {
        // The last record took the rest of the file as one cell: say where the quote opened.
        rows.pop();
        rows.push(Err(RowError::new(
            opened,
            "a quote opens a cell here and is never closed: the rest of the file would be \
             read as that one cell",
        )));
    }
    Ok(Csv { columns, rows })
}

/// A record's cells by column, or an error when it has more or fewer than the header.
fn cells(columns: &[String], record: &csv::StringRecord, line: usize) -> Result<Row, RowError> {
    if record.len() != columns.len() {
        let more = if record.len() > columns.len() {
            "more"
        } else {
            "fewer"
        };
        return Err(RowError::new(
            line,
            format!(
                "{} cells, {more} than the header's {} columns (a comma inside a cell needs \
                 quotes around the cell)",
                record.len(),
                columns.len()
            ),
        ));
    }
    let fields = columns
        .iter()
        .zip(record.iter())
        .filter(|(_, cell)| !cell.is_empty())
        .map(|(column, cell)| (column.clone(), Value::String(cell.to_string())))
        .collect();
    Ok(Row { line, fields })
}

/// The line where a quoted cell opens that is never closed, if one is. Mirrors the reader's
/// rule: a quote quotes a cell only as the cell's first character (not after a space); one
/// inside an unquoted cell is a plain character (`27" screen`).
fn unclosed_quote(text: &str) -> Option<usize> {
    let (mut line, mut opened_at) = (1, None);
    let mut at_cell_start = true;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (opened_at, c) {
            (Some(_), '"') if chars.peek() == Some(&'"') => {
                chars.next();
            }
            (Some(_), '"') => opened_at = None,
            (None, '"') if at_cell_start => opened_at = Some(line),
            // A lone carriage return ends a record too, as the reader takes it.
            (None, ',' | '\n' | '\r') => at_cell_start = true,
            (None, _) => at_cell_start = false,
            (Some(_), _) => {}
        }
        if c == '\n' {
            line += 1;
        }
    }
    opened_at
}

/// JSONL: one JSON object per non-empty line.
pub struct JsonLines<R> {
    lines: text::Lines<R>,
    line: usize,
}

/// The rows of JSONL read from `reader` as they arrive (stdin is read line by line).
pub fn json_lines<R: BufRead>(reader: R) -> JsonLines<R> {
    JsonLines {
        lines: text::Lines::new(reader),
        line: 0,
    }
}

impl<R: BufRead> Iterator for JsonLines<R> {
    type Item = Result<Row, RowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let bytes = self.lines.next()?;
            self.line += 1;
            let bytes = match bytes {
                Ok(bytes) => bytes,
                Err(error) => {
                    return Some(Err(RowError::new(
                        self.line,
                        format!("cannot read: {error}"),
                    )))
                }
            };
            let text = match utf8(&bytes) {
                Ok(text) => text,
                Err(error) => return Some(Err(RowError::new(self.line, error.to_string()))),
            };
            let text = if self.line == 1 {
                without_bom(text)
            } else {
                text
            };
            if text.trim().is_empty() {
                continue;
            }
            return Some(match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(fields)) => Ok(Row {
                    line: self.line,
                    fields,
                }),
                Ok(_) => Err(RowError::new(self.line, "not a JSON object")),
                Err(error) => Err(RowError::new(self.line, format!("not JSON: {error}"))),
            });
        }
    }
}

/// Spreadsheets often save UTF-8 with a byte-order mark, which would become part of the first
/// column's name.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_rows(csv: &Csv) -> Vec<(usize, String)> {
        csv.rows
            .iter()
            .map(|r| {
                let row = r.as_ref().expect("row");
                (row.line, Value::Object(row.fields.clone()).to_string())
            })
            .collect()
    }

    #[test]
    fn reads_a_header_and_rows_with_a_bom_and_quotes() {
        let read = csv(
            "\u{feff}label,text\nbilling,\"charged, twice\"\nlogin,\"two\nlines\"\nx,27\" screen\n",
        )
        .expect("csv");
        assert_eq!(read.columns, ["label", "text"]);
        assert_eq!(
            ok_rows(&read),
            [
                (
                    2,
                    r#"{"label":"billing","text":"charged, twice"}"#.to_string()
                ),
                (3, r#"{"label":"login","text":"two\nlines"}"#.to_string()),
                (5, r#"{"label":"x","text":"27\" screen"}"#.to_string()),
            ]
        );
    }

    #[test]
    fn an_empty_cell_is_absent() {
        let read = csv("label,name\nbilling,\n").expect("csv");
        assert_eq!(ok_rows(&read), [(2, r#"{"label":"billing"}"#.to_string())]);
    }

    #[test]
    fn an_unclosed_quote_is_an_error_at_the_line_it_opens() {
        let read = csv("label,text\na,fine\nb,\"never closed\nc,swallowed\nd,too\n").expect("csv");
        assert!(read.rows[0].is_ok());
        assert_eq!(read.rows.len(), 2);
        let error = read.rows[1].clone().expect_err("unclosed");
        assert_eq!(error.line, 3);
        assert!(error.message.contains("never closed"), "{error}");
    }

    #[test]
    fn an_unclosed_quote_in_the_header_is_said_as_such() {
        let error = csv("\"label,text\na,b\n").expect_err("header");
        assert_eq!(error.line, 1);
        assert!(error.message.contains("never closed"), "{error}");
    }

    #[test]
    fn a_lone_carriage_return_ends_a_record_as_the_reader_takes_it() {
        let read = csv("label,text\ra,\"quoted\"\rb,c\r").expect("csv");
        assert_eq!(read.rows.len(), 2);
        assert!(read.rows.iter().all(Result::is_ok), "{:?}", read.rows);
    }

    #[test]
    fn ragged_rows_are_errors_with_their_line() {
        let read = csv("label,text\na,b,c\nd\ne,f\n").expect("csv");
        let lines: Vec<_> = read
            .rows
            .iter()
            .map(|r| {
                r.as_ref()
                    .map(|row| row.line)
                    .map_err(|e| (e.line, e.message.clone()))
            })
            .collect();
        assert!(
            matches!(&lines[0], Err((2, m)) if m.contains("3 cells, more")),
            "{lines:?}"
        );
        assert!(
            matches!(&lines[1], Err((3, m)) if m.contains("1 cells, fewer")),
            "{lines:?}"
        );
        assert_eq!(lines[2], Ok(4));
    }

    #[test]
    fn an_empty_file_or_a_repeated_column_is_refused() {
        assert!(csv("").is_err());
        assert!(csv("\u{feff}").is_err());
        let twice = csv("text,text\na,b\n").expect_err("twice");
        assert!(twice.message.contains("named twice"), "{twice}");
    }

    #[test]
    fn json_lines_skip_blank_lines_and_name_bad_ones() {
        let input = "\u{feff}{\"id\":\"a\"}\n\n[1]\nnot json\n{\"id\":\"b\"}\n";
        let rows: Vec<_> = json_lines(input.as_bytes()).collect();
        assert_eq!(rows[0].as_ref().map(|r| r.line), Ok(1));
        assert_eq!(rows[1].as_ref().map_err(|e| e.line), Err(3));
        assert_eq!(rows[2].as_ref().map_err(|e| e.line), Err(4));
        assert_eq!(rows[3].as_ref().map(|r| r.line), Ok(5));
    }

    #[test]
    fn formats_come_from_extensions() {
        assert_eq!(Format::of_path(Path::new("a/b.CSV")), Some(Format::Csv));
        assert_eq!(Format::of_path(Path::new("b.ndjson")), Some(Format::Jsonl));
        assert_eq!(Format::of_path(Path::new("b.txt")), None);
    }
}
