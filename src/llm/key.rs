//! The LLM API key: a type that never prints it, and the rule that it is sent in clear text only
//! to this machine (or where the operator explicitly says the network is trusted).

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use reqwest::Url;

/// An API key that never shows up in logs, errors or debug output: both `{}` and `{:?}` print
/// `***` (or `<none>` when there is no key).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The key itself, for the `Authorization` header only.
    pub(super) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every copy of the key replaced by `***` (an endpoint's error message may
    /// quote the header it refused).
    pub fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "***")
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "<none>" } else { "***" })
    }
}

/// Why a key may not go to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyTransportError {
    #[error(
        "the LLM API key would be sent unencrypted over plain http to {endpoint}, which is not \
         this machine: use an https:// URL for llm.url (--llm), or, if the network path to it \
         is trusted, say so with llm.allow_insecure_key = true (--llm-allow-insecure-key)"
    )]
    PlainHttp { endpoint: String },
    #[error("llm.url {endpoint} is not a URL gorag can send a key to: {reason}")]
    Unparsable { endpoint: String, reason: String },
}

/// Whether a key may be sent to `url`: always over https, over http only to a loopback host
/// (127.0.0.0/8, ::1, `localhost`), else only with `allow_insecure`.
pub fn check_key_transport(url: &str, allow_insecure: bool) -> Result<(), KeyTransportError> {
    let parsed = Url::parse(url).map_err(|e| KeyTransportError::Unparsable {
        endpoint: shown(url),
        reason: e.to_string(),
    })?;
    if parsed.scheme() != "http" || allow_insecure || is_loopback(&parsed) {
        return Ok(());
    }
    Err(KeyTransportError::PlainHttp {
        endpoint: shown(url),
    })
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    // An IPv6 host comes bracketed (`[::1]`).
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(IpAddr::V6(ip)) => ipv6_loopback(ip),
        Err(_) => host.trim_end_matches('.').eq_ignore_ascii_case("localhost"),
    }
}

fn ipv6_loopback(ip: Ipv6Addr) -> bool {
    ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
}

/// An endpoint as error texts show it: scheme, host and port only — never a user name,
/// password or query a URL may carry — and bounded.
pub fn shown(url: &str) -> String {
    match Url::parse(url) {
        Ok(parsed) => {
            let host = parsed.host_str().unwrap_or("");
            match parsed.port() {
                Some(port) => format!("{}://{host}:{port}", parsed.scheme()),
                None => format!("{}://{host}", parsed.scheme()),
            }
        }
        Err(_) => {
            let clipped: String = url.chars().take(80).collect();
            // Up to an `@` it may be credentials: keep only what follows.
            let tail = clipped.rsplit('@').next().unwrap_or("");
            format!("{tail:?}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_never_prints() {
        let key = ApiKey::new("sk-very-secret");
        assert_eq!(format!("{key}"), "***");
        assert_eq!(format!("{key:?}"), "***");
        assert_eq!(format!("{:?}", ApiKey::default()), "<none>");
        assert_eq!(
            key.scrub("Incorrect API key provided: sk-very-secret."),
            "Incorrect API key provided: ***."
        );
        assert_eq!(ApiKey::default().scrub("x"), "x");
    }

    #[test]
    fn plain_http_is_for_loopback_hosts_only() {
        for ok in [
            "https://api.openai.com/v1",
            "https://10.0.0.1/v1",
            "http://127.0.0.1:8080/v1",
            "http://127.3.4.5/v1",
            "http://localhost:11434/v1",
            "http://LOCALHOST./v1",
            "http://[::1]:8000/v1",
            "http://[::ffff:127.0.0.1]:8000/v1",
        ] {
            assert_eq!(check_key_transport(ok, false), Ok(()), "{ok}");
        }
        for refused in [
            "http://10.0.0.1/v1",
            "http://llm:8080/v1",
            "http://localhost.example.com/v1",
            "http://128.0.0.1/v1",
            "http://[::2]/v1",
            "http://0.0.0.0:8080/v1",
        ] {
            let error = check_key_transport(refused, false).expect_err(refused);
            assert!(matches!(error, KeyTransportError::PlainHttp { .. }));
            assert!(error.to_string().contains("llm.allow_insecure_key = true"));
            assert_eq!(check_key_transport(refused, true), Ok(()), "{refused}");
        }
    }

    #[test]
    fn errors_show_no_credentials_of_a_url() {
        let error = check_key_transport("http://user:pass@10.0.0.1:8000/v1?key=abc", false)
            .expect_err("plain http")
            .to_string();
        assert!(error.contains("http://10.0.0.1:8000"), "{error}");
        assert!(!error.contains("pass") && !error.contains("abc"), "{error}");
        let error = check_key_transport("not a url user:pass@host", false)
            .expect_err("unparsable")
            .to_string();
        assert!(!error.contains("pass"), "{error}");
    }
}
