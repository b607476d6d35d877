//! The desk's gate: what every request must show before one byte of its body is read
//! (docs/guide/review.md, "Who may reach the desk"). A request to the API from another site is
//! refused; one that needs a login names its reviewer in its head (the session cookie, or a
//! bearer or basic token for scripts), or is answered 401 with the reason; wrong tokens from one
//! address are slowed — past a few, that address's token checks wait — counted and logged
//! (never the token).

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::{header, request::Parts, HeaderMap, Method, StatusCode};

use super::access::{client_address, session_cookie};
use super::logins::Logins;
use super::queue::Reviewer;
use super::session::Ended;
use super::web::{now_ms, Shared, MAX_BODY};
use crate::telemetry::connections::{Gate, Refusal};

/// A login request's body: a token in JSON.
const LOGIN_BODY: usize = 1024;

/// The gate in front of the desk's routes.
pub struct DeskGate(pub Arc<Shared>);

impl Gate for DeskGate {
    fn admit(&self, head: &mut Parts, peer: IpAddr) -> Result<usize, Refusal> {
        let shared = &self.0;
        let logins = shared.logins.now();
        shared.forget_removed_reviewers(&logins);
        let peer = client_address(shared.client_address_header.as_ref(), &head.headers, peer);
        let path = head.uri.path();
        if !path.starts_with("/api/") {
            // The page, the probes, /metrics: nothing to read.
            return Ok(0);
        }
        if from_another_site(&head.headers) {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "the desk's API answers its own page only, not requests from another site",
            ));
        }
        let body = if head.method == Method::POST {
            MAX_BODY
        } else {
            0
        };
        match path {
            "/api/login" => {
                shared.login_guard.may_try(peer)?;
                Ok(LOGIN_BODY)
            }
            // Logging out needs no valid session (an ended one may log out too).
            "/api/logout" => Ok(LOGIN_BODY),
            _ => {
                let reviewer = identify(shared, &logins, &head.headers, peer)?;
                head.extensions.insert(reviewer);
                Ok(body)
            }
        }
    }
}

/// A request the browser says comes from another site or origin (`Sec-Fetch-Site`, which every
/// current browser sends and a proxy does not rewrite); from an older browser without it, one
/// whose `Origin` is not the host it asks. Scripts that send neither header are not browsers,
/// and are let in.
fn from_another_site(headers: &HeaderMap) -> bool {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site")) {
        return !matches!(site, "same-origin" | "none");
    }
    match text(header::ORIGIN) {
        Some(origin) => {
            let origin_host = origin.split_once("://").map(|(_, host)| host);
            origin_host.is_none() || origin_host != text(header::HOST)
        }
        None => false,
    }
}

/// The reviewer a request's head names, or the refusal that says why it names none.
fn identify(
    shared: &Shared,
    logins: &Logins,
    headers: &HeaderMap,
    peer: IpAddr,
) -> Result<Reviewer, Refusal> {
    let unauthorised = |message: String| Refusal::new(StatusCode::UNAUTHORIZED, message);
    if let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let (scheme, credentials) = value.trim().split_once(' ').unwrap_or((value, ""));
        let credentials = credentials.trim();
        let found = if scheme.eq_ignore_ascii_case("bearer") {
            shared.login_guard.may_try(peer)?;
            logins.by_token(credentials).cloned()
        } else if scheme.eq_ignore_ascii_case("basic") {
            shared.login_guard.may_try(peer)?;
            basic(logins, credentials)
        } else {
            return Err(unauthorised(
                "the desk reads `Authorization: Bearer TOKEN` or `Basic`".into(),
            ));
        };
        return found.ok_or_else(|| {
            shared.login_guard.failed(peer);
            unauthorised("no reviewer has this token".into())
        });
    }
    let Some(cookie) = session_cookie(headers) else {
        return Err(unauthorised("log in first".into()));
    };
    shared
        .sessions
        .verify(&cookie, logins, now_ms() / 1000)
        .map_err(|ended: Ended| unauthorised(ended.to_string()))
}

fn basic(logins: &Logins, encoded: &str) -> Option<Reviewer> {
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())?;
    let (name, token) = decoded.split_once(':')?;
    logins.by_name_and_token(name, token).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    #[test]
    fn requests_from_another_site_are_told_apart_from_the_page_s_own_and_from_scripts() {
        let host = ("host", "desk.example:9470");
        assert!(!from_another_site(&headers(&[host])), "a script");
        assert!(!from_another_site(&headers(&[
            host,
            ("sec-fetch-site", "same-origin"),
            ("origin", "http://desk.example:9470"),
        ])));
        // Behind a proxy that rewrites Host, the browser's word counts.
        assert!(!from_another_site(&headers(&[
            ("host", "gorag-review:9470"),
            ("sec-fetch-site", "same-origin"),
            ("origin", "https://desk.example"),
        ])));
        for other in [
            [host, ("sec-fetch-site", "cross-site"), ("x", "y")],
            [host, ("sec-fetch-site", "same-site"), ("x", "y")],
            [host, ("origin", "http://desk.example:8080"), ("x", "y")],
            [host, ("origin", "null"), ("x", "y")],
        ] {
            assert!(from_another_site(&headers(&other)), "{other:?}");
        }
    }
}
