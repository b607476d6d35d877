//! Consumer lag on the texts topic, measured in a task of its own every few seconds: the
//! watermark queries wait on the broker, the loop does not.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::internal_events::ConsumerLag;
use crate::broker::MetadataClient;
use crate::position::Position;
use crate::telemetry::metrics::Metrics;

const EVERY: Duration = Duration::from_secs(5);

pub struct LagProbe {
    client: MetadataClient,
    topic: String,
    metrics: Arc<Metrics>,
    started: Option<Instant>,
    running: Option<JoinHandle<()>>,
}

impl LagProbe {
    pub fn new(client: MetadataClient, topic: String, metrics: Arc<Metrics>) -> Self {
        Self {
            client,
            topic,
            metrics,
            started: None,
            running: None,
        }
    }

    /// Start a measurement from `positions` (per partition, the next text still to do) unless
    /// one ran in the last few seconds or is still running.
    pub fn measure(&mut self, positions: Vec<Position>) {
        if positions.is_empty()
            || self
                .running
                .as_ref()
                .is_some_and(|task| !task.is_finished())
            || self.started.is_some_and(|at| at.elapsed() < EVERY)
        {
            return;
        }
        self.started = Some(Instant::now());
        let (client, topic, metrics) = (
            self.client.clone(),
            self.topic.clone(),
            self.metrics.clone(),
        );
        self.running = Some(tokio::spawn(async move {
            for Position { partition, offset } in positions {
                let bounds = client
                    .watermarks(&topic, partition, Duration::from_secs(2))
                    .await;
                if let Ok((_, high)) = bounds {
                    metrics.emit(ConsumerLag {
                        partition,
                        records: high - offset,
                    });
                }
            }
        }));
    }
}

impl Drop for LagProbe {
    fn drop(&mut self) {
        if let Some(task) = &self.running {
            task.abort();
        }
    }
}
