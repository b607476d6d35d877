//! Persistent LLM response cache (sled).
//!
//! The key is a SHA-256 over a canonical JSON of everything that shapes the answer: the model,
//! every message, temperature, answer length and a format version. Only successful, non-empty
//! answers are stored; errors never are, so a transient failure is retried next time. The
//! endpoint's URL is deliberately not part of the key: the same model served elsewhere (another
//! port, a replica) gives the same answers at temperature 0.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::engine::prompt::Prompt;

const FORMAT: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("response cache at {path}: {source}")]
    Open { path: String, source: sled::Error },
    #[error("response cache: {0}")]
    Io(#[from] sled::Error),
    #[error("response cache entry is corrupt: {0}")]
    Corrupt(#[from] serde_json::Error),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedAnswer {
    pub text: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    #[serde(default)]
    pub first_token: Vec<(String, f64)>,
}

#[derive(Clone)]
pub struct ResponseCache {
    tree: sled::Tree,
}

impl ResponseCache {
    pub fn open(path: &Path) -> Result<Self, CacheError> {
        let db = sled::open(path).map_err(|source| CacheError::Open {
            path: path.display().to_string(),
            source,
        })?;
        let tree = db.open_tree("llm-responses")?;
        Ok(Self { tree })
    }

    pub fn key(model: &str, temperature: f32, prompt: &Prompt) -> [u8; 32] {
        let mut canonical = serde_json::json!({
            "format": FORMAT,
            "model": model,
            "temperature": temperature,
            "max_tokens": prompt.max_tokens,
            "messages": [["system", prompt.system], ["user", prompt.user]],
        });
        // Only when asked for, so keys of plain prompts stay what they were.
        if let Some(top) = prompt.top_logprobs {
            canonical["top_logprobs"] = serde_json::json!(top);
        }
        Sha256::digest(canonical.to_string().as_bytes()).into()
    }

    pub fn get(&self, key: &[u8; 32]) -> Result<Option<CachedAnswer>, CacheError> {
        match self.tree.get(key)? {
            Some(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
            None => Ok(None),
        }
    }

    pub fn put(&self, key: &[u8; 32], answer: &CachedAnswer) -> Result<(), CacheError> {
        self.tree.insert(key, serde_json::to_vec(answer)?)?;
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    pub async fn flush(&self) -> Result<(), CacheError> {
        self.tree.flush_async().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(user: &str, max_tokens: u32) -> Prompt {
        Prompt {
            system: "s".into(),
            user: user.into(),
            max_tokens,
            top_logprobs: None,
        }
    }

    #[test]
    fn key_covers_model_messages_and_parameters() {
        let base = ResponseCache::key("m", 0.0, &prompt("u", 32));
        assert_eq!(base, ResponseCache::key("m", 0.0, &prompt("u", 32)));
        assert_ne!(base, ResponseCache::key("m2", 0.0, &prompt("u", 32)));
        assert_ne!(base, ResponseCache::key("m", 0.5, &prompt("u", 32)));
        assert_ne!(base, ResponseCache::key("m", 0.0, &prompt("u2", 32)));
        assert_ne!(base, ResponseCache::key("m", 0.0, &prompt("u", 16)));
    }

    #[test]
    fn entries_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let key = ResponseCache::key("m", 0.0, &prompt("u", 8));
        let answer = CachedAnswer {
            text: "label".into(),
            prompt_tokens: 10,
            completion_tokens: 2,
            first_token: vec![("label".into(), -0.1), ("lab".into(), -2.5)],
        };
        {
            let cache = ResponseCache::open(dir.path()).unwrap();
            assert_eq!(cache.get(&key).unwrap(), None);
            cache.put(&key, &answer).unwrap();
            cache.tree.flush().unwrap();
        }
        // sled releases its file lock a moment after the last handle is dropped.
        let mut reopened = ResponseCache::open(dir.path());
        for _ in 0..250 {
            if reopened.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            reopened = ResponseCache::open(dir.path());
        }
        let cache = reopened.unwrap();
        assert_eq!(cache.get(&key).unwrap(), Some(answer));
    }
}
