//! Emerging-class discovery end to end, against the real broker: texts of a class that does
//! not exist yet are pooled, a community pass proposes it on the proposals topic, `gorag
//! proposals accept` turns it into a round, and later texts of that theme are predicted as the
//! new class.

// Only the broker and process helpers are used here.
#[allow(dead_code)]
mod support;

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use support::kafka::{brokers, publish_json, read_until, Service, Topics};

const DEVICES: [&str; 6] = [
    "laptop",
    "tablet",
    "smartphone",
    "headphones",
    "smartwatch",
    "camera",
];
const FAULTS: [&str; 8] = [
    "battery swells and overheats",
    "screen cracked and flickers",
    "hinge snapped in half",
    "cooling fan rattles loudly",
    "display shows dead pixels",
    "battery drains overnight",
    "volume button broke off",
    "lens fogged from inside",
];

/// A text of the missing class: a device repair under warranty.
fn repair(i: usize) -> String {
    let (device, fault) = (DEVICES[i % DEVICES.len()], FAULTS[i % FAULTS.len()]);
    format!(
        "Warranty repair needed: my {device} {fault}; the technician confirmed the {device} \
         repair is covered by the manufacturer warranty."
    )
}

fn text(id: &str, text: &str) -> String {
    serde_json::json!({"id": id, "text": text}).to_string()
}

fn gorag(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(args)
        .env("GORAG_BROKERS", brokers())
        .output()
        .expect("run gorag");
    assert!(
        output.status.success(),
        "gorag {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_class_is_proposed_accepted_and_then_predicted() {
    let topics = Topics::new("discovery");
    let dir = tempfile::tempdir().unwrap();
    let mut sets = topics.sets();
    sets.extend([
        format!("state.dir={}", dir.path().join("state").display()),
        "llm.url=none".to_string(),
        "discovery.pass_every=8".to_string(),
        "discovery.min_size=5".to_string(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    publish_json(&topics.labels, &support::example("round-1.jsonl")).await;
    service.wait_for_log_count("label event applied", 1);

    // Texts of the known classes, then a theme no class covers.
    let mut stream = support::example("texts-1.jsonl");
    stream.extend((0..16).map(|i| text(&format!("r-{i}"), &repair(i))));
    publish_json(&topics.texts, &stream).await;

    let proposals = read_until(&topics.proposals, Duration::from_secs(90), |r| {
        !r.is_empty()
    });
    assert!(
        !proposals.is_empty(),
        "no proposal within 90 s:\n{}",
        service.log_text()
    );
    let first = proposals[0].json();
    assert_eq!(first["status"], "open", "{first}");
    assert!(first["size"].as_u64().unwrap() >= 5, "{first}");
    // Named by its keywords (no LLM here), which come from its members' texts.
    let keywords: Vec<&str> = first["keywords"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k.as_str())
        .collect();
    assert!(!keywords.is_empty(), "{first}");
    // (A keyword phrase may skip stop words and punctuation: its words are checked.)
    assert!(
        keywords.iter().all(|k| k
            .split_whitespace()
            .all(|word| (0..16).any(|i| repair(i).to_lowercase().contains(word)))),
        "{first}"
    );
    // Its members are the repair texts, not the known classes' texts.
    let members = first["members"].as_array().unwrap();
    assert!(
        members
            .iter()
            .all(|m| m.as_str().unwrap().starts_with("r-")),
        "{first}"
    );
    let id = first["proposal"].as_str().unwrap().to_string();

    let listed = gorag(&["proposals", "--topic", &topics.proposals, "list"]);
    assert!(listed.contains(&id), "{listed}");
    let accepted = gorag(&[
        "proposals",
        "--topic",
        &topics.proposals,
        "accept",
        &id,
        "--name",
        "device_repair",
        "--labels-topic",
        &topics.labels,
    ]);
    assert!(accepted.contains("label device_repair"), "{accepted}");
    service.wait_for_log_count("label event applied", 2);

    let later: Vec<String> = (16..21)
        .map(|i| text(&format!("later-{i}"), &repair(i)))
        .collect();
    publish_json(&topics.texts, &later).await;
    let predictions = read_until(&topics.predictions, Duration::from_secs(60), |records| {
        records
            .iter()
            .filter(|r| {
                r.json()["text_id"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("later-")
            })
            .count()
            == later.len()
    });
    let labels: HashMap<String, String> = predictions
        .iter()
        .map(|r| r.json())
        .filter(|p| p["text_id"].as_str().unwrap().starts_with("later-"))
        .map(|p| {
            (
                p["text_id"].as_str().unwrap().to_string(),
                p["label"].as_str().unwrap_or("(no match)").to_string(),
            )
        })
        .collect();
    assert!(
        labels.values().all(|label| label == "device_repair"),
        "{labels:?}"
    );

    // The metrics say what happened.
    let (status, metrics) = support::http::get(&service.admin_address(), "/metrics");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("gorag_proposals_published_total"),
        "{metrics}"
    );
    assert!(
        metrics.contains("gorag_discovery_passes_total{outcome=\"ok\"}"),
        "{metrics}"
    );
    // The last pass found the theme's community again (the pool still holds its texts).
    let kept = metrics
        .lines()
        .find_map(|line| line.strip_prefix("gorag_discovery_pass_communities{reason=\"kept\"} "))
        .and_then(|value| value.trim().parse::<f64>().ok());
    assert!(kept.is_some_and(|n| n >= 1.0), "{metrics}");
    // How many repair texts are pooled depends on the order replicas learn the stream's
    // partitions in (a learned text moves the next one's score), so the lower bounds are the
    // service's own: the pool only grows here (nothing is corrected), and it held the first
    // proposal's members.
    let pooled_while_serving = metrics
        .lines()
        .find_map(|line| line.strip_prefix("gorag_discovery_pool_texts "))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no pool gauge: {metrics}"))
        as u64;
    let proposal_size = first["size"].as_u64().unwrap();
    service.stop();

    // `gorag report` over the stopped state and the stream: the new label with its traffic, the
    // pool, the proposals still open (not the accepted one).
    let page = dir.path().join("labels.html");
    gorag(&[
        "report",
        "--dir",
        &dir.path().join("state").display().to_string(),
        "--out",
        &page.display().to_string(),
        "--predictions-topic",
        &topics.predictions,
        "--proposals-topic",
        &topics.proposals,
        "--brokers",
        &brokers(),
    ]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(page.with_extension("json")).unwrap())
            .unwrap();
    let repair = report["labels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == "device_repair")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(repair["traffic"]["volume"], 5, "{repair}");
    let pooled = report["pooled_texts"].as_u64().unwrap();
    assert!(
        pooled >= pooled_while_serving.max(proposal_size),
        "{pooled} pooled in the saved state, {pooled_while_serving} while serving, \
         {proposal_size} in the proposal: {report}"
    );
    let open = report["proposals"].as_array().unwrap();
    assert!(
        open.iter().all(|p| p["proposal"] != id.as_str()),
        "{report}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Proposed classes") && html.contains("device_repair"));
}
