//! Secrets (a SASL password, a TLS key's password, an API key): read from a file or the
//! environment, handed to the client that needs them, and never shown — `Debug`, `Display` and
//! `Serialize` all write `***`, so a secret cannot reach a log line, an error or
//! `--print-config` by accident.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

/// How a secret is written wherever it would be shown.
pub const SHOWN_AS: &str = "***";

/// The largest secret file read: a password or key is a few hundred bytes; a path pointing at
/// something else (a log, a disk image) is refused rather than read into memory.
pub const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// A value that is never printed. Only [`Secret::expose`] gives it out, for the one client
/// that sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

/// Why a secret file could not be read (the path and the OS's reason; never the content).
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("{path}: {source}")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: larger than {MAX_SECRET_FILE_BYTES} bytes, not a secret file")]
    TooLarge { path: PathBuf },
    #[error("{path}: not UTF-8 text")]
    NotText { path: PathBuf },
    #[error("{path}: empty")]
    Empty { path: PathBuf },
}

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret in a file, without its trailing line end (a Kubernetes Secret mounted as a
    /// file, or `echo pass > file`, ends with one or none).
    pub fn from_file(path: &Path) -> Result<Self, SecretError> {
        let unreadable = |source| SecretError::Unreadable {
            path: path.to_path_buf(),
            source,
        };
        let size = std::fs::metadata(path).map_err(unreadable)?.len();
        if size > MAX_SECRET_FILE_BYTES {
            return Err(SecretError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        let bytes = std::fs::read(path).map_err(unreadable)?;
        let text = String::from_utf8(bytes).map_err(|_| SecretError::NotText {
            path: path.to_path_buf(),
        })?;
        let value = text.trim_end_matches(['\n', '\r']);
        if value.is_empty() {
            return Err(SecretError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(Self(value.to_string()))
    }

    /// The value itself, for the client that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of this secret replaced by `***` (for messages written by
    /// a library that may quote what it was given).
    pub fn scrub(&self, text: &str) -> String {
        scrub(text, &self.0)
    }
}

/// `text` with every occurrence of `value` replaced by `***` (nothing replaced for an empty
/// value).
pub fn scrub(text: &str, value: &str) -> String {
    if value.is_empty() {
        text.to_string()
    } else {
        text.replace(value, SHOWN_AS)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SHOWN_AS)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SHOWN_AS)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(SHOWN_AS)
    }
}

/// Whether a librdkafka property (or any configuration key) holds a secret: its value is
/// shown as `***` wherever the configuration is shown.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["password", "secret", "jaas", "api_key", "apikey", "token"]
        .iter()
        .any(|word| key.contains(word))
        || key.ends_with("key.pem")
        || key.ends_with("oauthbearer.config")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_never_formatted() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret}"), "***");
        assert_eq!(format!("{secret:?}"), "***");
        assert_eq!(serde_json::to_string(&secret).unwrap(), "\"***\"");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn a_secret_file_loses_its_line_end_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("password");
        std::fs::write(&path, " p@ss word \r\n").unwrap();
        assert_eq!(Secret::from_file(&path).unwrap().expose(), " p@ss word ");
        std::fs::write(&path, "\n").unwrap();
        assert!(matches!(
            Secret::from_file(&path),
            Err(SecretError::Empty { .. })
        ));
        let missing = dir.path().join("missing");
        let error = Secret::from_file(&missing).unwrap_err().to_string();
        assert!(error.contains("missing"), "{error}");
    }

    #[test]
    fn a_large_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'a'; (MAX_SECRET_FILE_BYTES + 1) as usize]).unwrap();
        assert!(matches!(
            Secret::from_file(&path),
            Err(SecretError::TooLarge { .. })
        ));
    }

    #[test]
    fn secret_keys_are_recognised() {
        for key in [
            "sasl.password",
            "ssl.key.password",
            "ssl.keystore.password",
            "sasl.oauthbearer.client.secret",
            "ssl.key.pem",
            "sasl.oauthbearer.config",
            "sasl.jaas.config",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in ["sasl.username", "security.protocol", "ssl.ca.location"] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn scrub_replaces_every_occurrence() {
        assert_eq!(scrub("a x b x", "x"), "a *** b ***");
        assert_eq!(scrub("abc", ""), "abc");
    }
}
