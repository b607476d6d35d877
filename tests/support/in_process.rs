//! Helpers for tests that run the service in process on the in-memory broker.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gorag::broker::MemoryBroker;
use gorag::events::Prediction;

/// Each text's latest prediction on `topic`, by text id.
pub fn predictions(broker: &MemoryBroker, topic: &str) -> BTreeMap<String, Prediction> {
    broker
        .records(topic)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|r| serde_json::from_slice::<Prediction>(&r.payload).ok())
        .map(|p| (p.text_id.clone(), p))
        .collect()
}

/// Waits until `done`, failing the test after 60 s with `what`.
pub async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not within 60 s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
