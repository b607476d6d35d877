//! Back-pressure across a rebalance, against the real broker: partitions paused because the
//! backlog filled must flow again once they come back to the same instance.

mod support;

use std::time::Duration;

use support::fake_llm::{FakeLlm, Reply};
use support::kafka::{predicted_ids, publish_json, read_until, Service, Topics};
use support::{example, ticket_texts};

const TEXTS: usize = 80;

/// Texts of about 30 kB each: 80 of them hold more than the 1 MiB backlog allows.
fn large_texts() -> Vec<String> {
    ticket_texts(0x005e_ed0f_bac4, "b", TEXTS, 4000)
}

/// librdkafka keeps a partition's pause across a rebalance that hands it back to the same
/// consumer. The first instance pauses (its first LLM answer takes 15 s, its backlog fills), a
/// second joins (the first's backlog is dropped with the revocation, so its intake is no longer
/// paused) and every text must still be predicted: the partition the first instance gets back
/// must be resumed, not left paused for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_paused_before_a_rebalance_flow_again_after_it() {
    let llm = FakeLlm::start(Reply::FirstCandidate).await;
    llm.push([Reply::FirstCandidateAfter(Duration::from_secs(15))]);
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("paused-rebalance");
    let sets_for = |state: &str| {
        let extra = [
            "llm.describe_labels=false",
            "llm.timeout_secs=30",
            "input.max_in_flight=1",
            "input.backlog_mb=1",
        ];
        topics.replica_sets(&dir.path().join(state), &llm.url, &extra)
    };
    let mut first = Service::start(dir.path(), &sets_for("state-a"));
    tokio::task::block_in_place(|| first.wait_ready());
    publish_json(&topics.labels, &example("round-1.jsonl")).await;
    publish_json(&topics.texts, &large_texts()).await;
    tokio::task::block_in_place(|| first.wait_for_log("texts partitions paused"));

    let mut second = Service::start(dir.path(), &sets_for("state-b"));
    tokio::task::block_in_place(|| second.wait_for_log("partitions assigned"));
    let records = tokio::task::block_in_place(|| {
        read_until(&topics.predictions, Duration::from_secs(150), |r| {
            predicted_ids(r).len() >= TEXTS
        })
    });
    let (log_a, log_b) = tokio::task::block_in_place(|| (first.stop(), second.stop()));
    assert!(log_a.contains("partitions revoked"), "{log_a}");
    assert_eq!(
        predicted_ids(&records).len(),
        TEXTS,
        "first:\n{log_a}\nsecond:\n{log_b}"
    );
}
