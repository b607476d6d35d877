//! The desk's reader: the labels, texts, predictions and proposals topics, every partition
//! from its start, each record decoded at once and handed to the desk. Nothing is committed:
//! the desk's position is the topics themselves, read again at every start. Until it has
//! read to where the topics ended at its start, the desk is not ready (it could offer an item
//! whose answer it has not read yet).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::desk::Input;
use super::web::{now_ms, Shared};
use crate::bounds::Bounds;
use crate::broker::commands::{CommandConsumer, CommandError, PartitionEnd};
use crate::broker::Record;
use crate::config::TopicsSection;
use crate::events::{decode, Prediction};

/// The pause after a failed read.
const READ_RETRY: Duration = Duration::from_secs(1);
/// How often the reader checks whether it has caught up, while it has not.
const CATCH_UP_CHECK: Duration = Duration::from_millis(200);

/// The topics the desk reads, by role.
#[derive(Debug, Clone)]
pub struct FeedTopics {
    pub labels: String,
    pub texts: String,
    pub predictions: String,
    pub proposals: String,
}

impl From<&TopicsSection> for FeedTopics {
    fn from(topics: &TopicsSection) -> Self {
        Self {
            labels: topics.labels.clone(),
            texts: topics.texts.clone(),
            predictions: topics.predictions.clone(),
            proposals: topics.proposals.clone(),
        }
    }
}

impl FeedTopics {
    pub fn names(&self) -> [&str; 4] {
        [
            &self.labels,
            &self.texts,
            &self.predictions,
            &self.proposals,
        ]
    }

    /// A record's event, or why it is not one.
    fn decode(&self, record: &Record, bounds: &Bounds) -> Option<Result<Input, String>> {
        let bytes = &record.payload;
        if bytes.is_empty() {
            // A tombstone (a compacted key's deletion): nothing to read.
            return None;
        }
        let topic = record.topic.as_str();
        let input = if topic == self.labels {
            decode::label_event(bytes)
                .map(Input::Label)
                .map_err(|e| e.to_string())
        } else if topic == self.texts {
            decode::text_event(bytes, bounds)
                .map(Input::Text)
                .map_err(|e| e.to_string())
        } else if topic == self.predictions {
            serde_json::from_slice::<Prediction>(bytes)
                .map(|p| Input::Prediction(Box::new(p)))
                .map_err(|e| e.to_string())
        } else if topic == self.proposals {
            decode::proposal_event(bytes)
                .map(|p| Input::Proposal(Box::new(p)))
                .map_err(|e| e.to_string())
        } else {
            return None;
        };
        Some(input)
    }
}

/// Read until `stop` resolves or the broker fails; the desk is marked ready once caught up.
pub async fn run(
    consumer: CommandConsumer,
    ends: Vec<PartitionEnd>,
    topics: FeedTopics,
    bounds: Bounds,
    shared: Arc<Shared>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), CommandError> {
    tokio::pin!(stop);
    let mut check = tokio::time::interval(CATCH_UP_CHECK);
    let mut caught_up = false;
    loop {
        tokio::select! {
            () = &mut stop => return Ok(()),
            record = consumer.recv() => {
                let record = match record {
                    Ok(record) => record,
                    Err(error) => {
                        // librdkafka retries on its own: a broker that went away is read
                        // from again when it is back; the desk keeps serving meanwhile.
                        tracing::warn!(%error, "reading the desk's topics");
                        tokio::time::sleep(READ_RETRY).await;
                        continue;
                    }
                };
                match topics.decode(&record, &bounds) {
                    Some(Ok(input)) => {
                        // When the event was written: an item's age survives a desk restart.
                        let at = record
                            .timestamp_ms
                            .and_then(|t| u64::try_from(t).ok())
                            .unwrap_or_else(now_ms);
                        shared.desk().read(input, at);
                    }
                    Some(Err(error)) => {
                        shared.unreadable.fetch_add(1, Ordering::Relaxed);
                        // Records read again at every start were reported when they came:
                        // while catching up they are counted, and summed up once caught up.
                        if caught_up {
                            tracing::warn!(
                                topic = %record.topic,
                                partition = record.partition(),
                                offset = record.offset(),
                                %error,
                                "not an event the desk reads; skipped"
                            );
                        } else {
                            tracing::debug!(topic = %record.topic, offset = record.offset(), %error, "skipped while catching up");
                        }
                    }
                    None => {}
                }
            }
            _ = check.tick(), if !caught_up => {
                if consumer.caught_up(&ends)? {
                    caught_up = true;
                    shared.ready.store(true, Ordering::Release);
                    let skipped = shared.unreadable.load(Ordering::Relaxed);
                    if skipped > 0 {
                        tracing::info!(
                            skipped,
                            "the desk has read its topics; reviewers are served ({skipped} \
                             records were not events the desk reads: skipped, counted in \
                             gorag_review_unreadable_records_total)"
                        );
                    } else {
                        tracing::info!("the desk has read its topics; reviewers are served");
                    }
                }
            }
        }
    }
}
