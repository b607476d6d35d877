//! A record's place in a topic: at the floor, since the broker seam, the changelog's learn
//! records and the store's saved offsets all speak of it.

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

    /// The place after this one in its partition: the next to read once this record is done.
    pub fn after(self) -> Self {
        Self::new(self.partition, self.offset + 1)
    }
}
