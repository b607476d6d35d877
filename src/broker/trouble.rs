//! Why the brokers cannot be reached, as librdkafka last said it, and which kind of trouble that
//! is: one that may pass (a broker away, a name not resolved yet) or one that will not pass by
//! waiting (a refused login, an untrusted certificate, a TLS client on a plaintext port), which
//! `gorag serve` and the commands report at once with the setting that fixes it.

use rdkafka::error::{KafkaError, RDKafkaErrorCode};

/// The kinds of broker trouble gorag tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TroubleKind {
    /// Refused, not resolved, timed out: it may pass.
    Unreachable,
    /// The broker refused the SASL login (user, password or mechanism).
    LoginRefused,
    /// The broker's certificate is not signed by a CA this client trusts.
    BrokerCertificateUntrusted,
    /// The broker refused this client's certificate (mTLS), or wanted one and got none.
    ClientCertificateRefused,
    /// This client speaks TLS to a listener that does not.
    ListenerNotTls,
    /// The broker closed a plaintext connection at once, as a TLS or SASL listener does.
    ListenerWantsSecurity,
    /// Another TLS handshake failure.
    TlsHandshake,
}

impl TroubleKind {
    /// Waiting will not help: report it now.
    pub fn is_settled(self) -> bool {
        !matches!(self, Self::Unreachable | Self::TlsHandshake)
    }

    /// The settings that fix it.
    pub fn fix(self) -> &'static str {
        match self {
            Self::Unreachable => {
                "check the broker address (kafka.brokers) and that the broker is reachable \
                 from here"
            }
            Self::LoginRefused => {
                "the broker refused the login: check kafka.sasl.mechanism (the cluster's: \
                 SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN), kafka.sasl.username and the password \
                 in kafka.sasl.password_file (or $GORAG_KAFKA_SASL_PASSWORD; or the sasl.* \
                 properties under kafka.client, where they are set), and that the user exists \
                 on the cluster for that mechanism"
            }
            Self::BrokerCertificateUntrusted => {
                "the broker's certificate is not signed by a CA this client trusts: set \
                 kafka.tls.ca_file to the PEM file of the CA that signed it (the cluster's CA \
                 certificate); if it is signed but names another host, give kafka.brokers the \
                 name the certificate carries"
            }
            Self::ClientCertificateRefused => {
                "the broker refused this client's certificate (mTLS): kafka.tls.cert_file must \
                 be signed by a CA the broker trusts and kafka.tls.key_file must be its private \
                 key (kafka.tls.key_password_file when the key is encrypted)"
            }
            Self::ListenerNotTls => {
                "the broker's listener does not speak TLS: give kafka.brokers the cluster's TLS \
                 port, or set kafka.security_protocol to \"plaintext\" (\"sasl_plaintext\") if \
                 this listener is meant to be unencrypted"
            }
            Self::ListenerWantsSecurity => {
                "the broker closed the connection at once, as a TLS or SASL listener does to a \
                 plaintext client: set kafka.security_protocol (\"ssl\" or \"sasl_ssl\") and \
                 [kafka.tls] / [kafka.sasl] as the cluster requires"
            }
            Self::TlsHandshake => {
                "the TLS handshake failed: check kafka.security_protocol, kafka.tls.ca_file and \
                 that kafka.brokers names the cluster's TLS port"
            }
        }
    }

    /// The kind of a librdkafka error code and its text.
    pub fn of(code: RDKafkaErrorCode, reason: &str) -> Self {
        let reason = reason.to_ascii_lowercase();
        // OpenSSL's own words, wherever librdkafka met them (the handshake, or a receive after
        // it: TLS 1.3 servers refuse a client certificate after the client thinks it is done).
        let tls_failure = reason.contains("ssl handshake failed")
            || reason.contains("ssl transport error")
            || reason.contains("ssl routines")
            || reason.contains("ssl alert number")
            || reason.contains("certificate verify failed");
        match code {
            _ if tls_failure => Self::of_tls(&reason),
            RDKafkaErrorCode::Authentication | RDKafkaErrorCode::SaslAuthenticationFailed => {
                Self::LoginRefused
            }
            RDKafkaErrorCode::SSL => Self::of_tls(&reason),
            _ if reason.contains("incorrect security.protocol") => Self::ListenerWantsSecurity,
            _ => Self::Unreachable,
        }
    }

    /// A TLS failure's kind, from OpenSSL's words.
    fn of_tls(reason: &str) -> Self {
        if reason.contains("certificate verify failed") {
            Self::BrokerCertificateUntrusted
        } else if reason.contains("alert")
            && (reason.contains("certificate") || reason.contains("unknown ca"))
        {
            Self::ClientCertificateRefused
        } else if reason.contains("plaintext broker listener")
            || reason.contains("wrong version number")
            || reason.contains("packet length too long")
            || reason.contains("record layer failure")
        {
            Self::ListenerNotTls
        } else {
            Self::TlsHandshake
        }
    }
}

/// librdkafka's last word on why the brokers cannot be reached, and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trouble {
    pub kind: TroubleKind,
    pub reason: String,
}

/// Process-wide: every client of the process talks to the same brokers, and librdkafka reports
/// the reason only to the client that met it.
static BROKER_TROUBLE: std::sync::Mutex<Option<Trouble>> = std::sync::Mutex::new(None);

/// A client's error callback: keep what it says about reaching the brokers.
pub fn note_broker_error(error: &KafkaError, reason: &str) {
    let Some(code) = error.rdkafka_error_code() else {
        return;
    };
    let about_brokers = matches!(
        code,
        RDKafkaErrorCode::BrokerTransportFailure
            | RDKafkaErrorCode::AllBrokersDown
            | RDKafkaErrorCode::Resolve
            | RDKafkaErrorCode::Authentication
            | RDKafkaErrorCode::SaslAuthenticationFailed
            | RDKafkaErrorCode::SSL
    );
    if about_brokers {
        // "1/1 brokers are down" says less than the connection failure that caused it.
        note(
            TroubleKind::of(code, reason),
            reason,
            code != RDKafkaErrorCode::AllBrokersDown,
        );
    }
}

/// A librdkafka log line that says why a connection failed (`FAIL`, or an error-level line).
pub fn note_log_line(message: &str) {
    let lower = message.to_ascii_lowercase();
    let code =
        if lower.contains("sasl authentication error") || lower.contains("authentication failed") {
            RDKafkaErrorCode::Authentication
        } else {
            RDKafkaErrorCode::BrokerTransportFailure
        };
    let kind = TroubleKind::of(code, message);
    note(kind, message, true);
}

/// Keep `reason` (without librdkafka's `[thrd:…]: ` prefix); a vaguer one only when there is
/// none yet, and never an unsettled one over a settled one (a refused login is followed by
/// "disconnected" lines that say less).
fn note(kind: TroubleKind, reason: &str, specific: bool) {
    let reason = match reason.strip_prefix("[thrd:") {
        Some(rest) => rest.split_once("]: ").map_or(reason, |(_, r)| r),
        None => reason,
    };
    let mut trouble = BROKER_TROUBLE.lock().unwrap_or_else(|p| p.into_inner());
    let keep_settled = trouble
        .as_ref()
        .is_some_and(|t| t.kind.is_settled() && !kind.is_settled());
    if (specific || trouble.is_none()) && !keep_settled {
        *trouble = Some(Trouble {
            kind,
            reason: reason.to_string(),
        });
    }
}

/// Why the brokers were last unreachable, if librdkafka said; cleared by [`broker_answered`].
pub fn broker_trouble() -> Option<Trouble> {
    BROKER_TROUBLE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// The brokers answered: the last trouble is history.
pub fn broker_answered() {
    *BROKER_TROUBLE.lock().unwrap_or_else(|p| p.into_inner()) = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openssl_words_name_the_side_at_fault() {
        let of = |code, text| TroubleKind::of(code, text);
        assert_eq!(
            of(
                RDKafkaErrorCode::SSL,
                "SSL handshake failed: error:0A000086:SSL routines::certificate verify failed"
            ),
            TroubleKind::BrokerCertificateUntrusted
        );
        assert_eq!(
            of(
                RDKafkaErrorCode::SSL,
                "SSL handshake failed: ssl/record/rec_layer_s3.c:1605: error:0A000418:SSL \
                 routines::tlsv1 alert unknown ca"
            ),
            TroubleKind::ClientCertificateRefused
        );
        assert_eq!(
            of(
                RDKafkaErrorCode::SSL,
                "SSL handshake failed: error:0A00010B:SSL routines::wrong version number"
            ),
            TroubleKind::ListenerNotTls
        );
        assert_eq!(
            of(
                RDKafkaErrorCode::Authentication,
                "SASL authentication error: Authentication failed"
            ),
            TroubleKind::LoginRefused
        );
        assert_eq!(
            of(
                RDKafkaErrorCode::BrokerTransportFailure,
                "Disconnected while requesting ApiVersion: might be caused by incorrect \
                 security.protocol configuration (connecting to a SSL listener?)"
            ),
            TroubleKind::ListenerWantsSecurity
        );
        assert_eq!(
            of(
                RDKafkaErrorCode::BrokerTransportFailure,
                "Connection refused"
            ),
            TroubleKind::Unreachable
        );
    }

    #[test]
    fn settled_kinds_stop_the_wait() {
        assert!(TroubleKind::LoginRefused.is_settled());
        assert!(!TroubleKind::Unreachable.is_settled());
    }
}
