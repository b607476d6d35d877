//! The desk's login sessions. Logging in with a token gives a cookie holding a random session
//! id, the session's end and the reviewer's name, signed (HMAC-SHA-256) with the digest of that
//! reviewer's token — never the token itself. So:
//! - a session ends on the server at its end time, whatever the browser keeps;
//! - logging out revokes its id on the server (remembered until the session would have ended,
//!   or until the desk restarts: docs/guide/review.md, "Sessions");
//! - removing a reviewer from the logins file, or changing their token, ends every session they
//!   have at once, on every desk, restarts included (the signature no longer verifies);
//! - a desk restart keeps every other session (nothing is kept but the logins file).

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::logins::Logins;
use super::queue::Reviewer;

/// How long a session lasts (a working day and some).
pub const SESSION_SECONDS: u64 = 12 * 3600;
/// The most logged-out sessions remembered at once; past it the one ending soonest is
/// forgotten first (it ends soon anyway).
const MOST_REVOKED: usize = 100_000;

type Signer = Hmac<Sha256>;

/// Why a session cookie does not name a reviewer, in the words the page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Ended {
    #[error("this is not a desk session: log in")]
    Malformed,
    #[error("your session has ended (sessions last 12 hours): log in again")]
    Expired,
    #[error("you logged out of this session: log in again")]
    LoggedOut,
    // One sentence for both: which names exist is not told to whoever sends a cookie.
    #[error(
        "your login was removed from this desk's logins file, or its token changed: log in \
         with a current token, or ask whoever runs the desk"
    )]
    Removed,
    #[error(
        "your login was removed from this desk's logins file, or its token changed: log in \
         with a current token, or ask whoever runs the desk"
    )]
    TokenChanged,
}

/// The sessions logged out before their end.
#[derive(Debug, Default)]
pub struct Sessions {
    revoked: Mutex<HashMap<[u8; 16], u64>>,
}

/// A session's parts as the cookie carries them.
struct Parts {
    id: [u8; 16],
    ends: u64,
    name: String,
    signature: Vec<u8>,
}

impl Sessions {
    /// A new session for `reviewer` (whose token digest is `key`), as the cookie's value.
    pub fn open(reviewer: &Reviewer, key: &[u8; 32], now_secs: u64) -> String {
        let id: [u8; 16] = rand::random();
        let ends = now_secs.saturating_add(SESSION_SECONDS);
        let name = b64().encode(reviewer.0.as_bytes());
        let signed = signed_part(&id, ends, &name);
        let signature = b64().encode(sign(key, &signed));
        format!("{signed}.{signature}")
    }

    /// The reviewer a cookie's value names, now.
    pub fn verify(&self, cookie: &str, logins: &Logins, now_secs: u64) -> Result<Reviewer, Ended> {
        let parts = parse(cookie).ok_or(Ended::Malformed)?;
        let reviewer = Reviewer(parts.name.clone());
        let signed = signed_part(&parts.id, parts.ends, &b64().encode(parts.name.as_bytes()));
        let mut known = false;
        let mut verified = false;
        // Every token of the name tried (a token being replaced may sit beside its successor);
        // each comparison in constant time. A reviewer's name with a signature by none of their
        // tokens: their token changed (or the cookie was forged, which reads the same).
        for key in logins.keys_of(&reviewer) {
            known = true;
            if let Ok(mut mac) = Signer::new_from_slice(key) {
                mac.update(signed.as_bytes());
                verified |= mac.verify_slice(&parts.signature).is_ok();
            }
        }
        if !known {
            return Err(Ended::Removed);
        }
        if !verified {
            return Err(Ended::TokenChanged);
        }
        if parts.ends <= now_secs {
            return Err(Ended::Expired);
        }
        if self.revoked().contains_key(&parts.id) {
            return Err(Ended::LoggedOut);
        }
        Ok(reviewer)
    }

    /// Log a session out. Only a session that verifies is revoked (a forged cookie could
    /// otherwise fill the set and push real logouts out), and it is remembered until its end,
    /// which is never more than a session's length away.
    pub fn revoke(&self, cookie: &str, logins: &Logins, now_secs: u64) {
        if self.verify(cookie, logins, now_secs).is_err() {
            return;
        }
        let Some(mut parts) = parse(cookie) else {
            return;
        };
        parts.ends = parts.ends.min(now_secs.saturating_add(SESSION_SECONDS));
        let mut revoked = self.revoked();
        revoked.retain(|_, ends| *ends > now_secs);
        if revoked.len() >= MOST_REVOKED {
            if let Some(soonest) = revoked.iter().min_by_key(|(_, e)| **e).map(|(id, _)| *id) {
                revoked.remove(&soonest);
            }
        }
        revoked.insert(parts.id, parts.ends);
    }

    fn revoked(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 16], u64>> {
        self.revoked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

fn signed_part(id: &[u8; 16], ends: u64, encoded_name: &str) -> String {
    format!("v1.{}.{ends}.{encoded_name}", b64().encode(id))
}

fn sign(key: &[u8; 32], signed: &str) -> Vec<u8> {
    match Signer::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(signed.as_bytes());
            mac.finalize().into_bytes().to_vec()
        }
        // HMAC takes a key of any length: this cannot happen.
        Err(_) => Vec::new(),
    }
}

fn parse(cookie: &str) -> Option<Parts> {
    // A cookie is short; anything long is not one of ours (and is not decoded).
    if cookie.len() > 512 {
        return None;
    }
    let mut fields = cookie.split('.');
    let (version, id, ends, name, signature) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    if version != "v1" || fields.next().is_some() {
        return None;
    }
    Some(Parts {
        id: b64().decode(id).ok()?.try_into().ok()?,
        ends: ends.parse().ok()?,
        name: String::from_utf8(b64().decode(name).ok()?).ok()?,
        signature: b64().decode(signature).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANN: &str = "0123456789abcdef0123";
    const BOB: &str = "fedcba9876543210fedc";

    fn logins(text: &str) -> Logins {
        Logins::parse(text).unwrap()
    }

    #[test]
    fn a_session_names_its_reviewer_until_it_ends_is_logged_out_or_its_login_changes() {
        let before = logins(&format!("ann:{ANN}\nbob:{BOB}\n"));
        let ann = Reviewer("ann".into());
        let key = *before.keys_of(&ann).next().unwrap();
        let sessions = Sessions::default();
        let now = 1_000_000;
        let cookie = Sessions::open(&ann, &key, now);
        assert!(!cookie.contains(ANN), "the token is never in the cookie");
        assert_eq!(sessions.verify(&cookie, &before, now), Ok(ann.clone()));
        let end = now + SESSION_SECONDS;
        assert_eq!(sessions.verify(&cookie, &before, end), Err(Ended::Expired));

        // Another session of the same reviewer is apart: logging one out leaves the other.
        let other = Sessions::open(&ann, &key, now);
        sessions.revoke(&cookie, &before, now);
        assert_eq!(
            sessions.verify(&cookie, &before, now),
            Err(Ended::LoggedOut)
        );
        assert_eq!(sessions.verify(&other, &before, now), Ok(ann.clone()));

        let removed = logins(&format!("bob:{BOB}\n"));
        assert_eq!(sessions.verify(&other, &removed, now), Err(Ended::Removed));
        let changed = logins(&format!("ann:{BOB}0\nbob:{ANN}0\n"));
        assert_eq!(
            sessions.verify(&other, &changed, now),
            Err(Ended::TokenChanged)
        );
    }

    #[test]
    fn a_tampered_or_foreign_cookie_names_nobody() {
        let both = logins(&format!("ann:{ANN}\nbob:{BOB}\n"));
        let sessions = Sessions::default();
        let ann = Reviewer("ann".into());
        let cookie = Sessions::open(&ann, both.keys_of(&ann).next().unwrap(), 10);
        // The name swapped for bob's, the signature kept: refused.
        let fields: Vec<&str> = cookie.split('.').collect();
        let as_bob = format!(
            "{}.{}.{}.{}.{}",
            fields[0],
            fields[1],
            fields[2],
            b64().encode("bob"),
            fields[4]
        );
        assert_eq!(
            sessions.verify(&as_bob, &both, 10),
            Err(Ended::TokenChanged)
        );
        // A later end written in: refused.
        let longer = format!(
            "{}.{}.99999999999.{}.{}",
            fields[0], fields[1], fields[3], fields[4]
        );
        assert_eq!(
            sessions.verify(&longer, &both, 10),
            Err(Ended::TokenChanged)
        );
        // A forged cookie with the session's id revokes nothing: the session still works.
        let forged = format!(
            "{}.{}.{}.{}.AAAA",
            fields[0],
            fields[1],
            u64::MAX,
            fields[3]
        );
        sessions.revoke(&forged, &both, 10);
        assert_eq!(sessions.verify(&cookie, &both, 10), Ok(ann.clone()));
        sessions.revoke(&cookie, &both, 10);
        assert_eq!(sessions.verify(&cookie, &both, 10), Err(Ended::LoggedOut));
        for junk in ["", "v1", ANN, "v2.a.b.c.d", &"x".repeat(10_000)] {
            assert_eq!(sessions.verify(junk, &both, 10), Err(Ended::Malformed));
        }
    }
}
