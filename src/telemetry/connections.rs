//! The admin port's HTTP/1 connections, each under a bound (docs/guide/bounds.md, "The admin
//! server"): at most [`Limits::max_connections`] open at once — at the cap, a new connection
//! closes the oldest one that is not answering a request (a half-sent head, an idle kept-alive
//! connection, a client not reading its answer), or waits while every one is —, a request's
//! head within [`Limits::header_read_timeout`] (also the longest a kept-alive connection
//! idles), a connection's whole life within [`CONNECTION_MAX_LIFE`], a request body of at most
//! [`MAX_REQUEST_BODY`] bytes and a read buffer of [`MAX_READ_BUFFER`].
//!
//! Closing the oldest idle connection rather than making the new one wait is what keeps the
//! probes answered while someone holds stalled connections: a probe's request is whole when it
//! connects, and answered at once. `axum::serve` takes no configuration (no header timeout, no
//! cap), so connections are served here with hyper's own HTTP/1 builder, as axum's
//! documentation suggests for that need.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::{AbortHandle, JoinSet};
use tower::ServiceExt;
use tower_http::limit::RequestBodyLimitLayer;

/// The longest a connection lives, whatever it does. At this age it finishes the request it is
/// answering and closes; one still not done [`Limits::header_read_timeout`] later is dropped.
/// Prometheus and the kubelet send one short request per connection, or reconnect after an
/// idle `header_read_timeout`, so none of them comes near it.
pub const CONNECTION_MAX_LIFE: Duration = Duration::from_secs(60);

/// The largest request body: the admin routes are GETs that read none, so a declared larger
/// body is answered 413.
pub const MAX_REQUEST_BODY: usize = 1024;

/// The read buffer of one connection (hyper's smallest allowed; its default is 408 KiB): a
/// request head longer than this is answered 431. Probes' and scrapers' heads are a few hundred
/// bytes.
pub const MAX_READ_BUFFER: usize = 8 * 1024;

/// After a failed accept (out of descriptors, say), the pause before the next one.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// How many connections, and how long a request's head may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// From a connection's opening (or the end of its last answer) to the end of a request's
    /// head; past it the connection is closed.
    pub header_read_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 64,
            header_read_timeout: Duration::from_secs(10),
        }
    }
}

/// An open connection: how to close it, and how many of its requests are being answered.
struct Open {
    task: AbortHandle,
    answering: Arc<AtomicUsize>,
}

impl Open {
    fn idle(&self) -> bool {
        self.answering.load(Ordering::Acquire) == 0
    }
}

/// Serve `app` on `listener` under `limits` until this future is dropped (which closes every
/// open connection too).
pub async fn serve(listener: TcpListener, app: Router, limits: Limits) {
    serve_bodies_up_to(listener, app, limits, MAX_REQUEST_BODY).await;
}

/// [`serve`], with request bodies of up to `max_body` bytes (a page's forms need more than a
/// probe's).
pub async fn serve_bodies_up_to(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    max_body: usize,
) {
    let app = app.layer(RequestBodyLimitLayer::new(max_body));
    let cap = limits.max_connections.max(1);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_READ_BUFFER);
    let mut tasks = JoinSet::new();
    // In the order they were accepted: the front is the oldest.
    let mut open: VecDeque<Open> = VecDeque::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                tracing::warn!(%error, "admin port: accepting a connection failed");
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        while tasks.try_join_next().is_some() {}
        open.retain(|connection| !connection.task.is_finished());
        while open.len() >= cap {
            if let Some(oldest_idle) = open.iter().position(Open::idle) {
                if let Some(closed) = open.remove(oldest_idle) {
                    closed.task.abort();
                }
            } else {
                // Every one is answering a request (which takes microseconds): wait for one.
                tasks.join_next().await;
                open.retain(|connection| !connection.task.is_finished());
            }
        }
        let answering = Arc::new(AtomicUsize::new(0));
        let count = answering.clone();
        let counting = ServiceExt::<Request<Incoming>>::map_future(app.clone(), move |answer| {
            let counted = Answering::start(count.clone());
            async move {
                let answer: Result<Response, Infallible> = answer.await;
                drop(counted);
                answer
            }
        });
        let service = TowerToHyperService::new(counting);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let grace = limits.header_read_timeout;
        let task = tasks.spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                ended = connection.as_mut() => {
                    if let Err(error) = ended {
                        tracing::debug!(%error, "admin connection ended");
                    }
                }
                () = tokio::time::sleep(CONNECTION_MAX_LIFE) => {
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(grace, connection).await;
                }
            }
        });
        open.push_back(Open { task, answering });
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
