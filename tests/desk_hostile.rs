//! The review desk against hostile clients, on the real broker (docs/guide/review.md, "Who may
//! reach the desk"): slow bodies, wrong tokens, another site's requests, answers to items never
//! offered, hostile label ids, an ended session, and a minute's flood of bad requests. The
//! attacker connects from 127.0.0.2 and the reviewer from 127.0.0.1 — two addresses, as they
//! would be — both on this machine's loopback.

mod support;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::desk::{publish_privacy_proposal, publish_waiting, DeskProcess, ANN};
use support::kafka::{publish, publish_json, read_until, Topics};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpSocket;

const ATTACKER: &str = "127.0.0.2";
/// Slow senders come from four addresses, so that together they pass the desk's cap of 64
/// connections (one address alone stops at its own cap of 32).
const SLOW_SENDERS: [&str; 4] = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"];

/// A desk with `items` texts waiting for review.
fn desk_with_items(dir: &std::path::Path, name: &str, items: usize) -> (DeskProcess, Topics) {
    let topics = Topics::new(name);
    let rt = support::runtime();
    rt.block_on(publish_json(
        &topics.labels,
        &support::example("round-1.jsonl"),
    ));
    let ids: Vec<String> = (0..items).map(|i| format!("h-{i:03}")).collect();
    rt.block_on(publish_waiting(&topics, &ids, |_| {
        "my parcel never came".into()
    }));
    let desk = DeskProcess::start(dir, &topics, &["review.audit_share=0"]);
    (desk, topics)
}

fn client_from(address: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(address.parse::<IpAddr>().ok())
        // The desk closes a connection idle for 10 s: never reuse one that old.
        .pool_idle_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// A reviewer's browser-like session: the cookie from logging in.
struct Reviewer {
    client: reqwest::Client,
    url: String,
    cookie: String,
}

impl Reviewer {
    async fn log_in(url: &str, token: &str) -> Self {
        let client = client_from("127.0.0.1");
        let response = client
            .post(format!("{url}/api/login"))
            .header("content-type", "application/json")
            .body(json!({ "token": token }).to_string())
            .send()
            .await
            .expect("login");
        assert_eq!(response.status(), 200);
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .expect("a cookie")
            .to_string();
        assert!(!cookie.contains(token), "the cookie is not the token");
        Self {
            client,
            url: url.to_string(),
            cookie,
        }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .header("cookie", &self.cookie)
            .send()
            .await
            .expect("get");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.url))
            .header("cookie", &self.cookie)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("post");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Ask for the next item and answer it `billing`; the answer's round trip.
    async fn answer_next(&self) -> Duration {
        let (status, next) = self.get("/api/next").await;
        assert_eq!(status, 200, "{next}");
        let id = next["item"]["text_id"]
            .as_str()
            .expect("an item")
            .to_string();
        let started = Instant::now();
        let (status, body) = self
            .post(
                "/api/answer",
                json!({"item": {"text": id}, "answer": {"label": "billing"}}),
            )
            .await;
        let took = started.elapsed();
        assert_eq!(status, 202, "{body}");
        took
    }
}

/// `clients` connections from the slow senders' addresses, each sending a request head that
/// declares `declared` body bytes, then a byte every two seconds; reconnecting when closed.
fn slow_bodies(
    rt: &tokio::runtime::Runtime,
    desk: SocketAddr,
    clients: usize,
    head: String,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..clients)
        .map(|n| {
            let head = head.clone();
            let from = SLOW_SENDERS[n % SLOW_SENDERS.len()];
            rt.spawn(async move {
                loop {
                    let Ok(socket) = TcpSocket::new_v4() else {
                        return;
                    };
                    let bound = from.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0));
                    if socket.bind(bound.expect("address")).is_err() {
                        return;
                    }
                    let Ok(mut stream) = socket.connect(desk).await else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    if stream.write_all(head.as_bytes()).await.is_err() {
                        continue;
                    }
                    while stream.write_all(b"x").await.is_ok() {
                        tokio::time::sleep(Duration::from_secs(2)).await;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        })
        .collect()
}

fn address_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://").parse().expect("address")
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[test]
fn slow_bodies_leave_the_probes_and_a_reviewer_answered_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    let (desk, _topics) = desk_with_items(dir.path(), "desk-slow", 40);
    let rt = support::runtime();
    let reviewer = rt.block_on(Reviewer::log_in(&desk.url, ANN));
    let host = address_of(&desk.url);
    // A login declaring more than a login may carry is refused from its head; one declaring
    // less dribbles until the body's deadline. Both, from 64 and then 200 connections.
    for (clients, declared) in [(64, 60_000), (64, 900), (200, 900)] {
        let head = format!(
            "POST /api/login HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Content-Length: {declared}\r\n\r\n{{\"token\":\""
        );
        let attack = slow_bodies(&rt, host, clients, head);
        std::thread::sleep(Duration::from_secs(3));
        let probe = client_from("127.0.0.1");
        let mut health = Vec::new();
        let mut answers = Vec::new();
        for _ in 0..10 {
            let started = Instant::now();
            let status = rt
                .block_on(async { probe.get(format!("{}/healthz", desk.url)).send().await })
                .expect("healthz")
                .status();
            health.push(started.elapsed());
            assert_eq!(status, 200);
            answers.push(rt.block_on(reviewer.answer_next()));
            std::thread::sleep(Duration::from_millis(300));
        }
        for task in attack {
            task.abort();
        }
        let (health, answer) = (median(health), median(answers));
        eprintln!(
            "{clients} slow bodies declaring {declared} bytes: /healthz {health:?}, an answer \
             {answer:?} (medians of 10)"
        );
        assert!(health < Duration::from_millis(100), "{health:?}");
        assert!(answer < Duration::from_millis(100), "{answer:?}");
    }
}

#[test]
fn wrong_tokens_are_slowed_counted_and_logged_and_other_addresses_log_in() {
    let dir = tempfile::tempdir().expect("dir");
    let (desk, _topics) = desk_with_items(dir.path(), "desk-guess", 1);
    let rt = support::runtime();
    let attacker = client_from(ATTACKER);
    let (mut refused, mut slowed, mut over_budget) = (0, 0, 0);
    for guess in 0..1000 {
        let response = rt
            .block_on(async {
                attacker
                    .get(format!("{}/api/next", desk.url))
                    .bearer_auth(format!("guess-{guess:016}"))
                    .send()
                    .await
            })
            .expect("guess");
        let status = response.status().as_u16();
        let said = rt
            .block_on(async { response.text().await })
            .unwrap_or_default();
        match status {
            401 => refused += 1,
            // Slowed for its wrong tokens, or for its requests' rate (the address's budget).
            429 if said.contains("wrong tokens") => slowed += 1,
            429 => over_budget += 1,
            other => panic!("a guess answered {other}"),
        }
    }
    eprintln!(
        "1000 wrong tokens: {refused} checked (401), {slowed} not checked for the wrong tokens \
         before them (429), {over_budget} over the address's request budget (429)"
    );
    assert_eq!(refused + slowed + over_budget, 1000);
    assert!(refused <= 20, "{refused} guesses were checked");
    let metrics = rt
        .block_on(async {
            client_from("127.0.0.1")
                .get(format!("{}/metrics", desk.url))
                .send()
                .await?
                .text()
                .await
        })
        .expect("metrics");
    assert!(
        metrics.contains(&format!("gorag_review_login_failures_total {refused}")),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!("gorag_review_logins_throttled_total {slowed}")),
        "{metrics}"
    );
    let log = std::fs::read_to_string(&desk.log).unwrap_or_default();
    assert!(log.contains("a wrong desk token"), "{log}");
    assert!(!log.contains("guess-0000"), "a token in the log");
    // The reviewer, from another address, is not held back.
    let reviewer = rt.block_on(Reviewer::log_in(&desk.url, ANN));
    assert_eq!(rt.block_on(reviewer.get("/api/whoami")).0, 200);
}

#[test]
fn sessions_end_at_logout_other_sites_are_refused_and_only_offered_items_are_answered() {
    let dir = tempfile::tempdir().expect("dir");
    let (desk, _topics) = desk_with_items(dir.path(), "desk-session", 3);
    let rt = support::runtime();
    let reviewer = rt.block_on(Reviewer::log_in(&desk.url, ANN));

    // Every item queued first (a text and its prediction are joined as they are read).
    let started = Instant::now();
    while rt.block_on(reviewer.get("/api/overview")).1["depth"] != 3 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the items never queued"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // An item never offered to ann: refused, whoever holds it.
    let (status, body) = rt.block_on(reviewer.post(
        "/api/answer",
        json!({"item": {"text": "h-002"}, "answer": {"label": "billing"}}),
    ));
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not offered"),
        "{body}"
    );

    // A write from another site's page, with ann's cookie: refused before it is read.
    let cross = rt
        .block_on(async {
            reviewer
                .client
                .post(format!("{}/api/skip", desk.url))
                .header("cookie", &reviewer.cookie)
                .header("origin", "http://evil.example")
                .header("content-type", "application/json")
                .body(json!({"item": {"text": "h-000"}}).to_string())
                .send()
                .await
        })
        .expect("cross-site");
    assert_eq!(cross.status(), 403);
    let sneaky = rt
        .block_on(async {
            reviewer
                .client
                .get(format!("{}/api/next", desk.url))
                .header("cookie", &reviewer.cookie)
                .header("sec-fetch-site", "same-site")
                .send()
                .await
        })
        .expect("same-site");
    assert_eq!(
        sneaky.status(),
        403,
        "another port of the same host claims nothing"
    );

    // Logout ends the session on the server: the same cookie names nobody.
    let (status, _) = rt.block_on(reviewer.post("/api/logout", json!({})));
    assert_eq!(status, 204);
    let (status, body) = rt.block_on(reviewer.get("/api/whoami"));
    assert_eq!(status, 401);
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("logged out"),
        "{body}"
    );
}

#[test]
fn hostile_label_ids_and_names_are_refused_by_the_desk() {
    let dir = tempfile::tempdir().expect("dir");
    let (desk, topics) = desk_with_items(dir.path(), "desk-ids", 0);
    let rt = support::runtime();
    rt.block_on(publish_privacy_proposal(&topics));
    let reviewer = rt.block_on(Reviewer::log_in(&desk.url, ANN));
    let started = Instant::now();
    loop {
        let (_, next) = rt.block_on(reviewer.get("/api/next"));
        if next["item"]["proposal"] == "p-privacy" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no proposal: {next}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let accept = |label: &str, name: &str| {
        json!({"item": {"proposal": "p-privacy"},
               "answer": {"accept": {"label": label, "name": name}}})
    };
    for (label, name) in [
        ("\"><img src=x onerror=alert(1)>", "Privacy"),
        ("pri\u{200B}vacy", "Privacy"),
        ("privacy\u{1b}[2J", "Privacy"),
        ("privacy", "\u{1b}]0;pwned\u{7}\u{1b}[2J"),
        ("privacy", "evil\u{202E}gnp.exe"),
    ] {
        let (status, body) = rt.block_on(reviewer.post("/api/answer", accept(label, name)));
        assert_eq!(status, 422, "{label:?} {name:?}: {body}");
    }
    // A decomposed "é" is the same id as a composed one: normalised, then taken.
    let (status, body) =
        rt.block_on(reviewer.post("/api/answer", accept("donne\u{301}es", "Données")));
    assert_eq!(status, 202, "{body}");
    let records = read_until(&topics.labels, Duration::from_secs(30), |records| {
        records
            .iter()
            .any(|r| r.json()["round"] == "accept-p-privacy")
    });
    let round = records
        .iter()
        .map(|r| r.json())
        .find(|event| event["round"] == "accept-p-privacy")
        .expect("the accepted round");
    assert_eq!(round["labels"][0]["id"], "donn\u{e9}es", "{round}");
}

#[test]
fn after_a_minute_of_bad_requests_a_reviewer_s_answer_still_takes_under_100_ms() {
    let dir = tempfile::tempdir().expect("dir");
    let (desk, _topics) = desk_with_items(dir.path(), "desk-flood", 30);
    let rt = support::runtime();
    let reviewer = rt.block_on(Reviewer::log_in(&desk.url, ANN));
    let before = rt.block_on(reviewer.answer_next());
    let url = desk.url.clone();
    let flooders: Vec<_> = (0..8)
        .map(|n| {
            let url = url.clone();
            rt.spawn(async move {
                let client = client_from(ATTACKER);
                let started = Instant::now();
                let mut sent = 0u64;
                while started.elapsed() < Duration::from_secs(60) {
                    let request = match (n + sent) % 6 {
                        0 => client.post(format!("{url}/api/login")).body("{\"token\":"),
                        1 => client
                            .get(format!("{url}/api/next"))
                            .bearer_auth("x".repeat(40)),
                        2 => client
                            .post(format!("{url}/api/answer"))
                            .header("content-type", "application/json")
                            .body("[".repeat(10_000)),
                        3 => client.get(format!("{url}/api/{}", "a".repeat(4000))),
                        4 => client
                            .post(format!("{url}/api/login"))
                            .header("content-type", "application/json")
                            .body(json!({"token": format!("wrong-{sent:020}")}).to_string()),
                        _ => client.get(format!("{url}/nothing-here")),
                    };
                    let _ = request.send().await;
                    sent += 1;
                }
                sent
            })
        })
        .collect();
    // Answers during the flood too, one every ten seconds.
    let mut during = Vec::new();
    loop {
        std::thread::sleep(Duration::from_secs(10));
        if flooders.iter().all(|task| task.is_finished()) {
            break;
        }
        during.push(rt.block_on(reviewer.answer_next()));
    }
    let sent: u64 = flooders
        .into_iter()
        .map(|task| rt.block_on(task).unwrap_or(0))
        .sum();
    let mut after = Vec::new();
    for _ in 0..5 {
        after.push(rt.block_on(reviewer.answer_next()));
    }
    let after = median(after);
    let slowest_during = during.iter().max().copied().unwrap_or_default();
    eprintln!(
        "a minute's flood of {sent} bad requests from one address: an answer took {before:?} \
         before, at most {slowest_during:?} during ({} answers), {after:?} after (median of 5)",
        during.len()
    );
    assert!(!during.is_empty());
    assert!(slowest_during < Duration::from_millis(500), "{during:?}");
    assert!(after < Duration::from_millis(100), "{after:?}");
}

#[test]
fn gorag_tail_prints_a_text_s_terminal_commands_as_escapes() {
    let topics = Topics::new("tail-controls");
    let hostile = "ticket\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}1m";
    // A raw record (JSON allows no raw control, a producer sends any bytes), and a prediction
    // whose label name carries the same.
    support::runtime().block_on(publish(
        &topics.texts,
        &[(
            Some("t-1"),
            format!("{{\"id\":\"t-1\",\"text\":\"{hostile}\"}}").into_bytes(),
        )],
    ));
    for format in ["raw", "json"] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_gorag"))
            .args([
                "tail",
                "--brokers",
                &support::kafka::brokers(),
                "--topic",
                &topics.texts,
            ])
            .args([
                "--from-beginning",
                "--count",
                "1",
                "--idle-timeout",
                "20",
                "--format",
                format,
            ])
            .output()
            .expect("gorag tail");
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            !stdout.contains('\u{1b}'),
            "{format}: a raw ESC reached the terminal"
        );
        assert!(
            !stdout.contains('\u{9b}') && !stdout.contains('\u{7}'),
            "{format}"
        );
        // Shown, escaped: `\u{1b}` by gorag, or `\u001b` where JSON escaped it first.
        assert!(
            stdout.contains("1b}]0;pwned") || stdout.contains("\\u001b]0;pwned"),
            "{format}: {stdout}"
        );
    }
}
