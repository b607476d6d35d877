//! The HTTP/1 connections of the admin port and of the review desk, each under a bound
//! (docs/guide/bounds.md, "The admin server"): at most [`Limits::max_connections`] open at once
//! and [`Limits::max_connections_per_address`] from one client address — at a cap, a new
//! connection closes the oldest one that is not answering a request (a half-sent head or body,
//! an idle kept-alive connection, a client not reading its answer), or waits while every one
//! is —, a request's head within [`Limits::header_read_timeout`] (also the longest a kept-alive
//! connection idles), its body within [`Limits::body_read_timeout`], at most
//! [`Limits::requests_per_second_per_address`] requests a second from one address (twice that
//! in a burst), a connection's whole life within [`CONNECTION_MAX_LIFE`] and a read buffer of
//! [`MAX_READ_BUFFER`].
//!
//! A request is *answering* only once its body has arrived: until then it is a client still
//! talking, closable like any idle one. A [`Gate`] decides from the head alone — before one byte
//! of body is read — whether the request is taken and how large a body it may send (the desk
//! checks a login there). Closing the oldest idle connection rather than making the new one wait
//! is what keeps the probes and reviewers answered while someone holds stalled connections: a
//! probe's request is whole when it connects, and answered at once. `axum::serve` takes no
//! configuration (no header timeout, no cap), so connections are served here with hyper's own
//! HTTP/1 builder, as axum's documentation suggests for that need.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, request::Parts, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::{AbortHandle, JoinSet};
use tower::ServiceExt;

use super::budget::Budget;

/// The longest a connection lives, whatever it does. At this age it finishes the request it is
/// answering and closes; one still not done [`Limits::header_read_timeout`] later is dropped.
/// Prometheus and the kubelet send one short request per connection, or reconnect after an
/// idle `header_read_timeout`, so none of them comes near it.
pub const CONNECTION_MAX_LIFE: Duration = Duration::from_secs(60);

/// The largest request body on the admin port: its routes are GETs that read none, so a
/// declared larger body is answered 413.
pub const MAX_REQUEST_BODY: usize = 1024;

/// The read buffer of one connection (hyper's smallest allowed; its default is 408 KiB): a
/// request head longer than this is answered 431. Probes' and scrapers' heads are a few hundred
/// bytes.
pub const MAX_READ_BUFFER: usize = 8 * 1024;

/// After a failed accept (out of descriptors, say), the pause before the next one.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// At the cap with every connection answering, how long to wait before looking for an idle one
/// again (a connection falls idle without ending when its answer is done).
const ANSWERING_PAUSE: Duration = Duration::from_millis(10);

/// How many connections and requests, and how long a request's head and body may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections open at once from one client address.
    pub max_connections_per_address: usize,
    /// Requests a second from one client address (twice as many in a burst); past it, 429.
    pub requests_per_second_per_address: f64,
    /// From a connection's opening (or the end of its last answer) to the end of a request's
    /// head; past it the connection is closed.
    pub header_read_timeout: Duration,
    /// From the end of a request's head to the end of its body; past it, 408 and the
    /// connection closes.
    pub body_read_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 64,
            max_connections_per_address: 32,
            requests_per_second_per_address: 100.0,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(5),
        }
    }
}

/// The client address a request came from, in its extensions for the routes that want it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub IpAddr);

/// What a server decides from a request's head alone, before any of its body is read.
pub trait Gate: Send + Sync + 'static {
    /// The most body bytes this request may send, or the answer that refuses it at once. The
    /// gate may leave what it learned (who is asking) in the head's extensions.
    fn admit(&self, head: &mut Parts, peer: IpAddr) -> Result<usize, Refusal>;
}

/// A gate that takes every request, with a body of at most this many bytes.
pub struct BodiesUpTo(pub usize);

impl Gate for BodiesUpTo {
    fn admit(&self, _head: &mut Parts, _peer: IpAddr) -> Result<usize, Refusal> {
        Ok(self.0)
    }
}

/// An open connection: how to close it, where it comes from, and how many of its requests are
/// being answered.
struct Open {
    task: AbortHandle,
    peer: IpAddr,
    answering: Arc<AtomicUsize>,
}

impl Open {
    fn idle(&self) -> bool {
        self.answering.load(Ordering::Acquire) == 0
    }
}

/// Serve `app` on `listener` under `limits`, request bodies of at most [`MAX_REQUEST_BODY`]
/// bytes, until this future is dropped (which closes every open connection too).
pub async fn serve(listener: TcpListener, app: Router, limits: Limits) {
    serve_gated(
        listener,
        app,
        limits,
        Arc::new(BodiesUpTo(MAX_REQUEST_BODY)),
    )
    .await;
}

/// [`serve`], each request's head shown to `gate` first.
pub async fn serve_gated(listener: TcpListener, app: Router, limits: Limits, gate: Arc<dyn Gate>) {
    let cap = limits.max_connections.max(1);
    let per_address = limits.max_connections_per_address.clamp(1, cap);
    let rate = limits.requests_per_second_per_address;
    let budget = Arc::new(Budget::new(rate, 2.0 * rate));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_READ_BUFFER);
    let mut tasks = JoinSet::new();
    // In the order they were accepted: the front is the oldest.
    let mut open: VecDeque<Open> = VecDeque::new();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok((stream, address)) => (stream, address.ip()),
            Err(error) => {
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        while tasks.try_join_next().is_some() {}
        open.retain(|connection| !connection.task.is_finished());
        if !make_room(&mut open, |c| c.peer == peer, per_address) {
            // Every connection of this address is answering: this one waits for none of them.
            drop(stream);
            continue;
        }
        while open.len() >= cap {
            if !make_room(&mut open, |_| true, cap) {
                // Every one is answering a request (which takes microseconds): wait a moment
                // for one to finish or fall idle, then look again.
                let _ = tokio::time::timeout(ANSWERING_PAUSE, tasks.join_next()).await;
                open.retain(|connection| !connection.task.is_finished());
            }
        }
        let answering = Arc::new(AtomicUsize::new(0));
        let request = Requests {
            app: app.clone(),
            gate: gate.clone(),
            budget: budget.clone(),
            peer,
            body_read_timeout: limits.body_read_timeout,
            answering: answering.clone(),
        };
        let service = hyper::service::service_fn(move |incoming| {
            let request = request.clone();
            async move { Ok::<_, Infallible>(request.answer(incoming).await) }
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let grace = limits.header_read_timeout;
        let task = tasks.spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                ended = connection.as_mut() => {
                    if let Err(error) = ended {
                        tracing::debug!(%error, "connection ended");
                    }
                }
                () = tokio::time::sleep(CONNECTION_MAX_LIFE) => {
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(grace, connection).await;
                }
            }
        });
        open.push_back(Open {
            task,
            peer,
            answering,
        });
    }
}

/// Close the oldest idle connections among those `counted` until fewer than `cap` remain;
/// false when that cannot be done (every counted one is answering).
fn make_room(open: &mut VecDeque<Open>, counted: impl Fn(&Open) -> bool, cap: usize) -> bool {
    while open.iter().filter(|c| counted(c)).count() >= cap {
        match open.iter().position(|c| counted(c) && c.idle()) {
            Some(oldest_idle) => {
                if let Some(closed) = open.remove(oldest_idle) {
                    closed.task.abort();
                }
            }
            None => return false,
        }
    }
    true
}

/// What one connection's requests share.
#[derive(Clone)]
struct Requests {
    app: Router,
    gate: Arc<dyn Gate>,
    budget: Arc<Budget>,
    peer: IpAddr,
    body_read_timeout: Duration,
    answering: Arc<AtomicUsize>,
}

impl Requests {
    /// One request: the address's budget, the gate, the body under its deadline, and only then
    /// the route — counted as answering while it runs.
    async fn answer(self, request: hyper::Request<Incoming>) -> Response {
        let mut response = self.answer_unmarked(request).await;
        // No browser guesses a type for anything served here.
        response.headers_mut().insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        response
    }

    async fn answer_unmarked(self, request: hyper::Request<Incoming>) -> Response {
        if let Err(wait) = self.budget.spend(self.peer, Instant::now()) {
            return Refusal::too_many(
                format!(
                    "too many requests from this address: try again in {} s",
                    seconds_to_wait(wait)
                ),
                wait,
            )
            .into_response();
        }
        let (mut head, body) = request.into_parts();
        head.extensions.insert(Peer(self.peer));
        let most = match self.gate.admit(&mut head, self.peer) {
            Ok(most) => most,
            Err(refused) => return refused.into_response(),
        };
        let body = match read_body(&head, body, most, self.body_read_timeout).await {
            Ok(body) => body,
            Err(refused) => return refused.into_response(),
        };
        let _counted = Answering::start(self.answering.clone());
        let request = Request::from_parts(head, Body::from(body));
        match self.app.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// A request's whole body, of at most `most` bytes, within `deadline`.
async fn read_body(
    head: &Parts,
    body: Incoming,
    most: usize,
    deadline: Duration,
) -> Result<Bytes, Refusal> {
    let declared = head
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a request here carries at most {most} bytes"),
        )
    };
    if declared.is_some_and(|length| length > most as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(deadline, Limited::new(body, most).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.is::<LengthLimitError>() => Err(too_large()),
        Ok(Err(error)) => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("the request's body did not read: {error}"),
        )),
        Err(_) => Err(Refusal::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request's body did not arrive within {} s",
                deadline.as_secs_f64()
            ),
        )),
    }
}

/// A request refused before its route runs: answered `{"error": …}` with its status (and
/// `Retry-After` when waiting helps); the connection closes after it (what is left of an unread
/// body would be read as the next request).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub status: StatusCode,
    pub message: String,
    pub retry_after: Option<Duration>,
}

impl Refusal {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 429: try again after `wait`.
    pub fn too_many(message: impl Into<String>, wait: Duration) -> Self {
        Self {
            retry_after: Some(wait),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, message)
        }
    }
}

/// Whole seconds to wait, at least one.
pub fn seconds_to_wait(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message }).to_string();
        let mut response = (
            self.status,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CONNECTION, "close"),
            ],
            body,
        )
            .into_response();
        if let Some(wait) = self.retry_after {
            if let Ok(value) = HeaderValue::from_str(&seconds_to_wait(wait).to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        response
    }
}

/// One request being answered, counted while it lives.
struct Answering(Arc<AtomicUsize>);

impl Answering {
    fn start(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
