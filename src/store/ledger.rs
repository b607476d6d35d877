//! What a `gorag classify` state has done with each text id: learned it online, or been told
//! its label by a correction. A rerun of the same file then learns nothing twice, and a
//! corrections file given again applies nothing twice
//! (docs/guide/classify.md, "Keeping what it learned"). Kept in a tree of the state's sled
//! database; in memory without a state.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::StoreError;

const LEDGER_TREE: &[u8] = b"classify_texts";

/// What happened to a text id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mark", rename_all = "snake_case")]
pub enum Mark {
    /// Classified and learned from (online indexing).
    Learned,
    /// Corrected to `label` (none: no label fits), as an audit or not.
    Corrected { label: Option<String>, audit: bool },
}

/// The marks of every text id a state has seen.
#[derive(Debug)]
pub struct TextLedger {
    tree: Option<sled::Tree>,
    /// Marks set and not yet written (written with the state's updates, by [`Self::write`]).
    pending: HashMap<String, Mark>,
}

impl TextLedger {
    /// A ledger kept nowhere (a run without a state folder).
    pub fn in_memory() -> Self {
        Self {
            tree: None,
            pending: HashMap::new(),
        }
    }

    pub(super) fn in_tree(db: &sled::Db) -> Result<Self, StoreError> {
        Ok(Self {
            tree: Some(db.open_tree(LEDGER_TREE)?),
            pending: HashMap::new(),
        })
    }

    pub fn get(&self, id: &str) -> Result<Option<Mark>, StoreError> {
        if let Some(mark) = self.pending.get(id) {
            return Ok(Some(mark.clone()));
        }
        let Some(tree) = &self.tree else {
            return Ok(None);
        };
        match tree.get(id.as_bytes())? {
            None => Ok(None),
            Some(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| StoreError::Corrupt {
                        key: format!("classify text {}", crate::bounds::excerpt(id)),
                        detail: e.to_string(),
                    })
            }
        }
    }

    pub fn set(&mut self, id: &str, mark: Mark) {
        self.pending.insert(id.to_string(), mark);
    }

    /// Write the marks set since the last call (kept in memory without a state folder).
    pub fn write(&mut self) -> Result<(), StoreError> {
        let Some(tree) = &self.tree else {
            return Ok(());
        };
        let mut batch = sled::Batch::default();
        for (id, mark) in self.pending.drain() {
            let bytes = serde_json::to_vec(&mark).map_err(|e| StoreError::Corrupt {
                key: format!("classify text {}", crate::bounds::excerpt(&id)),
                detail: e.to_string(),
            })?;
            batch.insert(id.as_bytes(), bytes);
        }
        tree.apply_batch(batch)?;
        Ok(())
    }
}
