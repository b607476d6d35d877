//! A round being prepared — its labels described by the LLM before it is forwarded — and the
//! service loop, against the real broker and a scripted LLM: the loop goes on meanwhile, and
//! texts published after the round still wait for it.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use support::example;
use support::fake_llm::{FakeLlm, Reply};
use support::kafka::{
    predict_the_first_round, predicted_ids, publish_json, read_until, Service, Topics,
};

/// How often the fake LLM was asked to describe the category `name`.
fn describe_requests(llm: &FakeLlm, name: &str) -> usize {
    let asked = format!("Describe the category \\\"{name}\\\"");
    llm.requests().iter().filter(|r| r.contains(&asked)).count()
}

/// Until the fake LLM has been asked to describe the category `name`.
async fn wait_for_request(llm: &FakeLlm, name: &str) {
    let waiting = std::time::Instant::now();
    while describe_requests(llm, name) == 0 {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "{name} never described"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Texts published after a round whose labels are being described wait for it, and are
/// classified with it, described: nothing of the new path lets a text overtake its round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn texts_after_a_round_being_described_are_classified_with_it() {
    let llm = FakeLlm::start(Reply::FirstCandidate).await;
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("describing-order");
    let sets = topics.replica_sets(&dir.path().join("state"), &llm.url, &["llm.retries=0"]);
    let mut service = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| service.wait_ready());
    predict_the_first_round(&topics, Duration::from_secs(60)).await;
    // Round 2's two descriptions take two seconds each, one after the other.
    let slow = Reply::FirstCandidateAfter(Duration::from_secs(2));
    llm.push([slow.clone(), slow]);
    publish_json(&topics.labels, &example("round-2.jsonl")).await;
    publish_json(&topics.texts, &example("texts-2.jsonl")).await;
    let records = tokio::task::block_in_place(|| {
        read_until(&topics.predictions, Duration::from_secs(60), |r| {
            predicted_ids(r).len() >= 8
        })
    });
    let log = tokio::task::block_in_place(|| service.stop());
    let predictions: HashMap<String, serde_json::Value> = records
        .iter()
        .map(|r| {
            (
                r.json()["text_id"].as_str().unwrap_or_default().into(),
                r.json(),
            )
        })
        .collect();
    for id in ["t-201", "t-202", "t-203", "t-204"] {
        let p = &predictions[id];
        assert_eq!(p["round"], "r2", "{id}: {p}\n{log}");
        assert_eq!(p["label_version"], 2, "{id}: {p}");
    }
    assert_eq!(predictions["t-201"]["label"], "product_defect");
    assert!(
        log.lines()
            .any(|l| l.contains("the round's labels described") && l.contains("described=2")),
        "round 2 went without its descriptions: {log}"
    );
}

/// A round whose labels the LLM is describing does not hold the loop: the instance describing
/// it (its LLM hangs) still answers a revocation when a second replica joins, and stops
/// cleanly, the round given up. Before, the loop waited for the descriptions: the revocation
/// went unanswered for 30 s, then the partitions were given up with nothing committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_being_described_does_not_hold_up_a_rebalance() {
    let llm = FakeLlm::start(Reply::FirstCandidate).await;
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("describing-rebalance");
    let sets_for = |state: &str, describe: &str| {
        let extra = [describe, "llm.timeout_secs=90", "llm.retries=0"];
        topics.replica_sets(&dir.path().join(state), &llm.url, &extra)
    };
    let mut first = Service::start(dir.path(), &sets_for("state-a", "llm.describe_labels=true"));
    tokio::task::block_in_place(|| first.wait_ready());
    // Round 1 is described at once (the fake's default answer); its texts are predicted.
    predict_the_first_round(&topics, Duration::from_secs(60)).await;
    // Round 2's first description hangs (they are asked one at a time beside the texts).
    llm.push([Reply::Hang]);
    publish_json(&topics.labels, &example("round-2.jsonl")).await;
    wait_for_request(&llm, "product defect").await;

    let mut second = Service::start(
        dir.path(),
        &sets_for("state-b", "llm.describe_labels=false"),
    );
    tokio::task::block_in_place(|| second.wait_for_log("partitions assigned"));
    tokio::task::block_in_place(|| first.wait_for_log("partitions revoked"));
    let (log_a, _) = tokio::task::block_in_place(|| (first.stop(), second.stop()));
    assert!(!log_a.contains("no answer to a revocation"), "{log_a}");
    // Still describing when it stopped: given up, the round not forwarded by it.
    assert!(log_a.contains("round left unforwarded"), "{log_a}");
    // One label at a time beside the texts (two calls allowed): the second never asked.
    assert_eq!(describe_requests(&llm, "feature request"), 0);
    assert_eq!(
        log_a.matches("the round's labels described").count(),
        1,
        "{log_a}"
    );
}

/// While a round is described, texts published before it go on being classified, one at a
/// time (`input.max_in_flight=1`): the changelog is still applied meanwhile, so each text's
/// learn record, read back, gives its intake place to the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn texts_before_a_round_being_described_go_on() {
    // Descriptions hang, except round 1's three; texts take 200 ms each.
    let llm = FakeLlm::start(Reply::HangOnDescriptions(Duration::from_millis(200))).await;
    llm.push(vec![Reply::FirstCandidate; 3]);
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("describing-older");
    let extra = [
        "input.max_in_flight=1",
        "llm.timeout_secs=90",
        "llm.retries=0",
    ];
    let sets = topics.replica_sets(&dir.path().join("state"), &llm.url, &extra);
    let mut service = Service::start(dir.path(), &sets);
    tokio::task::block_in_place(|| service.wait_ready());
    publish_json(&topics.labels, &example("round-1.jsonl")).await;
    tokio::task::block_in_place(|| service.wait_for_log("label event applied"));
    // Twelve texts of round 1's classes (texts-1's, under new ids), then — once a sync has
    // seen them all — round 2, while most of them still wait their turn.
    let texts: Vec<String> = (0..12)
        .map(|i| {
            let mut text: serde_json::Value =
                serde_json::from_str(&example("texts-1.jsonl")[i % 4]).unwrap();
            text["id"] = format!("before-{i}").into();
            text.to_string()
        })
        .collect();
    publish_json(&topics.texts, &texts).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    publish_json(&topics.labels, &example("round-2.jsonl")).await;
    wait_for_request(&llm, "product defect").await;
    let records = tokio::task::block_in_place(|| {
        read_until(&topics.predictions, Duration::from_secs(60), |r| {
            predicted_ids(r).len() >= texts.len()
        })
    });
    let log = tokio::task::block_in_place(|| service.stop());
    assert_eq!(predicted_ids(&records).len(), texts.len(), "{log}");
    assert!(
        log.contains("round left unforwarded"),
        "round 2 still described: {log}"
    );
}
