//! Reading a source file's blocks without a parser: the code with comments and literals cut,
//! and a walk over its braces that gives each block a frame made from its header. The wide-types
//! and metric-update facts read files this way.

/// The code of a file with comments, strings and character literals cut, so that braces
/// count blocks only.
pub(super) fn blocks_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut at) = (String::new(), 0);
    let ahead = |at: usize, s: &str| {
        s.chars()
            .enumerate()
            .all(|(i, c)| chars.get(at + i) == Some(&c))
    };
    while at < chars.len() {
        if ahead(at, "//") {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if ahead(at, "/*") {
            at += 2;
            while at < chars.len() && !ahead(at, "*/") {
                at += 1;
            }
            at += 2;
        } else if ahead(at, "r#\"") {
            at += 3;
            while at < chars.len() && !ahead(at, "\"#") {
                at += 1;
            }
            at += 2;
        } else if chars[at] == '"' {
            at += 1;
            while at < chars.len() && chars[at] != '"' {
                at += if chars[at] == '\\' { 2 } else { 1 };
            }
            at += 1;
        } else if chars[at] == '\'' && (ahead(at + 2, "'") || ahead(at + 1, "\\")) {
            // A character literal (a lifetime has no closing quote).
            at += if chars[at + 1] == '\\' { 3 } else { 2 };
            while at < chars.len() && chars[at] != '\'' {
                at += 1;
            }
            at += 1;
        } else {
            out.push(chars[at]);
            at += 1;
        }
    }
    out
}

/// Walks `code` (as [`blocks_only`] leaves it) block by block: at each `{`, `open` makes the
/// block's frame from its header (the text since the last `{`, `}` or `;`) and the frames of the
/// blocks around it; `visit` sees every position with the frames open there.
pub(super) fn walk_blocks<F>(
    code: &str,
    mut open: impl FnMut(&str, &[F]) -> F,
    mut visit: impl FnMut(usize, &[F]),
) {
    let mut frames: Vec<F> = Vec::new();
    let mut header_from = 0;
    for (at, c) in code.char_indices() {
        match c {
            '{' => {
                let frame = open(&code[header_from..at], &frames);
                frames.push(frame);
                header_from = at + 1;
            }
            '}' => {
                frames.pop();
                header_from = at + 1;
            }
            ';' => header_from = at + 1,
            _ => {}
        }
        visit(at, &frames);
    }
}

#[test]
fn comments_and_literals_are_cut_and_blocks_are_walked_with_their_headers() {
    assert_eq!(
        blocks_only("let s = \"{//\"; // {\nlet c = '}'; /* { */ f::<'a>('\\'')"),
        "let s = ; \nlet c = ;  f::<'a>()"
    );
    let mut headers = Vec::new();
    let mut deepest = 0;
    walk_blocks(
        "mod a { fn b() { x; } } impl C {}",
        |header, frames: &[usize]| {
            headers.push(header.trim().to_string());
            frames.len() + 1
        },
        |_, frames| deepest = deepest.max(frames.last().copied().unwrap_or(0)),
    );
    assert_eq!(headers, ["mod a", "fn b()", "impl C"]);
    assert_eq!(deepest, 2);
}
