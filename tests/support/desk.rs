#![allow(dead_code)] // each test binary uses its own subset
//! `gorag review` as a child process on the real broker, and a reviewer's HTTP client.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::kafka::Topics;

/// A prediction as the service writes it, for a text the test made up.
pub fn prediction(id: &str, status: &str, label: Option<&str>) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "version": 3, "text_id": id, "label": label, "source": "graph",
        "candidates": ["billing", "shipping", "account_access"],
        "candidate_scores": [0.41, 0.38, 0.1], "basis": "ranked_scores", "confidence": 0.42,
        "status": status, "keywords": [], "hallucination": false, "label_version": 1,
        "latency": {"decode_ms": 0.0, "keywords_ms": 0.0, "retrieve_ms": 0.0, "llm_ms": 0.0,
                    "index_ms": 0.0, "total_ms": 0.0},
        "input": {"topic": "texts", "partition": 0, "offset": 0}
    }))
    .expect("json")
}

/// A `needs_review` prediction held for open proposal `proposal` (version 4), as the service
/// writes one for a text that reads like the proposal.
pub fn held_prediction(id: &str, proposal: &str) -> Vec<u8> {
    let mut value: serde_json::Value =
        serde_json::from_slice(&prediction(id, "needs_review", Some("billing"))).expect("json");
    value["version"] = 4.into();
    value["proposal"] = serde_json::json!({"id": proposal, "name": "erase", "similarity": 0.61});
    serde_json::to_vec(&value).expect("json")
}

/// A text event.
pub fn text(id: &str, text: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"id": id, "text": text})).expect("json")
}

/// Texts waiting for review: each id's text (`text_of`) on the texts topic and a
/// `needs_review` prediction for it on the predictions topic.
pub async fn publish_waiting(
    topics: &super::kafka::Topics,
    ids: &[String],
    text_of: impl Fn(&str) -> String,
) {
    let texts: Vec<(Option<&str>, Vec<u8>)> = ids
        .iter()
        .map(|id| (Some(id.as_str()), text(id, &text_of(id))))
        .collect();
    let predictions: Vec<(Option<&str>, Vec<u8>)> = ids
        .iter()
        .map(|id| {
            (
                Some(id.as_str()),
                prediction(id, "needs_review", Some("billing")),
            )
        })
        .collect();
    super::kafka::publish(&topics.texts, &texts).await;
    super::kafka::publish(&topics.predictions, &predictions).await;
}

/// An open proposal of a class for requests to erase personal data (`p-privacy`), as the
/// service publishes one.
pub async fn publish_privacy_proposal(topics: &super::kafka::Topics) {
    let proposal = serde_json::json!({
        "proposal": "p-privacy", "revision": 1, "status": "open", "name": "erase personal data",
        "keywords": ["erase", "personal data"], "size": 5, "growth": 5, "cohesion": 0.5,
        "representatives": [
            {"text_id": "x-1", "excerpt": "Delete every piece of personal data you keep about me."},
            {"text_id": "x-2", "excerpt": "I withdraw my consent: erase my personal data now."}
        ]
    });
    let payload = serde_json::to_vec(&proposal).expect("json");
    super::kafka::publish(&topics.proposals, &[(Some("p-privacy"), payload)]).await;
}

/// Two reviewers' logins.
pub const ANN: &str = "ann-token-0123456789";
pub const BOB: &str = "bob-token-9876543210";

pub fn write_tokens(dir: &Path) -> PathBuf {
    let path = dir.join("tokens");
    std::fs::write(&path, format!("ann:{ANN}\nbob:{BOB}\n")).expect("tokens file");
    path
}

pub struct DeskProcess {
    child: Child,
    pub url: String,
    pub log: PathBuf,
}

impl DeskProcess {
    /// Start `gorag review` on `topics` with these extra `--set` flags; wait until it is ready.
    pub fn start(dir: &Path, topics: &Topics, sets: &[&str]) -> Self {
        let n = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
        let log = dir.join(format!("review-{n}.log"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_gorag"));
        command.arg("review");
        for set in topics.sets() {
            command.arg("--set").arg(set);
        }
        command
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--tokens-file")
            .arg(write_tokens(dir));
        for set in sets {
            command.arg("--set").arg(set);
        }
        let mut child = command
            .env("GORAG_LOG_FORMAT", "text")
            .env_remove("GORAG_CONFIG")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start gorag review");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let url = line
            .trim()
            .strip_prefix("review desk: ")
            .unwrap_or_else(|| {
                panic!(
                    "no address from gorag review ({line:?}):\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })
            .trim_end_matches('/')
            .to_string();
        let desk = Self { child, url, log };
        desk.wait_ready();
        desk
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        let client = reqwest::blocking_client();
        loop {
            let ready = client
                .get(format!("{}/readyz", self.url))
                .send()
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the desk was not ready within 60 s:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stop it at once (SIGKILL): nothing in memory survives.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for DeskProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Ask the desk for `token`'s next item until it is proposal `id`, skipping the texts served
/// before it; false when `limit` passes first.
pub fn skip_to_proposal(
    client: &reqwest::Blocking,
    url: &str,
    token: &str,
    id: &str,
    limit: Duration,
) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        let next = client.get(format!("{url}/api/next")).bearer(token).send();
        let item = next
            .ok()
            .and_then(|n| serde_json::from_str::<serde_json::Value>(&n.body).ok())
            .map(|n| n["item"].clone())
            .unwrap_or_default();
        if item["proposal"] == id {
            return true;
        }
        if let Some(text_id) = item["text_id"].as_str() {
            let skip = serde_json::json!({"item": {"text": text_id}});
            let _ = client
                .post(format!("{url}/api/skip"))
                .bearer(token)
                .json(&skip)
                .send();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// `token` accepts proposal `id` as label `label`, named `name`; the desk's answer (202 once
/// taken; published after the undo window).
pub fn accept_proposal(
    client: &reqwest::Blocking,
    url: &str,
    token: &str,
    (id, label, name): (&str, &str, &str),
) -> reqwest::Answer {
    let accept = serde_json::json!({"item": {"proposal": id},
                                    "answer": {"accept": {"label": label, "name": name}}});
    client
        .post(format!("{url}/api/answer"))
        .bearer(token)
        .json(&accept)
        .send()
        .expect("accept")
}

/// A tiny blocking HTTP client (reqwest's async one, driven on a runtime of its own).
pub mod reqwest {
    pub use ::reqwest::*;

    pub struct Blocking {
        client: ::reqwest::Client,
        runtime: tokio::runtime::Runtime,
    }

    pub fn blocking_client() -> Blocking {
        Blocking {
            client: ::reqwest::Client::new(),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
        }
    }

    pub struct Request<'a> {
        blocking: &'a Blocking,
        builder: ::reqwest::RequestBuilder,
    }

    impl Blocking {
        pub fn get(&self, url: String) -> Request<'_> {
            Request {
                blocking: self,
                builder: self.client.get(url),
            }
        }

        pub fn post(&self, url: String) -> Request<'_> {
            Request {
                blocking: self,
                builder: self.client.post(url),
            }
        }
    }

    pub struct Answer {
        status: StatusCode,
        pub body: String,
    }

    impl Answer {
        pub fn status(&self) -> StatusCode {
            self.status
        }
    }

    impl Request<'_> {
        pub fn bearer(self, token: &str) -> Self {
            Self {
                builder: self.builder.bearer_auth(token),
                ..self
            }
        }

        pub fn json(self, body: &serde_json::Value) -> Self {
            Self {
                builder: self
                    .builder
                    .header("content-type", "application/json")
                    .body(body.to_string()),
                ..self
            }
        }

        pub fn send(self) -> std::result::Result<Answer, ::reqwest::Error> {
            let builder = self.builder.timeout(std::time::Duration::from_secs(30));
            self.blocking.runtime.block_on(async move {
                let response = builder.send().await?;
                let status = response.status();
                let body = response.text().await?;
                Ok(Answer { status, body })
            })
        }
    }
}

/// The `correct` events on the labels topic, by text id (every one, repeats kept).
pub fn corrections(records: &[super::kafka::Record]) -> BTreeMap<String, Vec<serde_json::Value>> {
    let mut by_text: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for record in records {
        let event = record.json();
        if event["type"] == "correct" {
            let id = event["text_id"].as_str().unwrap_or_default().to_string();
            by_text.entry(id).or_default().push(event);
        }
    }
    by_text
}
