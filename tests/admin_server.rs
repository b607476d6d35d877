//! The admin port's bounds (docs/guide/bounds.md, "The admin server"), on a real socket: with
//! more half-sent requests than the connection cap, the oldest are closed and a health check is
//! answered at once; a half-sent request is closed after the header-read timeout; a large body
//! or head is refused.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gorag::config::{Layers, ServeConfig};
use gorag::telemetry::admin::{self, Health, Limits};
use gorag::telemetry::metrics::Metrics;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A request head with its last line missing: the server waits for the rest.
const HALF_SENT: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: gorag\r\n";

/// The admin server under limits set as a user sets them (`--set admin.…`), on a free port.
async fn start(sets: &[&str]) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let mut all = vec!["admin.listen=127.0.0.1:0".to_string()];
    all.extend(sets.iter().map(|s| s.to_string()));
    let config = ServeConfig::load(&Layers {
        sets: all,
        ..Layers::default()
    })
    .expect("configuration");
    let listener = admin::bind(&config.admin.listen).await.expect("bind");
    let address = listener.local_addr().expect("address");
    let server = tokio::spawn(admin::serve(
        listener,
        Arc::new(Health::default()),
        Arc::new(Metrics::new()),
        config.admin.limits(),
    ));
    (address, server)
}

async fn half_sent(address: std::net::SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(HALF_SENT).await.expect("write");
    stream
}

/// Send `request` and read until the server closes (a `Connection: close` request) or stops.
async fn exchange(address: std::net::SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

const HEALTH_CHECK: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: gorag\r\nConnection: close\r\n\r\n";

/// Whether the server closed `stream` within `wait` (end of stream, or reset).
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut rest = Vec::new();
    match tokio::time::timeout(wait, stream.read_to_end(&mut rest)).await {
        Ok(read) => read.map_or(true, |n| n == 0),
        Err(_) => false,
    }
}

#[tokio::test]
async fn more_half_sent_requests_than_the_cap_do_not_keep_a_health_check_from_its_answer() {
    // A header timeout far longer than the test: the answer cannot come from it.
    let cap = 4;
    let (address, server) = start(&[
        "admin.max_connections=4",
        "admin.header_read_timeout_secs=60",
    ])
    .await;
    // Three times the cap, held open.
    let mut held = Vec::new();
    for _ in 0..3 * cap {
        held.push(half_sent(address).await);
    }
    let started = Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(5), exchange(address, HEALTH_CHECK))
        .await
        .expect("the health check was answered");
    let waited = started.elapsed();
    assert_eq!(answer.lines().next(), Some("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("ok\n"), "{answer}");
    assert!(waited < Duration::from_secs(3), "answered in {waited:?}");
    // The server kept at most the cap open: the oldest were closed to make room — all but the
    // newest cap - 1 (the health check took the last slot) — and the newest are still open.
    let mut closed = Vec::new();
    for stream in &mut held {
        closed.push(closed_within(stream, Duration::from_millis(300)).await);
    }
    let expected: Vec<bool> = (0..3 * cap).map(|i| i < 2 * cap + 1).collect();
    assert_eq!(closed, expected);
    server.abort();
}

#[tokio::test]
async fn a_half_sent_request_is_closed_after_the_header_read_timeout() {
    let (address, server) = start(&["admin.header_read_timeout_secs=0.5"]).await;
    let mut stream = half_sent(address).await;
    let started = Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest))
        .await
        .expect("the server closed it");
    // Closed without an answer (hyper sends none on a header timeout), not before the timeout.
    assert!(read.map_or(true, |n| n == 0), "{rest:?}");
    assert!(started.elapsed() >= Duration::from_millis(450));
    // A kept-alive connection idle past the timeout is closed the same way.
    let mut kept = TcpStream::connect(address).await.expect("connect");
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: gorag\r\n\r\n")
        .await
        .expect("write");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), kept.read_to_end(&mut answer))
        .await
        .expect("the idle connection was closed");
    assert!(read.is_ok());
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200 OK"));
    server.abort();
}

#[tokio::test]
async fn a_large_body_or_head_is_refused() {
    let (address, server) = start(&[]).await;
    let body = exchange(
        address,
        b"GET /healthz HTTP/1.1\r\nHost: gorag\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        body.lines().next(),
        Some("HTTP/1.1 413 Payload Too Large"),
        "{body}"
    );
    let mut head = b"GET /healthz HTTP/1.1\r\nHost: gorag\r\nX-Padding: ".to_vec();
    head.extend(std::iter::repeat_n(b'a', 20_000));
    head.extend(b"\r\n\r\n");
    let answer = exchange(address, &head).await;
    assert_eq!(
        answer.lines().next(),
        Some("HTTP/1.1 431 Request Header Fields Too Large"),
        "{answer}"
    );
    server.abort();
}

#[test]
fn limits_out_of_range_are_refused_by_the_configuration() {
    for set in [
        "admin.max_connections=0",
        "admin.max_connections=10001",
        "admin.header_read_timeout_secs=0",
        "admin.header_read_timeout_secs=-1",
        "admin.header_read_timeout_secs=7200",
    ] {
        let error = ServeConfig::load(&Layers {
            sets: vec![set.to_string()],
            ..Layers::default()
        })
        .expect_err(set);
        let key = set.split('=').next().unwrap_or_default();
        assert!(error.to_string().contains(key), "{set}: {error}");
    }
    let defaults = ServeConfig::default().admin.limits();
    assert_eq!(defaults, Limits::default());
    assert_eq!(defaults.max_connections, 64);
    assert_eq!(defaults.header_read_timeout, Duration::from_secs(10));
}
