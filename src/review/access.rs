//! Who a request comes from, below the gate: the session cookie's name and how it is set and
//! read, and the budget of wrong tokens each address has (docs/guide/review.md, "Who may reach
//! the desk").

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::http::{header, HeaderMap, HeaderName};

use crate::telemetry::budget::Budget;
use crate::telemetry::connections::{seconds_to_wait, Refusal};

/// The login cookie's name.
pub const COOKIE: &str = "gorag_review";
/// Wrong tokens one address may try at once, and how fast it may try more after.
const WRONG_TOKENS_AT_ONCE: f64 = 10.0;
const WRONG_TOKENS_A_SECOND: f64 = 0.5;

/// Failed logins: a budget per address, and what they add up to.
#[derive(Debug)]
pub struct LoginGuard {
    budget: Budget,
    /// Wrong tokens checked.
    pub failed: AtomicU64,
    /// Token checks refused unchecked: the address had tried too many.
    pub throttled: AtomicU64,
}

impl Default for LoginGuard {
    fn default() -> Self {
        Self {
            budget: Budget::new(WRONG_TOKENS_A_SECOND, WRONG_TOKENS_AT_ONCE),
            failed: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
        }
    }
}

impl LoginGuard {
    /// Refused while `peer` has tried too many wrong tokens: checking one more would tell it
    /// whether that one is right.
    pub fn may_try(&self, peer: IpAddr) -> Result<(), Refusal> {
        self.budget.has(peer, Instant::now()).map_err(|wait| {
            self.throttled.fetch_add(1, Ordering::Relaxed);
            throttled(wait)
        })
    }

    /// A wrong token from `peer`: counted, logged, and spent from its budget.
    pub fn failed(&self, peer: IpAddr) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        if let Err(wait) = self.budget.spend(peer, Instant::now()) {
            tracing::warn!(address = %peer, wait_secs = wait.as_secs_f64(), "a wrong desk token; this address tried too many and waits");
        } else {
            tracing::warn!(address = %peer, "a wrong desk token");
        }
    }
}

fn throttled(wait: Duration) -> Refusal {
    Refusal::too_many(
        format!(
            "too many wrong tokens from this address: try again in {} s",
            seconds_to_wait(wait)
        ),
        wait,
    )
}

/// The client a request comes from: the TCP peer, or — behind a trusted proxy that names it
/// (`review.client_address_header`) — the last address in that header.
pub fn client_address(header: Option<&HeaderName>, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
    header
        .and_then(|name| headers.get_all(name).iter().next_back())
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.rsplit(',').next())
        .and_then(|last| last.trim().parse().ok())
        .unwrap_or(peer)
}

/// The session cookie's value, if the request has one.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
}

/// The `Set-Cookie` value of a new session (`Secure` when configured, or when the proxy in
/// front says the page was asked for over HTTPS).
pub fn session_set_cookie(secure_cookie: bool, headers: &HeaderMap, session: &str) -> String {
    let behind_tls = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|proto| proto.eq_ignore_ascii_case("https"));
    let secure = if secure_cookie || behind_tls {
        "; Secure"
    } else {
        ""
    };
    format!(
        "{COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        super::session::SESSION_SECONDS
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn wrong_tokens_are_counted_and_past_a_few_an_address_waits() {
        let guard = LoginGuard::default();
        let peer: IpAddr = "10.1.2.3".parse().unwrap();
        for _ in 0..10 {
            assert!(guard.may_try(peer).is_ok());
            guard.failed(peer);
        }
        let refused = guard.may_try(peer).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(refused.retry_after.is_some());
        assert!(guard.may_try("10.1.2.4".parse().unwrap()).is_ok());
        assert_eq!(guard.failed.load(Ordering::Relaxed), 10);
        assert_eq!(guard.throttled.load(Ordering::Relaxed), 1);
    }
}
