//! The desk's HTTP side (axum): the page, its small JSON API, `/metrics`, `/healthz` and
//! `/readyz`. Every route that shows or takes an item needs a login (texts may be personal
//! data); the page itself holds no data, only the script that asks for it. An answer's way
//! from the page to the topics is in [`answers`].

pub mod answers;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use axum::extract::{Extension, FromRequest, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};

use super::access::{client_address, session_cookie, session_set_cookie, LoginGuard, COOKIE};
use super::desk::Desk;
use super::logins::{LiveLogins, Logins};
use super::queue::{ItemKey, Millis, Reviewer};
use super::session::Sessions;
use super::undo::Pending;
use crate::broker::commands::CommandProducer;
use crate::telemetry::connections::Peer;

/// The largest request body taken (an accepted proposal's name and description).
pub const MAX_BODY: usize = 64 * 1024;

const PAGE: &str = include_str!("page.html");

/// Where the desk publishes answers.
pub struct Outlet {
    pub producer: CommandProducer,
    pub labels_topic: String,
    pub proposals_topic: String,
}

/// What every request shares.
pub struct Shared {
    pub desk: Mutex<Desk>,
    pub logins: LiveLogins,
    pub outlet: Outlet,
    /// The desk has read its topics up to where they ended at its start: until then it could
    /// offer an item whose answer it has not read yet.
    pub ready: AtomicBool,
    /// Records of the desk's topics that were not the event they should be (skipped).
    pub unreadable: AtomicU64,
    pub secure_cookie: bool,
    /// The header a trusted proxy puts the client's address in (`review.client_address_header`).
    pub client_address_header: Option<axum::http::HeaderName>,
    /// Sessions logged out before their end.
    pub sessions: Sessions,
    /// Wrong tokens, by address.
    pub login_guard: LoginGuard,
    /// The logins last seen, to notice a reviewer removed.
    pub logins_seen: Mutex<Option<Arc<Logins>>>,
    /// Answers waiting out their undo window.
    pub pending: Pending,
}

impl Shared {
    /// A desk over `desk`, before it has read its topics.
    pub fn new(desk: Desk, logins: LiveLogins, outlet: Outlet, secure_cookie: bool) -> Self {
        Self {
            desk: Mutex::new(desk),
            logins,
            outlet,
            ready: AtomicBool::new(false),
            unreadable: AtomicU64::new(0),
            secure_cookie,
            client_address_header: None,
            sessions: Sessions::default(),
            login_guard: LoginGuard::default(),
            logins_seen: Mutex::new(None),
            pending: Pending::default(),
        }
    }

    /// When the logins file has changed, the items held by reviewers it no longer names wait
    /// for the others at once.
    pub fn forget_removed_reviewers(&self, logins: &Arc<Logins>) {
        let mut seen = self
            .logins_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.as_ref().is_some_and(|seen| Arc::ptr_eq(seen, logins)) {
            return;
        }
        *seen = Some(logins.clone());
        drop(seen);
        self.desk()
            .forget_reviewers(|reviewer| logins.keys_of(reviewer).next().is_some());
    }

    pub fn desk(&self) -> MutexGuard<'_, Desk> {
        // A handler that panicked mid-change is a bug; the desk's state is still whole
        // (every change is one call), so keep serving.
        self.desk
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pub fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/login", post(login))
        .route("/api/logout", post(logout))
        .route("/api/whoami", get(whoami))
        .route("/api/next", get(next))
        .route("/api/answer", post(answers::answer))
        .route("/api/skip", post(skip))
        .route("/api/undo", post(answers::undo))
        .route("/api/labels", get(labels))
        .route("/api/overview", get(overview))
        .route("/metrics", get(metrics))
        // Browsers ask for it on every page: answered empty rather than 404.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(shared)
}

async fn page() -> Response {
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE).into_response();
    let headers = response.headers_mut();
    // The page runs only its own inline script (allowed by its hash), talks only to its own
    // origin, and may not be framed.
    if let Ok(policy) = HeaderValue::from_str(&content_security_policy()) {
        headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The page's Content-Security-Policy: its one inline script by its SHA-256, its inline styles.
fn content_security_policy() -> String {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let script = PAGE
        .split_once("<script>")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map_or("", |(script, _)| script);
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script));
    format!(
        "default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; \
         connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; \
         frame-ancestors 'none'"
    )
}

/// A request refused: its status and why, answered as JSON.
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Body {
            error: String,
        }
        (self.0, json(&Body { error: self.1 })).into_response()
    }
}

fn refusal(status: StatusCode, message: impl Into<String>) -> Refusal {
    Refusal(status, message.into())
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    refusal(status, message).into_response()
}

fn json<T: Serialize>(value: &T) -> ([(header::HeaderName, &'static str); 2], String) {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        serde_json::to_string(value).unwrap_or_else(|_| "{}".into()),
    )
}

/// A request's JSON body, read as `T`. A write from the page is JSON only, so a form on another
/// site cannot post one (the cookie is also `SameSite=Strict`): another content type is refused
/// (415) before the body is read. A body that cannot be read (413: past the extractor's limit;
/// the guard in front bounds it lower) or is not a request the desk reads (400) is refused
/// too, each with the desk's own error body.
struct JsonBody<T>(T);

impl<S: Send + Sync, T: for<'de> Deserialize<'de>> FromRequest<S> for JsonBody<T> {
    type Rejection = Refusal;

    async fn from_request(request: Request, state: &S) -> Result<Self, Refusal> {
        let is_json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !is_json {
            return Err(refusal(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send application/json",
            ));
        }
        let body = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| refusal(rejection.status(), rejection.body_text()))?;
        let read = serde_json::from_slice(&body).map_err(|e| {
            refusal(
                StatusCode::BAD_REQUEST,
                format!("not a request the desk reads: {e}"),
            )
        })?;
        Ok(Self(read))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginRequest {
    token: String,
}

async fn login(
    State(shared): State<Arc<Shared>>,
    Extension(Peer(peer)): Extension<Peer>,
    headers: HeaderMap,
    JsonBody(request): JsonBody<LoginRequest>,
) -> Response {
    let peer = client_address(shared.client_address_header.as_ref(), &headers, peer);
    let logins = shared.logins.now();
    let Some((reviewer, key)) = logins.by_token_with_key(request.token.trim()) else {
        shared.login_guard.failed(peer);
        return refuse(StatusCode::UNAUTHORIZED, "no reviewer has this token");
    };
    let session = Sessions::open(reviewer, key, now_ms() / 1000);
    let cookie = session_set_cookie(shared.secure_cookie, &headers, &session);
    let mut response = json(&WhoAmI {
        name: reviewer.0.clone(),
    })
    .into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// Ends the session on the server too: the same cookie, sent again, names nobody.
async fn logout(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(session) = session_cookie(&headers) {
        shared
            .sessions
            .revoke(&session, &shared.logins.now(), now_ms() / 1000);
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Ok(value) = HeaderValue::from_str(&format!(
        "{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
    )) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

#[derive(Serialize)]
struct WhoAmI {
    name: String,
}

async fn whoami(Extension(reviewer): Extension<Reviewer>) -> Response {
    json(&WhoAmI { name: reviewer.0 }).into_response()
}

#[derive(Serialize)]
struct Next {
    /// The item to answer; none when the queue holds nothing for this reviewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    item: Option<super::desk::ItemView>,
    /// Items waiting, held ones included.
    depth: usize,
}

async fn next(
    State(shared): State<Arc<Shared>>,
    Extension(reviewer): Extension<Reviewer>,
) -> Response {
    if let Some(refused) = not_ready(&shared) {
        return refused;
    }
    let now = now_ms();
    let mut desk = shared.desk();
    let item = desk.next_for(&reviewer, now);
    let depth = desk.gauges(now).depth;
    drop(desk);
    json(&Next { item, depth }).into_response()
}

/// What an answer or a skip is about.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum ItemRef {
    Text(String),
    Proposal(String),
}

impl From<ItemRef> for ItemKey {
    fn from(item: ItemRef) -> Self {
        match item {
            ItemRef::Text(id) => ItemKey::Text(id),
            ItemRef::Proposal(id) => ItemKey::Proposal(id),
        }
    }
}

/// Refused while the desk has not read its topics: it could take an answered item again.
fn not_ready(shared: &Shared) -> Option<Response> {
    (!shared.ready.load(Ordering::Acquire)).then(|| {
        refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "the desk is still reading its topics",
        )
    })
}

/// A request about one item (a skip, an undo).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemRequest {
    item: ItemRef,
}

async fn skip(
    State(shared): State<Arc<Shared>>,
    Extension(reviewer): Extension<Reviewer>,
    JsonBody(request): JsonBody<ItemRequest>,
) -> Response {
    let key = ItemKey::from(request.item);
    if let Some(refused) = not_ready(&shared) {
        return refused;
    }
    shared.desk().skip(&reviewer, &key);
    StatusCode::NO_CONTENT.into_response()
}

async fn labels(State(shared): State<Arc<Shared>>, Extension(_): Extension<Reviewer>) -> Response {
    let labels = shared.desk().active_labels();
    json(&labels).into_response()
}

/// What the page keeps current while it is open: the queue's depth and the active labels.
#[derive(Serialize)]
struct Overview {
    depth: usize,
    labels: Vec<super::desk::LabelView>,
}

async fn overview(
    State(shared): State<Arc<Shared>>,
    Extension(_): Extension<Reviewer>,
) -> Response {
    let desk = shared.desk();
    let overview = Overview {
        depth: desk.gauges(now_ms()).depth,
        labels: desk.active_labels(),
    };
    drop(desk);
    json(&overview).into_response()
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    if shared.ready.load(Ordering::Acquire) {
        "ready".into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "reading the topics").into_response()
    }
}

async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    let now = now_ms();
    let desk = shared.desk();
    let text = super::exposition::render(
        &desk.gauges(now),
        desk.tally(),
        shared.unreadable.load(Ordering::Relaxed),
        shared.ready.load(Ordering::Acquire),
        &shared.login_guard,
    );
    drop(desk);
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests;
