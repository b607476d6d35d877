//! Group commit of online-indexing steps. While one learn record is on its way to the broker,
//! the steps of the texts finished meanwhile gather here; once it is acknowledged they go as
//! one record (or a few, under the size limit). Each text's delivery task waits to hear whether
//! its record was delivered. Pure bookkeeping: the loop sends and reports acknowledgements.

use tokio::sync::oneshot;

use crate::broker::RecordLimit;
use crate::config::ServeConfig;
use crate::state::codec::{self, LearnedText};

/// Largest learn record written with several texts in it: well under the broker's default
/// `message.max.bytes` (1 MB), so batching never makes a record the broker refuses.
const RECORD_BYTES: usize = 256 * 1024;

/// Whether a text's learn record was delivered.
pub type Learned = oneshot::Receiver<bool>;

/// One learn record to send, and the texts waiting on it.
pub struct LearnRecord {
    pub payload: Vec<u8>,
    pub waiting: Vec<oneshot::Sender<bool>>,
}

pub struct GroupCommit {
    gathered: Vec<(LearnedText, oneshot::Sender<bool>)>,
    limit: usize,
    /// Records handed over by [`GroupCommit::take`] and not yet acknowledged.
    unacked: usize,
}

impl GroupCommit {
    /// The size limit is [`RECORD_BYTES`], or half the producer's own `message.max.bytes` when
    /// the operator set it lower.
    pub fn new(config: &ServeConfig) -> Self {
        let max = RecordLimit::of(&config.broker()).bytes();
        Self::with_limit(RECORD_BYTES.min(max / 2))
    }

    fn with_limit(limit: usize) -> Self {
        Self {
            gathered: Vec::new(),
            limit,
            unacked: 0,
        }
    }

    /// Steps gathered for the next record.
    pub fn gathered(&self) -> usize {
        self.gathered.len()
    }

    pub fn gather(&mut self, text: LearnedText) -> Learned {
        let (delivered, learned) = oneshot::channel();
        self.gathered.push((text, delivered));
        learned
    }

    /// The records to send now, in order: none while one is unacknowledged. Each counts as
    /// unacknowledged until [`GroupCommit::acknowledged`].
    pub fn take(&mut self, origin: &str) -> Vec<LearnRecord> {
        if self.gathered.is_empty() || self.unacked > 0 {
            return Vec::new();
        }
        let (texts, mut waiting): (Vec<LearnedText>, Vec<_>) =
            std::mem::take(&mut self.gathered).into_iter().unzip();
        let records = match codec::learn_records(origin, &texts, self.limit) {
            Ok(records) => records,
            Err(error) => {
                // Not expected of plain data; should it happen, the texts are not learned and
                // say so (each is dead-lettered as its learn record refused).
                tracing::error!(%error, texts = texts.len(), "learn record could not be encoded");
                for text in waiting {
                    let _ = text.send(false);
                }
                return Vec::new();
            }
        };
        self.unacked += records.len();
        records
            .into_iter()
            .map(|(payload, count)| {
                let rest = waiting.split_off(count.min(waiting.len()));
                LearnRecord {
                    payload,
                    waiting: std::mem::replace(&mut waiting, rest),
                }
            })
            .collect()
    }

    /// A record handed over by [`GroupCommit::take`] was acknowledged (or refused).
    pub fn acknowledged(&mut self) {
        self.unacked = self.unacked.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Analysis;
    use crate::position::Position;
    use crate::state::codec::{Change, ChangeRecord};

    fn text(offset: i64) -> LearnedText {
        LearnedText {
            position: Position::new(0, offset),
            analysis: Analysis {
                phrases: Default::default(),
                keywords: Vec::new(),
                terms: Default::default(),
                embedding: None,
                words: None,
            },
            label: "a".into(),
            confident: true,
            note: None,
        }
    }

    fn offsets(record: &LearnRecord) -> Vec<i64> {
        match ChangeRecord::decode(&record.payload).unwrap().change {
            Change::Learned { texts } => texts.iter().map(|t| t.position.offset).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn steps_gather_while_a_record_is_unacknowledged_then_go_together() {
        let mut group = GroupCommit::with_limit(usize::MAX);
        assert!(group.take("me").is_empty(), "nothing gathered");
        let mut first = group.gather(text(0));
        let records = group.take("me");
        assert_eq!(records.len(), 1);
        assert_eq!(offsets(&records[0]), [0]);
        // Unacknowledged: the next steps gather.
        let mut later: Vec<Learned> = (1..4).map(|offset| group.gather(text(offset))).collect();
        assert!(group.take("me").is_empty());
        assert_eq!(group.gathered(), 3);
        for sender in records.into_iter().flat_map(|r| r.waiting) {
            sender.send(true).unwrap();
        }
        assert_eq!(first.try_recv(), Ok(true));
        group.acknowledged();
        let records = group.take("me");
        assert_eq!(records.len(), 1);
        assert_eq!(offsets(&records[0]), [1, 2, 3]);
        assert_eq!(records[0].waiting.len(), 3);
        drop(records);
        assert!(
            later.iter_mut().all(|l| l.try_recv().is_err()),
            "senders dropped: no answer"
        );
    }

    #[test]
    fn a_large_group_is_split_and_each_record_knows_its_texts() {
        let one = codec::learn_records("me", &[text(0)], usize::MAX).unwrap()[0]
            .0
            .len();
        let limit = one * 2;
        let mut group = GroupCommit::with_limit(limit);
        let _learned: Vec<Learned> = (0..6).map(|offset| group.gather(text(offset))).collect();
        let records = group.take("me");
        assert!(records.len() >= 2, "{}", records.len());
        let mut all = Vec::new();
        for record in &records {
            assert!(record.payload.len() <= limit);
            assert_eq!(record.waiting.len(), offsets(record).len());
            all.extend(offsets(record));
        }
        assert_eq!(all, [0, 1, 2, 3, 4, 5]);
        // Every record must be acknowledged before the next group goes.
        group.gather(text(6));
        for _ in 1..records.len() {
            group.acknowledged();
            assert!(group.take("me").is_empty());
        }
        group.acknowledged();
        assert_eq!(group.take("me").len(), 1);
    }
}
