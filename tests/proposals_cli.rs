//! `gorag proposals` against the real broker: list the open proposals, accept one (its round
//! reaches the labels topic), reject another; decided proposals leave the list.

// Only the broker helpers are used here.
#[allow(dead_code)]
mod support;

use std::process::Command;
use std::time::Duration;

use support::kafka::{brokers, publish, read_until, unique};

fn proposal(id: &str, revision: u64, size: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "proposal": id, "revision": revision, "status": "open",
        "name": format!("{id} theme, crater"), "keywords": ["crater", "lava flow"],
        "representatives": [
            {"text_id": "t1", "excerpt": "Lava from the eastern vent reached the crater rim…"},
            {"text_id": "t2", "excerpt": "The eruption column rose above the crater."}
        ],
        "size": size, "growth": size, "cohesion": 0.4
    }))
    .unwrap()
}

fn gorag(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(args)
        .env("GORAG_BROKERS", brokers())
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn proposals_are_listed_accepted_and_rejected() {
    let (topic, labels) = (unique("proposals"), unique("labels"));
    publish(
        &topic,
        &[
            (Some("p-a"), proposal("p-a", 1, 9)),
            (Some("p-a"), proposal("p-a", 2, 12)),
            (Some("p-b"), proposal("p-b", 1, 8)),
        ],
    )
    .await;

    let (ok, out, err) = gorag(&["proposals", "--topic", &topic, "list", "--format", "json"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{out}");
    // The highest revision is the one shown.
    assert_eq!(listed[0]["proposal"], "p-a");
    assert_eq!(listed[0]["size"], 12);

    let accept = [
        "proposals",
        "--topic",
        &topic,
        "accept",
        "p-a",
        "--name",
        "volcanology",
    ];
    let (ok, out, err) = gorag(&[&accept[..], &["--labels-topic", &labels]].concat());
    assert!(ok, "{err}");
    assert!(out.contains("label volcanology"), "{out}");
    let rounds = read_until(&labels, Duration::from_secs(30), |r| !r.is_empty());
    let round = rounds[0].json();
    assert_eq!(round["type"], "round");
    assert_eq!(round["round"], "accept-p-a");
    assert_eq!(round["labels"][0]["id"], "volcanology");
    assert_eq!(
        round["labels"][0]["examples"][0],
        "Lava from the eastern vent reached the crater rim"
    );
    assert_eq!(rounds[0].key.as_deref(), Some("accept-p-a"));

    // A label the labels topic already has is refused before anything is sent.
    let again = [
        "proposals",
        "--topic",
        &topic,
        "accept",
        "p-b",
        "--name",
        "volcanology",
    ];
    let (ok, _, err) = gorag(&[&again[..], &["--labels-topic", &labels]].concat());
    assert!(!ok);
    assert!(err.contains("label volcanology already exists"), "{err}");

    let (ok, _, err) = gorag(&["proposals", "--topic", &topic, "reject", "p-b"]);
    assert!(ok, "{err}");
    // Neither is open now; deciding one again is refused with the reason.
    let (ok, out, err) = gorag(&["proposals", "--topic", &topic]);
    assert!(ok, "{err}");
    assert_eq!(out, "no proposals\n");
    let (ok, _, err) = gorag(&["proposals", "--topic", &topic, "reject", "p-a"]);
    assert!(!ok);
    assert!(err.contains("already accepted"), "{err}");
    let (ok, out, _) = gorag(&["proposals", "--topic", &topic, "list", "--all"]);
    assert!(ok);
    assert!(
        out.contains("accepted") && out.contains("rejected"),
        "{out}"
    );
    // Decisions under keys of their own, which a pass never writes: a pass that raced the
    // operator (an open revision of p-a above the decision's, written after it) reopens nothing, also
    // once compaction has kept only each key's last record.
    let records = read_until(&topic, Duration::from_secs(30), |r| r.len() >= 5);
    let mut keys: Vec<&str> = records.iter().filter_map(|r| r.key.as_deref()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["p-a", "p-a", "p-a.decision", "p-b", "p-b.decision"]);
    publish(&topic, &[(Some("p-a"), proposal("p-a", 4, 14))]).await;
    let (ok, out, err) = gorag(&["proposals", "--topic", &topic]);
    assert!(ok, "{err}");
    assert_eq!(out, "no proposals\n");
    let (ok, _, err) = gorag(&["proposals", "--topic", &topic, "accept", "p-missing"]);
    assert!(!ok);
    assert!(err.contains("no proposal p-missing"), "{err}");
}

/// A topic that is not there is not an empty one for a community pass (it would publish every
/// proposal again as new), while the operator's commands read it as "nothing yet".
#[tokio::test]
async fn a_missing_topic_is_an_error_for_the_pass_and_empty_for_the_cli() {
    let missing = unique("never-created");
    let read = {
        let mut config = gorag::config::ServeConfig::default();
        config.kafka.brokers = brokers();
        gorag::broker::Broker::kafka(&config.broker())
            .read_to_end("test", &missing, Duration::from_secs(20))
            .await
    };
    assert!(
        matches!(
            read,
            Err(gorag::broker::read_back::ReadBackError::NoTopic { .. })
        ),
        "{read:?}"
    );
    let (ok, out, err) = gorag(&["proposals", "--topic", &missing]);
    assert!(ok, "{err}");
    assert_eq!(out, "no proposals\n");
}
