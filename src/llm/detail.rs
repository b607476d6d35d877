//! How much of what an endpoint sent an error keeps.

/// Longest detail an error keeps of what the endpoint sent (its error message, a parser's
/// complaint quoting the body), in characters: enough to read, too short to flood a log line or
/// a prediction's `llm_error`.
pub const MAX_DETAIL_CHARS: usize = 512;

/// `text` cut to [`MAX_DETAIL_CHARS`] characters.
pub fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
