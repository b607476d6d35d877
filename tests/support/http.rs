#![allow(dead_code)] // each test binary uses its own subset
//! A plain HTTP/1.1 GET for the admin port, and an OTLP/HTTP (JSON) receiver on loopback.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// (status, body) of `GET http://address/path`.
pub fn get(address: &str, path: &str) -> (u16, String) {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return (0, String::new());
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A real OTLP/HTTP receiver (JSON encoding): every export request body, parsed.
pub struct OtlpReceiver {
    pub endpoint: String,
    exports: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl OtlpReceiver {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let exports = Arc::new(Mutex::new(Vec::new()));
        let sink = exports.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let sink = sink.clone();
                tokio::spawn(async move {
                    while let Some(body) = super::fake_llm::read_request(&mut stream).await {
                        if let Ok(value) = serde_json::from_str(&body) {
                            sink.lock().expect("lock").push(value);
                        }
                        let response = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                        if stream.write_all(response.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { endpoint, exports }
    }

    /// Every span received: (name, spanId, parentSpanId, duration ms, attributes as strings).
    pub fn spans(&self) -> Vec<Span> {
        let exports = self.exports.lock().expect("lock").clone();
        let mut spans = Vec::new();
        for export in exports {
            for resource in export["resourceSpans"].as_array().into_iter().flatten() {
                for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                    for span in scope["spans"].as_array().into_iter().flatten() {
                        let nanos = |field: &str| {
                            span[field]
                                .as_str()
                                .and_then(|s| s.parse::<u64>().ok())
                                .or_else(|| span[field].as_u64())
                                .unwrap_or(0)
                        };
                        let attributes = span["attributes"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|a| {
                                let value = &a["value"];
                                let text = value["stringValue"]
                                    .as_str()
                                    .map(str::to_string)
                                    .or_else(|| value["intValue"].as_str().map(str::to_string))
                                    .or_else(|| value["intValue"].as_i64().map(|v| v.to_string()))
                                    .unwrap_or_else(|| value.to_string());
                                (a["key"].as_str().unwrap_or_default().to_string(), text)
                            })
                            .collect();
                        spans.push(Span {
                            name: span["name"].as_str().unwrap_or_default().to_string(),
                            id: span["spanId"].as_str().unwrap_or_default().to_string(),
                            parent: span["parentSpanId"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                            trace: span["traceId"].as_str().unwrap_or_default().to_string(),
                            duration_ms: nanos("endTimeUnixNano")
                                .saturating_sub(nanos("startTimeUnixNano"))
                                as f64
                                / 1e6,
                            attributes,
                            service: resource["resource"]["attributes"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .find(|a| a["key"] == "service.name")
                                .and_then(|a| a["value"]["stringValue"].as_str())
                                .unwrap_or_default()
                                .to_string(),
                        });
                    }
                }
            }
        }
        spans
    }
}

#[derive(Debug, Clone)]
pub struct Span {
    pub name: String,
    pub id: String,
    pub parent: String,
    pub trace: String,
    pub duration_ms: f64,
    pub attributes: std::collections::HashMap<String, String>,
    pub service: String,
}
