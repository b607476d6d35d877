//! `gorag review` on the real broker: a reviewer's keypress in headless Chromium (Debian's)
//! teaches the running service; audits and proposals are answered from the page; two
//! sessions never see the same item; a restarted desk re-offers nothing answered. (Answers at
//! full speed across a desk killed midway: `desk_exactly_once.rs`.)

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::desk::{
    accept_proposal, corrections, held_prediction, prediction, publish_privacy_proposal,
    publish_waiting, reqwest::blocking_client, skip_to_proposal, text, DeskProcess, ANN, BOB,
};
use support::kafka::{publish, publish_json, read_until, Record, Service, Topics};

/// The browser driver (tests/browser/desk.mjs): one command, its JSON line.
fn browser(args: &[&str]) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        dir.join("node_modules/playwright-core").exists(),
        "tests/browser has no node_modules: `npm ci --prefix tests/browser` (scripts/test.sh \
         does it)"
    );
    let output = Command::new("node")
        .arg(dir.join("desk.mjs"))
        .args(args)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "desk.mjs {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("one JSON line")
}

/// Where the page's screenshots go: docs/images when asked (GORAG_DESK_SCREENSHOTS=1), else
/// the test's folder.
fn screenshot(dir: &Path, name: &str) -> String {
    let folder = if std::env::var("GORAG_DESK_SCREENSHOTS").is_ok_and(|v| v == "1") {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/images")
    } else {
        dir.to_path_buf()
    };
    folder.join(name).display().to_string()
}

fn prediction_of(topics: &Topics, id: &str) -> Value {
    let records = read_until(&topics.predictions, Duration::from_secs(120), |r| {
        r.iter().any(|r| r.json()["text_id"] == id)
    });
    records
        .iter()
        .rev()
        .map(Record::json)
        .find(|p| p["text_id"] == id)
        .unwrap_or_else(|| panic!("no prediction for {id}"))
}

#[test]
fn reviewers_teach_the_running_service_from_the_page() {
    let dir = tempfile::tempdir().expect("dir");
    let topics = Topics::new("desk-browser");
    let mut sets = topics.service_sets(&dir.path().join("state"));
    sets.extend([
        "llm.url=none".to_string(),
        "discovery.enabled=false".to_string(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    // Every decided prediction is an audit here, so that one surely comes.
    let desk = DeskProcess::start(dir.path(), &topics, &["review.audit_share=1"]);
    let rt = support::runtime();
    rt.block_on(publish_json(
        &topics.labels,
        &support::example("round-1.jsonl"),
    ));
    let gdpr = "Under GDPR I ask you to erase all personal data you hold about me and confirm \
                the deletion in writing.";
    rt.block_on(publish(&topics.texts, &[(Some("g-1"), text("g-1", gdpr))]));
    let first = prediction_of(&topics, "g-1");
    assert_eq!(first["status"], "needs_review", "{first}");

    // 1. The prediction is on the page; the second candidate is one keypress.
    let shot = screenshot(dir.path(), "review-desk.png");
    let answered = browser(&["answer", &desk.url, ANN, "2", "--screenshot", &shot]);
    assert_eq!(answered["id"], "g-1", "{answered}");
    assert_eq!(answered["kind"], "review");
    let corrected = answered["label"].as_str().expect("a label").to_string();
    assert_eq!(corrected, first["candidates"][1], "{answered}");
    let labels = read_until(&topics.labels, Duration::from_secs(30), |r| {
        corrections(r).contains_key("g-1")
    });
    let event = &corrections(&labels)["g-1"][0];
    assert_eq!(event["label"], corrected.as_str());
    assert_eq!(event["reviewer"], "ann");
    assert_eq!(event["text"], gdpr);
    assert!(event.get("audit").is_none(), "{event}");

    // 2. The next text of that kind is predicted as the corrected label.
    let again = "Under GDPR I ask you to erase all personal data you hold about me and confirm \
                 the deletion in writing, please.";
    rt.block_on(publish(&topics.texts, &[(Some("g-2"), text("g-2", again))]));
    let second = prediction_of(&topics, "g-2");
    assert_eq!(second["label"], corrected.as_str(), "{second}");

    // 3. An audit: a decided prediction, marked as one on the page and in its answer. g-2's
    // own item (an audit too if decided) is answered first, with its label.
    let example = "I was charged twice on my credit card for the same invoice this month.";
    rt.block_on(publish(
        &topics.texts,
        &[(Some("a-1"), text("a-1", example))],
    ));
    let audited = prediction_of(&topics, "a-1");
    assert_eq!(audited["status"], "decided", "{audited}");
    let mut seen = Vec::new();
    while !seen.contains(&"a-1".to_string()) {
        let shot = screenshot(dir.path(), "review-desk-audit.png");
        let answered = browser(&["answer", &desk.url, BOB, "1", "--screenshot", &shot]);
        let id = answered["id"].as_str().unwrap_or_default().to_string();
        if id == "a-1" {
            assert_eq!(answered["kind"], "audit", "{answered}");
        }
        assert!(seen.len() < 3, "a-1 never came: {seen:?}");
        seen.push(id);
    }
    let labels = read_until(&topics.labels, Duration::from_secs(30), |r| {
        corrections(r).contains_key("a-1")
    });
    let audit = &corrections(&labels)["a-1"][0];
    assert_eq!(audit["audit"], true, "{audit}");
    assert_eq!(audit["reviewer"], "bob");

    // 4. A text held for an open proposal is placed in it from the page (key 0)…
    rt.block_on(publish_privacy_proposal(&topics));
    let held = "Please wipe my account and everything you stored about me.";
    // This service runs without discovery: its own prediction, then the one a service holding
    // texts for p-privacy would have written, which the desk shows (the last one of a text).
    rt.block_on(publish(&topics.texts, &[(Some("h-1"), text("h-1", held))]));
    prediction_of(&topics, "h-1");
    rt.block_on(publish(
        &topics.predictions,
        &[(Some("h-1"), held_prediction("h-1", "p-privacy"))],
    ));
    // Bob passes on the proposal (older than the text), then is given the text as held.
    let client = blocking_client();
    assert!(
        skip_to_proposal(
            &client,
            &desk.url,
            BOB,
            "p-privacy",
            Duration::from_secs(30)
        ),
        "the desk never showed p-privacy"
    );
    let _ = client
        .post(format!("{}/api/skip", desk.url))
        .bearer(BOB)
        .json(&serde_json::json!({"item": {"proposal": "p-privacy"}}))
        .send();
    let started = Instant::now();
    loop {
        let next = client
            .get(format!("{}/api/next", desk.url))
            .bearer(BOB)
            .send()
            .expect("next");
        let item: Value = serde_json::from_str(&next.body).unwrap_or_default();
        if item["item"]["proposal"]["id"] == "p-privacy" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "h-1 never shown as held: {item}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let shot = screenshot(dir.path(), "review-desk-held.png");
    let placed = browser(&["answer", &desk.url, BOB, "0", "--screenshot", &shot]);
    assert_eq!(
        (&placed["id"], &placed["label"]),
        (&"h-1".into(), &"p-privacy".into()),
        "{placed}"
    );
    let labels = read_until(&topics.labels, Duration::from_secs(30), |r| {
        corrections(r).contains_key("h-1")
    });
    let vote = &corrections(&labels)["h-1"][0];
    assert_eq!(
        (&vote["proposal"], &vote["none_of_these"], &vote["version"]),
        (&"p-privacy".into(), &true.into(), &4.into()),
        "{vote}"
    );
    // (read back by the desk before the accept)
    std::thread::sleep(Duration::from_secs(2));

    // …and, accepted from the page, the proposal becomes a round the service applies, the
    // placed text its first example.
    let shot = screenshot(dir.path(), "review-desk-proposal.png");
    let accepted = browser(&[
        "accept",
        &desk.url,
        ANN,
        "privacy",
        "data privacy",
        "--screenshot",
        &shot,
    ]);
    assert_eq!(accepted["kind"], "proposal", "{accepted}");
    service.wait_for_log("accept-p-privacy");
    let labels = read_until(&topics.labels, Duration::from_secs(30), |r| {
        r.iter().any(|r| r.json()["round"] == "accept-p-privacy")
    });
    let round = labels
        .iter()
        .map(Record::json)
        .find(|r| r["round"] == "accept-p-privacy")
        .expect("the accepting round");
    assert_eq!(round["labels"][0]["examples"][0], held, "{round}");
    rt.block_on(publish(
        &topics.texts,
        &[(
            Some("g-3"),
            text(
                "g-3",
                "Delete every piece of personal data you keep about me.",
            ),
        )],
    ));
    let applied = prediction_of(&topics, "g-3");
    assert_eq!(applied["label"], "privacy", "{applied}");

    // 5. Two sessions at once never see the same item.
    let made_up: Vec<(Option<&str>, Vec<u8>)> = ["m-1", "m-2"]
        .iter()
        .map(|id| {
            (
                Some(*id),
                text(id, "a ticket about a parcel and an invoice"),
            )
        })
        .collect();
    rt.block_on(publish(&topics.texts, &made_up));
    let made_up: Vec<(Option<&str>, Vec<u8>)> = ["m-1", "m-2"]
        .iter()
        .map(|id| (Some(*id), prediction(id, "needs_review", Some("billing"))))
        .collect();
    rt.block_on(publish(&topics.predictions, &made_up));
    let pair = browser(&["pair", &desk.url, ANN, BOB]);
    assert_ne!(pair["first"], pair["second"], "{pair}");

    // 6. What operators see: the queue and the answers on /metrics, every family the Grafana
    // dashboard queries of the desk among them.
    let metrics = blocking_client()
        .get(format!("{}/metrics", desk.url))
        .send()
        .expect("metrics")
        .body;
    let families: Vec<String> = support::dashboard_metric_families()
        .into_iter()
        .filter(|family| family.starts_with("gorag_review_"))
        .collect();
    assert!(families.len() >= 5, "{families:?}");
    for family in &families {
        assert!(
            metrics.contains(&format!("# TYPE {family} ")),
            "{family}:\n{metrics}"
        );
    }
    let answered = |kind: &str| -> f64 {
        let prefix = format!("gorag_review_answers_total{{kind=\"{kind}\"");
        metrics
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert!(answered("review") >= 1.0, "{metrics}");
    assert!(answered("audit") >= 1.0, "{metrics}");
    assert!(
        metrics.contains("gorag_review_proposals_answered_total 1"),
        "{metrics}"
    );

    // 7. A restarted desk re-offers nothing answered: every item it offers is one of the
    // unanswered two (or g-3's own, if it needs review).
    drop(desk);
    let desk = DeskProcess::start(dir.path(), &topics, &["review.audit_share=1"]);
    let offered = everything_offered(&desk.url);
    let answered: BTreeSet<&str> = ["g-1", "a-1"]
        .into_iter()
        .chain(seen.iter().map(String::as_str))
        .collect();
    assert!(
        offered.iter().all(|id| !answered.contains(id.as_str())),
        "re-offered: {offered:?} (answered {answered:?})"
    );
    assert!(
        offered.contains("m-1") && offered.contains("m-2"),
        "{offered:?}"
    );
    service.stop();
}

/// A third reviewer, added to the logins file while the desk runs.
const CARL: &str = "carl-token-5555566666";

fn write_logins(dir: &Path, lines: &[(&str, &str)]) {
    let text: String = lines.iter().map(|(n, t)| format!("{n}:{t}\n")).collect();
    std::fs::write(dir.join("tokens"), text).expect("tokens file");
}

/// `node desk.mjs …` in a thread, for a page that waits on the test.
fn browser_in_thread(args: Vec<String>) -> std::thread::JoinHandle<Value> {
    std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        browser(&args)
    })
}

fn wait_for_file(path: &Path) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{path:?} never came"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_page_stays_true_answers_can_be_undone_and_a_removed_reviewer_is_told() {
    let dir = tempfile::tempdir().expect("dir");
    let topics = Topics::new("desk-true");
    let rt = support::runtime();
    rt.block_on(publish_json(
        &topics.labels,
        &support::example("round-1.jsonl"),
    ));
    let ids: Vec<String> = ["u-1", "u-2", "u-3"].map(String::from).to_vec();
    rt.block_on(publish_waiting(&topics, &ids, |_| {
        "my parcel came broken and I was charged twice".into()
    }));
    rt.block_on(publish_privacy_proposal(&topics));
    let desk = DeskProcess::start(dir.path(), &topics, &["review.audit_share=0"]);
    write_logins(dir.path(), &[("ann", ANN), ("bob", BOB), ("carl", CARL)]);

    // A wrong token reads the server's own sentence.
    let shot = screenshot(dir.path(), "review-desk-wrong-token.png");
    let wrong = browser(&[
        "wrong",
        &desk.url,
        "not-anyone-s-token-0000",
        "--screenshot",
        &shot,
    ]);
    assert_eq!(wrong["error"], "no reviewer has this token", "{wrong}");

    // Bob's page is open (holding u-1) when carl accepts the proposal elsewhere: bob's `/`
    // finds the new label without a reload.
    let marker = dir.path().join("accepted");
    let shot = screenshot(dir.path(), "review-desk-new-label.png");
    let search = browser_in_thread(
        [
            "search",
            &desk.url,
            BOB,
            "priv",
            &marker.display().to_string(),
            "--screenshot",
            &shot,
        ]
        .map(String::from)
        .to_vec(),
    );
    wait_for_file(&dir.path().join("accepted.ready"));
    let client = blocking_client();
    assert!(
        skip_to_proposal(
            &client,
            &desk.url,
            CARL,
            "p-privacy",
            Duration::from_secs(30)
        ),
        "carl never got the proposal"
    );
    let accepted = accept_proposal(
        &client,
        &desk.url,
        CARL,
        ("p-privacy", "privacy", "data privacy"),
    );
    assert_eq!(accepted.status().as_u16(), 202, "{}", accepted.body);
    // Published after its undo window, then read back by the desk.
    let started = Instant::now();
    loop {
        let labels = client
            .get(format!("{}/api/labels", desk.url))
            .bearer(CARL)
            .send();
        if labels.is_ok_and(|l| l.body.contains("\"privacy\"")) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the label never came"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::fs::write(&marker, "").expect("marker");
    let found = search.join().expect("search page");
    assert_eq!(found["label"], "privacy", "{found}");

    // Undo: ann answers her item and takes it back; nothing reaches the labels topic, and the
    // item is hers again.
    let shot = screenshot(dir.path(), "review-desk-undo.png");
    let undone = browser(&["undo", &desk.url, ANN, "1", "--screenshot", &shot]);
    let id = undone["id"].as_str().expect("an item").to_string();
    assert!(
        undone["said"]
            .as_str()
            .unwrap_or_default()
            .starts_with("sent"),
        "{undone}"
    );
    assert!(
        undone["flash"]
            .as_str()
            .unwrap_or_default()
            .starts_with("taken back"),
        "{undone}"
    );
    assert_eq!(undone["again"], id.as_str(), "{undone}");
    std::thread::sleep(Duration::from_secs(7));
    let labels = read_until(&topics.labels, Duration::from_secs(2), |_| false);
    assert!(
        !corrections(&labels).contains_key(&id),
        "an undone answer was published"
    );

    // A message goes when its time is up, the next item on the page; the answer stands.
    let lingered = browser(&["linger", &desk.url, ANN, "1"]);
    assert_eq!(lingered["id"], id.as_str(), "{lingered}");
    assert_eq!(lingered["later"], "", "{lingered}");
    let labels = read_until(&topics.labels, Duration::from_secs(30), |r| {
        corrections(r).contains_key(&id)
    });
    assert_eq!(corrections(&labels)[&id].len(), 1);

    // Bob is removed from the logins file while his page is open: it says so, and the item he
    // held goes to carl at once.
    let shot = screenshot(dir.path(), "review-desk-revoked.png");
    let revoked = browser_in_thread(
        ["revoked", &desk.url, BOB, "--screenshot", &shot]
            .map(String::from)
            .to_vec(),
    );
    std::thread::sleep(Duration::from_secs(4));
    write_logins(dir.path(), &[("ann", ANN), ("carl", CARL)]);
    let told = revoked.join().expect("revoked page");
    assert!(
        told["error"]
            .as_str()
            .unwrap_or_default()
            .contains("removed from this desk"),
        "{told}"
    );
    // A new client: the desk closed the old one's idle connection long ago.
    let next = blocking_client()
        .get(format!("{}/api/next", desk.url))
        .bearer(CARL)
        .send()
        .expect("next");
    let next: Value = serde_json::from_str(&next.body).expect("json");
    assert_eq!(next["item"]["text_id"], told["held"], "bob's item: {next}");
}

/// Every item a desk offers, by skipping through its queue as a fresh reviewer.
fn everything_offered(url: &str) -> BTreeSet<String> {
    let client = blocking_client();
    let mut offered = BTreeSet::new();
    for _ in 0..100 {
        let next = client
            .get(format!("{url}/api/next"))
            .bearer(BOB)
            .send()
            .expect("next");
        let next: Value = serde_json::from_str(&next.body).expect("json");
        let item = &next["item"];
        let id = item["text_id"]
            .as_str()
            .or(item["proposal"].as_str())
            .map(str::to_string);
        let Some(id) = id else { break };
        let kind = if item["type"] == "text" {
            "text"
        } else {
            "proposal"
        };
        let body = json!({"item": {kind: id}});
        client
            .post(format!("{url}/api/skip"))
            .bearer(BOB)
            .json(&body)
            .send()
            .expect("skip");
        offered.insert(id);
    }
    offered
}
