//! Where a saved state left off on each input: per topic and partition, the next offset to
//! read, saved in the same batch as the updates those records made.

use std::collections::BTreeMap;

use crate::position::Position;

/// The next position to read, per topic and partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offsets(BTreeMap<(String, i32), i64>);

impl Offsets {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `next` is the next position to read in `topic`.
    pub fn set_next(&mut self, topic: &str, next: Position) {
        self.0
            .insert((topic.to_string(), next.partition), next.offset);
    }

    /// The next offset to read in `topic`'s `partition`, if one was saved.
    pub fn next(&self, topic: &str, partition: i32) -> Option<i64> {
        self.0.get(&(topic.to_string(), partition)).copied()
    }

    /// The next positions to read in `topic`, by partition.
    pub fn of_topic<'a>(&'a self, topic: &'a str) -> impl Iterator<Item = Position> + 'a {
        self.iter()
            .filter(move |(of, _)| *of == topic)
            .map(|(_, next)| next)
    }

    /// Every topic's next positions.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Position)> {
        self.0.iter().map(|((topic, partition), offset)| {
            (topic.as_str(), Position::new(*partition, *offset))
        })
    }

    /// Take `newer`'s positions over these.
    pub fn update(&mut self, newer: &Offsets) {
        for (topic, next) in newer.iter() {
            self.set_next(topic, next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_kept_per_topic_and_partition_and_the_newer_wins() {
        let mut saved = Offsets::new();
        saved.set_next("texts", Position::new(0, 5));
        saved.set_next("texts", Position::new(1, 7));
        saved.set_next("labels", Position::new(0, 2));
        let mut newer = Offsets::new();
        newer.set_next("texts", Position::new(1, 9));
        saved.update(&newer);
        assert_eq!(saved.next("texts", 1), Some(9));
        assert_eq!(saved.next("texts", 0), Some(5));
        assert_eq!(saved.next("texts", 2), None);
        let texts: Vec<_> = saved.of_topic("texts").collect();
        assert_eq!(texts, [Position::new(0, 5), Position::new(1, 9)]);
        assert_eq!(saved.iter().count(), 3);
    }
}
