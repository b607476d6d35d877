//! A scripted OpenAI-compatible HTTP server on loopback, for what a real model cannot do on
//! demand: wrong answers, 429 with `retry-after`, 5xx, hangs, malformed JSON, empty answers,
//! answers of hundreds of megabytes.
//! It is a real HTTP/1.1 server on a real socket; each request takes the next scripted reply,
//! and the default reply once the script runs out.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Clone)]
#[allow(dead_code)] // each test binary uses its own subset
pub enum Reply {
    /// A normal chat completion whose answer is this text.
    Answer(String),
    /// An HTTP status with an OpenAI-style error body and optional `retry-after` seconds.
    Status(u16, Option<u64>),
    /// Accept the request and never answer (until the client gives up).
    Hang,
    /// 200 with a body that is not JSON.
    Malformed,
    /// 200 with an empty answer.
    Empty,
    /// 200 with an answer this many bytes long, written 64 KiB at a time as the client reads
    /// (never held whole); its length declared in `content-length`, or sent chunked.
    Huge { bytes: u64, declared: bool },
    /// This status with an error message quoting the request's `authorization` header (as a
    /// careless proxy might).
    EchoAuthorization(u16),
    /// Answer a classification prompt with its first class (an instant, agreeable model for
    /// throughput runs); any other prompt gets a short sentence.
    FirstCandidate,
    /// The same after a fixed delay: an LLM endpoint with a known latency.
    FirstCandidateAfter(Duration),
    /// A request for a label's description hangs; any other is answered as
    /// `FirstCandidateAfter` this delay.
    HangOnDescriptions(Duration),
    /// An endpoint of known quality: a classification prompt about one of these texts (text →
    /// its gold class's name) is answered with the gold class with probability `right` (the
    /// same draw for the same text every run), else with another listed class; the answer's
    /// first token carries log-probabilities, 0.8 on the answer. `right: None` answers a
    /// listed class uniformly at random.
    Oracle {
        gold: Arc<std::collections::HashMap<String, String>>,
        right: Option<f64>,
    },
    /// A misbehaving endpoint, the same way every run: request n gets `CHAOS[n % 20]`, mostly
    /// good answers with bursts of 429 (retry-after 1 s), 500s, hangs, malformed JSON, empty
    /// answers and answers naming no label.
    Chaos,
}

/// The chaos schedule (see [`Reply::Chaos`]): 12 good answers, 8 faults, per 20 requests.
const CHAOS: [&str; 20] = [
    "ok",
    "ok",
    "429",
    "429",
    "ok",
    "500",
    "ok",
    "hang",
    "ok",
    "ok",
    "malformed",
    "ok",
    "empty",
    "ok",
    "nonsense",
    "ok",
    "429",
    "ok",
    "500",
    "ok",
];

/// The first class listed by a classification prompt inside a chat request body.
fn first_candidate(body: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let user = value["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    // The paper's prompt lists the classes on one line ("…classes: a; b."); the ranked prompt
    // lists them one a line, best first ("- a: description" or "1. a").
    let inline = user
        .split_once("one of these classes: ")
        .and_then(|(_, rest)| rest.split(['\n', ';']).next())
        .map(|first| first.trim_end_matches('.').trim().to_string());
    let listed = || {
        user.lines()
            .map(str::trim_start)
            .find_map(|l| {
                l.strip_prefix("- ").or_else(|| {
                    l.split_once(". ")
                        .filter(|(n, _)| n.parse::<u32>().is_ok())
                        .map(|(_, rest)| rest)
                })
            })
            .map(|entry| entry.split(": ").next().unwrap_or(entry).trim().to_string())
    };
    inline
        .filter(|first| !first.is_empty())
        .or_else(listed)
        .unwrap_or_else(|| "A category of documents.".to_string())
}

pub struct FakeLlm {
    #[allow(dead_code)] // each test binary uses its own subset
    pub url: String,
    served: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<String>>>,
    heads: Arc<Mutex<Vec<String>>>,
    huge_sent: Arc<AtomicU64>,
}

#[allow(dead_code)]
impl FakeLlm {
    pub async fn start(default: Reply) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let served = Arc::new(Mutex::new(std::collections::BTreeMap::new()));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let huge_sent = Arc::new(AtomicU64::new(0));
        let (s, r, c, h, sent) = (
            script.clone(),
            requests.clone(),
            served.clone(),
            heads.clone(),
            huge_sent.clone(),
        );
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (s, r, c, d) = (s.clone(), r.clone(), c.clone(), default.clone());
                let (h, sent) = (h.clone(), sent.clone());
                tokio::spawn(async move { serve(stream, s, r, c, h, sent, d).await });
            }
        });
        Self {
            url,
            served,
            script,
            requests,
            heads,
            huge_sent,
        }
    }

    /// Bytes of `Huge` bodies the client took before it stopped reading (what the socket
    /// accepted).
    pub fn huge_bytes_sent(&self) -> u64 {
        self.huge_sent.load(Ordering::Relaxed)
    }

    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.lock().expect("lock").extend(replies);
    }

    /// How many replies of each kind were served (chaos mode counts its faults here).
    pub fn served(&self) -> std::collections::BTreeMap<String, u64> {
        self.served.lock().expect("lock").clone()
    }

    /// Heads (request line and headers) of the first requests received, the endpoint check's
    /// included.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("lock").clone()
    }

    /// Bodies of the requests received so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }
}

#[allow(dead_code)] // the HTTP helpers' stand-in servers read bodies only
pub async fn read_request(stream: &mut TcpStream) -> Option<String> {
    read_request_parts(stream).await.map(|(_, body)| body)
}

/// The next request's head (request line and headers) and body.
pub async fn read_request_parts(stream: &mut TcpStream) -> Option<(String, String)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buffer);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                let head = text[..end].to_string();
                let body = String::from_utf8_lossy(&buffer[end + 4..end + 4 + length]).into();
                return Some((head, body));
            }
        }
    }
}

/// The classes a classification prompt lists, in order.
fn listed_classes(body: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let user = value["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    user.lines()
        .map(str::trim_start)
        .filter_map(|l| l.strip_prefix("- "))
        .map(|entry| entry.split(": ").next().unwrap_or(entry).trim().to_string())
        .collect()
}

/// A deterministic draw in [0, 1) from a text (FNV-1a).
fn draw(text: &str, salt: u64) -> f64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// The oracle's answer to a request body, with its first token's alternatives.
fn oracle_answer(
    body: &str,
    gold: &std::collections::HashMap<String, String>,
    right: Option<f64>,
) -> String {
    let classes = listed_classes(body);
    let known = gold.iter().find(|(text, _)| body.contains(text.as_str()));
    let (Some((text, label)), false) = (known, classes.is_empty()) else {
        return completion("A category of documents.");
    };
    let others: Vec<&String> = classes.iter().filter(|c| *c != label).collect();
    let answer = match right {
        Some(p) if draw(text, 1) < p || others.is_empty() => label.clone(),
        Some(_) => others[(draw(text, 2) * others.len() as f64) as usize].clone(),
        None => classes[(draw(text, 3) * classes.len() as f64) as usize].clone(),
    };
    let rest = 0.2 / (classes.len().max(2) - 1) as f64;
    let alternatives: Vec<serde_json::Value> = classes
        .iter()
        .map(|c| {
            let p = if *c == answer { 0.8 } else { rest };
            serde_json::json!({"token": c, "logprob": p.ln(), "bytes": null})
        })
        .collect();
    let mut reply: serde_json::Value =
        serde_json::from_str(&completion(&answer)).unwrap_or_default();
    reply["choices"][0]["logprobs"] = serde_json::json!({
        "content": [{"token": answer, "logprob": (0.8f64).ln(), "bytes": null, "top_logprobs": alternatives}]
    });
    reply.to_string()
}

fn completion(answer: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": answer},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    })
    .to_string()
}

async fn serve(
    mut stream: TcpStream,
    script: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<String>>>,
    served: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
    heads: Arc<Mutex<Vec<String>>>,
    huge_sent: Arc<AtomicU64>,
    default: Reply,
) {
    // Keep-alive: answer requests on this connection until the client closes it.
    while let Some((head, body)) = read_request_parts(&mut stream).await {
        {
            let mut heads = heads.lock().expect("lock");
            if heads.len() < 100 {
                heads.push(head.clone());
            }
        }
        // gorag's check at start is answered apart: it takes no scripted reply and is not
        // counted, so a script means the same with or without it.
        if body.contains(gorag::llm::ENDPOINT_CHECK) {
            let body = completion("ok");
            let response = format!(
                "HTTP/1.1 200 X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            if stream.write_all(response.as_bytes()).await.is_err() {
                return;
            }
            continue;
        }
        let first = first_candidate(&body);
        let describing = body.contains("Describe the category");
        let n = {
            let mut requests = requests.lock().expect("lock");
            // Long runs keep only a count, not every body.
            if requests.len() < 10_000 {
                requests.push(body.clone());
            }
            served.lock().expect("lock").values().sum::<u64>()
        };
        let mut reply = script
            .lock()
            .expect("lock")
            .pop_front()
            .unwrap_or(default.clone());
        let kind = match &reply {
            Reply::Chaos => CHAOS[(n % CHAOS.len() as u64) as usize],
            _ => "scripted",
        };
        *served
            .lock()
            .expect("lock")
            .entry(kind.to_string())
            .or_default() += 1;
        if matches!(reply, Reply::Chaos) {
            reply = match kind {
                "429" => Reply::Status(429, Some(1)),
                "500" => Reply::Status(500, None),
                "hang" => Reply::Hang,
                "malformed" => Reply::Malformed,
                "empty" => Reply::Empty,
                "nonsense" => Reply::Answer("the moon landing".into()),
                _ => Reply::FirstCandidate,
            };
        }
        if let Reply::HangOnDescriptions(delay) = reply {
            reply = if describing {
                Reply::Hang
            } else {
                Reply::FirstCandidateAfter(delay)
            };
        }
        let (status, extra, body) = match reply {
            Reply::Oracle { gold, right } => (200, String::new(), oracle_answer(&body, &gold, right)),
            Reply::Answer(text) => (200, String::new(), completion(&text)),
            Reply::Empty => (200, String::new(), completion("")),
            Reply::FirstCandidate | Reply::Chaos => (200, String::new(), completion(&first)),
            Reply::FirstCandidateAfter(delay) => {
                tokio::time::sleep(delay).await;
                (200, String::new(), completion(&first))
            }
            Reply::Malformed => (200, String::new(), "{not json".to_string()),
            Reply::EchoAuthorization(code) => {
                let authorization = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("authorization")
                            .then(|| value.trim().to_string())
                    })
                    .unwrap_or_default();
                let message = format!("Incorrect API key provided: {authorization}");
                (
                    code,
                    String::new(),
                    serde_json::json!({"error": {"message": message, "type": "fake"}}).to_string(),
                )
            }
            Reply::Status(code, retry_after) => (
                code,
                retry_after
                    .map(|s| format!("retry-after: {s}\r\n"))
                    .unwrap_or_default(),
                serde_json::json!({"error": {"message": format!("scripted {code}"), "type": "fake"}})
                    .to_string(),
            ),
            Reply::Hang | Reply::HangOnDescriptions(_) => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Reply::Huge { bytes, declared } => {
                if write_huge(&mut stream, bytes, declared, &huge_sent)
                    .await
                    .is_err()
                {
                    return;
                }
                continue;
            }
        };
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n{body}",
            body.len()
        );
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A completion whose answer is `bytes` of `a`, streamed: the JSON around it, the answer 64 KiB
/// at a time. Counts what the socket took into `sent`; fails once the client hangs up.
async fn write_huge(
    stream: &mut TcpStream,
    bytes: u64,
    declared: bool,
    sent: &AtomicU64,
) -> std::io::Result<()> {
    let template = completion("@@answer@@");
    let (before, after) = template.split_once("@@answer@@").unwrap_or((&template, ""));
    let total = before.len() as u64 + bytes + after.len() as u64;
    let head = if declared {
        format!(
            "HTTP/1.1 200 X\r\ncontent-type: application/json\r\ncontent-length: {total}\r\n\r\n"
        )
    } else {
        "HTTP/1.1 200 X\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_string()
    };
    stream.write_all(head.as_bytes()).await?;
    let piece = |data: &[u8]| -> Vec<u8> {
        if declared {
            data.to_vec()
        } else {
            let mut framed = format!("{:x}\r\n", data.len()).into_bytes();
            framed.extend_from_slice(data);
            framed.extend_from_slice(b"\r\n");
            framed
        }
    };
    stream.write_all(&piece(before.as_bytes())).await?;
    let block = vec![b'a'; 64 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        stream.write_all(&piece(&block[..n])).await?;
        sent.fetch_add(n as u64, Ordering::Relaxed);
        left -= n as u64;
    }
    stream.write_all(&piece(after.as_bytes())).await?;
    if !declared {
        stream.write_all(b"0\r\n\r\n").await?;
    }
    Ok(())
}
