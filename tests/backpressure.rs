//! Rebalances against the real broker: partitions paused because the backlog filled must flow
//! again once they come back to the same instance; a round being prepared must not hold up a
//! revocation.

mod support;

use std::time::Duration;

use support::fake_llm::{FakeLlm, Reply};
use support::kafka::{predicted_ids, publish_json, read_until, Service, Topics};
use support::{example, ticket_texts};

const TEXTS: usize = 80;

/// Settings of one of two replicas sharing a two-partition texts topic, a fake LLM at
/// `llm_url` and state folder `state` under `dir`; `extra` settings last.
fn replica_sets(
    topics: &Topics,
    dir: &std::path::Path,
    state: &str,
    llm_url: &str,
    extra: &[&str],
) -> Vec<String> {
    let mut sets = topics.sets();
    sets.extend([
        format!("state.dir={}", dir.join(state).display()),
        "kafka.commit_interval_ms=200".into(),
        "kafka.partitions=2".into(),
        format!("llm.url={llm_url}"),
        "llm.model=fake-model".into(),
        "discovery.enabled=false".into(),
    ]);
    sets.extend(extra.iter().map(|s| s.to_string()));
    sets
}

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
        replica_sets(&topics, dir.path(), state, &llm.url, &extra)
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

/// A round whose labels the LLM is describing does not hold the loop: the instance describing
/// it (its LLM hangs) still answers a revocation at once, committing what it finished, and
/// stops cleanly with the round unforwarded. Before, the loop waited for the descriptions and
/// the revocation went unanswered for 30 s, then gave the partitions up with nothing committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_being_described_does_not_hold_up_a_rebalance() {
    let llm = FakeLlm::start(Reply::FirstCandidate).await;
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("describing-rebalance");
    let sets_for = |state: &str, describe: &str| {
        let extra = [describe, "llm.timeout_secs=90", "llm.retries=0"];
        replica_sets(&topics, dir.path(), state, &llm.url, &extra)
    };
    let mut first = Service::start(dir.path(), &sets_for("state-a", "llm.describe_labels=true"));
    tokio::task::block_in_place(|| first.wait_ready());
    // Round 1 is described at once (the fake's default answer); its texts are predicted.
    publish_json(&topics.labels, &example("round-1.jsonl")).await;
    let texts = example("texts-1.jsonl");
    publish_json(&topics.texts, &texts).await;
    tokio::task::block_in_place(|| {
        read_until(&topics.predictions, Duration::from_secs(60), |r| {
            predicted_ids(r).len() >= texts.len()
        })
    });
    // Round 2's two descriptions hang.
    llm.push([Reply::Hang, Reply::Hang]);
    publish_json(&topics.labels, &example("round-2.jsonl")).await;
    // Until the first instance is asking for them (round 1 took three requests).
    let asked = || {
        let requests = llm.requests();
        requests
            .iter()
            .filter(|r| r.contains("Describe the category"))
            .count()
    };
    let waiting = std::time::Instant::now();
    while asked() < 4 {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "round 2 never described"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut second = Service::start(
        dir.path(),
        &sets_for("state-b", "llm.describe_labels=false"),
    );
    tokio::task::block_in_place(|| second.wait_for_log("partitions assigned"));
    tokio::task::block_in_place(|| first.wait_for_log("partitions revoked"));
    let (log_a, _) = tokio::task::block_in_place(|| (first.stop(), second.stop()));
    assert!(!log_a.contains("no answer to a revocation"), "{log_a}");
    assert_eq!(
        log_a.matches("the round's labels described").count(),
        1,
        "round 2's descriptions were still hanging: {log_a}"
    );
}
