//! Bytes as lines of text, the same for every file gorag reads: a line ends at a line feed, a
//! carriage return and line feed, or a lone carriage return (old Mac files, "CSV (Macintosh)"
//! from Excel), counted as an editor counts them; and bytes that are not UTF-8 are named by
//! line, column and value, with the fix.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead};

/// Text that is not UTF-8: where its first bad byte is, and how many lines hold one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotUtf8 {
    /// The line (from 1) and column (in characters, from 1) of the first bad byte.
    pub line: usize,
    pub column: usize,
    pub byte: u8,
    /// Lines holding at least one bad byte (1 when a single line was checked).
    pub lines: usize,
    /// The text starts with UTF-16's byte-order mark.
    pub utf16: bool,
}

impl fmt::Display for NotUtf8 {
    /// Without the line: the caller's error names it (see [`super::RowError`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not UTF-8 (byte 0x{:02X} at column {}",
            self.byte, self.column
        )?;
        if self.lines > 1 {
            write!(f, "; {} lines hold such bytes", self.lines)?;
        }
        let (encoding, hint) = if self.utf16 {
            ("UTF-16", "the file is UTF-16 (Excel's \"Unicode Text\")")
        } else {
            (
                "WINDOWS-1252",
                "it is likely Windows-1252 or Latin-1, as Excel and older tools save",
            )
        };
        write!(
            f,
            "): {hint}; save it as UTF-8 (a spreadsheet: \"CSV UTF-8\"), e.g. \
             `iconv -f {encoding} -t UTF-8 old.csv > new.csv`"
        )
    }
}

impl std::error::Error for NotUtf8 {}

/// `bytes` as text, or where the first byte that is not UTF-8 is (one pass over the bytes).
pub fn utf8(bytes: &[u8]) -> Result<&str, NotUtf8> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(text);
    }
    let (mut line, mut at, mut first, mut lines, mut last_bad_line) = (1, 0, None, 0, 0);
    // Each check stops at the next bad sequence, which holds no line end (ASCII never is one).
    while let Err(error) = std::str::from_utf8(&bytes[at..]) {
        let bad = at + error.valid_up_to();
        line += line_ends(&bytes[at..bad]);
        first.get_or_insert((line, bad));
        if last_bad_line != line {
            lines += 1;
            last_bad_line = line;
        }
        at = bad + error.error_len().unwrap_or(bytes.len() - bad);
    }
    let (line, bad) = first.unwrap_or((1, 0));
    // Before the first bad byte all is UTF-8: the column counts its line's characters.
    let line_start = bytes[..bad]
        .iter()
        .rposition(|b| *b == b'\n' || *b == b'\r')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&bytes[line_start..bad])
        .chars()
        .count()
        + 1;
    Err(NotUtf8 {
        line,
        column,
        byte: bytes.get(bad).copied().unwrap_or_default(),
        lines,
        utf16: bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]),
    })
}

/// How many lines end in `bytes`: at LF, CRLF, or a lone CR (one at the end counts: what
/// follows it is not a line feed).
fn line_ends(bytes: &[u8]) -> usize {
    let mut ends = 0;
    let mut bytes = bytes.iter().peekable();
    while let Some(byte) = bytes.next() {
        match byte {
            b'\n' => ends += 1,
            b'\r' if bytes.peek() == Some(&&b'\n') => {}
            b'\r' => ends += 1,
            _ => {}
        }
    }
    ends
}

/// `text` with every lone carriage return made a line feed, so that a reader that ends lines
/// at line feeds (and counts them) sees the lines an editor shows.
pub fn with_line_feeds(text: &str) -> Cow<'_, str> {
    let lone_cr = |at: usize| text.as_bytes().get(at + 1) != Some(&b'\n');
    if !text.match_indices('\r').any(|(at, _)| lone_cr(at)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        out.push(if c == '\r' && lone_cr(at) { '\n' } else { c });
    }
    Cow::Owned(out)
}

/// The lines of a stream as bytes, as they arrive, without their line ends.
pub struct Lines<R> {
    reader: R,
    /// The last line ended at a carriage return: a line feed right after it belongs to it.
    after_cr: bool,
    /// A read failed: the stream ends there (a failing disk would fail again and again).
    failed: bool,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            after_cr: false,
            failed: false,
        }
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let mut line = Vec::new();
        loop {
            let buffer = match self.reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    self.failed = true;
                    return Some(Err(error));
                }
            };
            if buffer.is_empty() {
                return (!line.is_empty()).then_some(Ok(line));
            }
            if std::mem::take(&mut self.after_cr) && buffer[0] == b'\n' {
                self.reader.consume(1);
                continue;
            }
            match buffer.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(end) => {
                    line.extend_from_slice(&buffer[..end]);
                    self.after_cr = buffer[end] == b'\r';
                    self.reader.consume(end + 1);
                    return Some(Ok(line));
                }
                None => {
                    let all = buffer.len();
                    line.extend_from_slice(buffer);
                    self.reader.consume(all);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8], capacity: usize) -> Vec<String> {
        Lines::new(io::BufReader::with_capacity(capacity, bytes))
            .map(|line| String::from_utf8(line.expect("read")).expect("utf-8"))
            .collect()
    }

    #[test]
    fn a_line_ends_at_lf_crlf_or_a_lone_cr_wherever_the_buffer_splits_it() {
        let input = b"a\nb\r\nc\rd\r\re\n\nf";
        // A one-byte buffer puts every CR and LF of a CRLF in different reads.
        for capacity in [1, 2, 3, 64] {
            assert_eq!(
                lines(input, capacity),
                ["a", "b", "c", "d", "", "e", "", "f"],
                "{capacity}"
            );
        }
        assert_eq!(lines(b"x\r\n", 1), ["x"]);
        assert!(lines(b"", 8).is_empty());
    }

    #[test]
    fn lone_carriage_returns_become_line_feeds_and_crlf_stays() {
        assert_eq!(with_line_feeds("a\rb\r\nc\r"), "a\nb\r\nc\n");
        assert!(matches!(with_line_feeds("a\r\nb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_bad_byte_is_named_by_line_column_and_value_with_the_fix() {
        assert_eq!(utf8("héllo\n".as_bytes()), Ok("héllo\n"));
        // Latin-1 "café" on line 3 (a CR-only line end and a CRLF before it), then another on 4.
        let bytes = b"id,text\r1,ok\r\n2,caf\xE9 cr\xE8me\n3,\xE0 la\n";
        let error = utf8(bytes).expect_err("latin-1");
        assert_eq!((error.line, error.column, error.byte), (3, 6, 0xE9));
        assert_eq!(error.lines, 2);
        let text = error.to_string();
        assert!(
            text.starts_with("not UTF-8 (byte 0xE9 at column 6; 2 lines"),
            "{text}"
        );
        assert!(text.contains("iconv -f WINDOWS-1252 -t UTF-8"), "{text}");
        // The column counts characters, not bytes.
        let error = utf8(b"\xC3\xA9\xC3\xA9\xFF").expect_err("bad");
        assert_eq!((error.line, error.column, error.lines), (1, 3, 1));
    }

    #[test]
    fn utf16_is_named_as_such() {
        let error = utf8(b"\xFF\xFEt\0e\0").expect_err("utf-16");
        assert!(error.utf16);
        assert!(error.to_string().contains("iconv -f UTF-16"), "{error}");
    }
}
