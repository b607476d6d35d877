//! The desk's logins: a file of `name:token` lines (a Kubernetes Secret mounted as a file).
//! A request names its reviewer by the token alone (a cookie set at login, or
//! `Authorization: Bearer TOKEN`) or by `Authorization: Basic` with the name and the token.
//! Tokens are compared by their SHA-256 digests in constant time, and never printed.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::queue::Reviewer;

/// The shortest token taken: shorter ones are guessable.
pub const SHORTEST_TOKEN: usize = 16;
/// The longest reviewer name (it goes on every answer).
pub const LONGEST_NAME: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum LoginsError {
    #[error("reading the logins file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("logins file {path}, line {line}: {problem}")]
    Line {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("logins file {path} names no reviewer: one `name:token` a line")]
    Empty { path: String },
}

/// The reviewers who may log in.
#[derive(Clone)]
pub struct Logins {
    /// (name, digest of the token).
    entries: Vec<(Reviewer, [u8; 32])>,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|(r, _)| r.0.as_str()).collect();
        f.debug_struct("Logins").field("reviewers", &names).finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Logins {
    pub fn load(path: &Path) -> Result<Self, LoginsError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| LoginsError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text).map_err(|(line, problem)| match line {
            0 => LoginsError::Empty { path: shown },
            line => LoginsError::Line {
                path: shown,
                line,
                problem,
            },
        })
    }

    /// The logins of a file's text; on error the line (0: none at all) and what is wrong,
    /// never quoting a token.
    pub fn parse(text: &str) -> Result<Self, (usize, String)> {
        let mut entries: Vec<(Reviewer, [u8; 32])> = Vec::new();
        for (at, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let problem = |p: &str| (at + 1, p.to_string());
            let (name, token) = line
                .split_once(':')
                .ok_or_else(|| problem("expected `name:token`"))?;
            let name = name.trim();
            if name.is_empty() || name.len() > LONGEST_NAME {
                return Err(problem(&format!(
                    "a reviewer's name is 1 to {LONGEST_NAME} bytes"
                )));
            }
            if token.trim().len() < SHORTEST_TOKEN {
                return Err(problem(&format!(
                    "the token is shorter than {SHORTEST_TOKEN} characters (make one with \
                     `openssl rand -hex 16`)"
                )));
            }
            let token = digest(token.trim());
            if entries.iter().any(|(_, known)| same(known, &token)) {
                return Err(problem("this token is another reviewer's too"));
            }
            entries.push((Reviewer(name.to_string()), token));
        }
        if entries.is_empty() {
            return Err((0, String::new()));
        }
        Ok(Self { entries })
    }

    /// The reviewer whose token this is.
    pub fn by_token(&self, token: &str) -> Option<&Reviewer> {
        // Every entry compared, so the time says nothing of which matched.
        self.by_token_with_key(token).map(|(reviewer, _)| reviewer)
    }

    /// The reviewer whose token this is, with the token's digest (what signs their sessions).
    pub fn by_token_with_key(&self, token: &str) -> Option<(&Reviewer, &[u8; 32])> {
        let token = digest(token);
        let mut found = None;
        for (reviewer, known) in &self.entries {
            if same(known, &token) {
                found = Some((reviewer, known));
            }
        }
        found
    }

    /// The digests of `reviewer`'s tokens (usually one; two while a token is replaced).
    pub fn keys_of<'a>(&'a self, reviewer: &'a Reviewer) -> impl Iterator<Item = &'a [u8; 32]> {
        self.entries
            .iter()
            .filter(move |(named, _)| named == reviewer)
            .map(|(_, key)| key)
    }

    /// The reviewer of a name and token (basic auth): both must match.
    pub fn by_name_and_token(&self, name: &str, token: &str) -> Option<&Reviewer> {
        self.by_token(token).filter(|r| r.0 == name)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// How often the logins file is looked at for a change, at most.
const RELOAD_CHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// The logins of a file that may change while the desk runs (a Kubernetes Secret is updated
/// in place): a token removed from it stops working within seconds, without a restart. A file
/// that no longer reads keeps the logins it had, with a warning.
pub struct LiveLogins {
    path: std::path::PathBuf,
    current: std::sync::RwLock<Current>,
}

struct Current {
    logins: std::sync::Arc<Logins>,
    modified: Option<std::time::SystemTime>,
    checked: std::time::Instant,
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl LiveLogins {
    pub fn load(path: &Path) -> Result<Self, LoginsError> {
        let logins = Logins::load(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            current: std::sync::RwLock::new(Current {
                logins: std::sync::Arc::new(logins),
                modified: modified(path),
                checked: std::time::Instant::now(),
            }),
        })
    }

    /// The logins as the file says now.
    pub fn now(&self) -> std::sync::Arc<Logins> {
        let stale = self
            .current
            .read()
            .map(|c| c.checked.elapsed() >= RELOAD_CHECK)
            .unwrap_or(true);
        if stale {
            self.reload();
        }
        match self.current.read() {
            Ok(current) => current.logins.clone(),
            Err(poisoned) => poisoned.into_inner().logins.clone(),
        }
    }

    fn reload(&self) {
        let mut current = match self.current.write() {
            Ok(current) => current,
            Err(poisoned) => poisoned.into_inner(),
        };
        current.checked = std::time::Instant::now();
        let now = modified(&self.path);
        if now == current.modified {
            return;
        }
        match Logins::load(&self.path) {
            Ok(logins) => {
                tracing::info!(
                    reviewers = logins.len(),
                    "the logins file changed: reloaded"
                );
                current.logins = std::sync::Arc::new(logins);
                current.modified = now;
            }
            Err(error) => {
                tracing::warn!(%error, "the logins file changed but does not read: the logins it had stay");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_reviewer_and_nothing_else_does() {
        let logins =
            Logins::parse("# desk\nann:0123456789abcdef0123\n\nbob:fedcba9876543210fedc\n")
                .unwrap();
        assert_eq!(logins.len(), 2);
        assert_eq!(
            logins
                .by_token("0123456789abcdef0123")
                .map(|r| r.0.as_str()),
            Some("ann")
        );
        assert!(logins.by_token("0123456789abcdef012").is_none());
        assert!(logins
            .by_name_and_token("bob", "0123456789abcdef0123")
            .is_none());
        assert!(format!("{logins:?}").contains("ann"));
        assert!(!format!("{logins:?}").contains("0123"));
    }

    #[test]
    fn bad_lines_are_named_without_their_token() {
        let (line, problem) = Logins::parse("ann:xyzzy\n").unwrap_err();
        assert_eq!(line, 1);
        assert!(!problem.contains("xyzzy"), "{problem}");
        assert_eq!(Logins::parse("no colon here at all\n").unwrap_err().0, 1);
        assert_eq!(Logins::parse("# only a comment\n").unwrap_err().0, 0);
        let same_token = "a:0123456789abcdef\nb:0123456789abcdef\n";
        assert_eq!(Logins::parse(same_token).unwrap_err().0, 2);
    }
}
