//! A record's place in a topic.

/// A partition and an offset in it: where a record is, or (in commits and watermarks) the next
/// offset to read. Ordered by partition, then offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub partition: i32,
    pub offset: i64,
}

impl Position {
    pub fn new(partition: i32, offset: i64) -> Self {
        Self { partition, offset }
    }
}
