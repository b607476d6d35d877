//! The wall clock, in the one unit the topics' timestamps use.

/// Milliseconds since the Unix epoch (0 on a clock set before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
