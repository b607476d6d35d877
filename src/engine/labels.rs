//! The label set: every label registered (retired ones kept in place, as positions index
//! them), found by id; its version, bumped on every change; the last round applied.

use foldhash::{HashMap, HashSet, HashSetExt};

use super::{EngineError, LabelInfo, NewLabel};

#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// In registration order: a label's position is its index here.
    list: Vec<LabelInfo>,
    positions: HashMap<String, usize>,
    /// Bumped on every change to the label set.
    version: u64,
    /// Id of the last round applied through [`super::Engine::apply`].
    last_round: Option<String>,
}

impl Labels {
    /// The labels as a restore brings them back (`positions` checked against `list` by the
    /// restore, which names what is wrong).
    pub(super) fn restored(
        list: Vec<LabelInfo>,
        positions: HashMap<String, usize>,
        version: u64,
        last_round: Option<String>,
    ) -> Self {
        Self {
            list,
            positions,
            version,
            last_round,
        }
    }

    /// Every label, retired ones included, in registration order.
    pub fn all(&self) -> &[LabelInfo] {
        &self.list
    }

    pub fn get(&self, id: &str) -> Option<&LabelInfo> {
        self.positions.get(id).map(|&i| &self.list[i])
    }

    /// The label at a position (the index's and the embedding signal's way to name it).
    pub fn at(&self, position: usize) -> Option<&LabelInfo> {
        self.list.get(position)
    }

    pub fn position(&self, id: &str) -> Option<usize> {
        self.positions.get(id).copied()
    }

    /// Labels registered, retired ones included.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn active(&self) -> impl Iterator<Item = &LabelInfo> {
        self.list.iter().filter(|l| l.active)
    }

    pub(super) fn active_ids(&self) -> Vec<String> {
        self.active().map(|l| l.id.clone()).collect()
    }

    pub fn is_active(&self, id: &str) -> bool {
        self.get(id).is_some_and(|l| l.active)
    }

    /// Bumped on every change to the label set.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn last_round(&self) -> Option<&str> {
        self.last_round.as_deref()
    }

    /// Whether [`super::Engine::apply_round`] would accept `labels` (checked before asking an
    /// LLM to describe them).
    pub fn check_round(&self, labels: &[NewLabel]) -> Result<(), EngineError> {
        let mut in_round = HashSet::with_capacity(labels.len());
        for label in labels {
            if label.id.trim().is_empty() {
                return Err(EngineError::EmptyLabelId);
            }
            if self.positions.contains_key(&label.id) {
                return Err(EngineError::DuplicateLabel(label.id.clone()));
            }
            if !in_round.insert(label.id.as_str()) {
                return Err(EngineError::RepeatedInRound(label.id.clone()));
            }
        }
        Ok(())
    }

    /// The position of an active label; an error for an unknown or retired one.
    pub fn active_position(&self, label: &str) -> Result<usize, EngineError> {
        let &position = self
            .positions
            .get(label)
            .ok_or_else(|| EngineError::UnknownLabel(label.to_string()))?;
        if !self.list[position].active {
            return Err(EngineError::RetiredLabel(label.to_string()));
        }
        Ok(position)
    }

    /// Register a label (its id checked new by [`Labels::check_round`]); its position comes
    /// back. The version is the caller's to bump, once for a whole round.
    pub(super) fn push(&mut self, label: LabelInfo) -> usize {
        let position = self.list.len();
        self.positions.insert(label.id.clone(), position);
        self.list.push(label);
        position
    }

    /// Count more examples of the label at `position`.
    pub(super) fn add_examples(&mut self, position: usize, count: u32) {
        if let Some(label) = self.list.get_mut(position) {
            label.examples += count;
        }
    }

    /// Stop offering the label at `position`.
    pub(super) fn retire(&mut self, position: usize) {
        if let Some(label) = self.list.get_mut(position) {
            label.active = false;
        }
        self.version += 1;
    }

    pub(super) fn bump_version(&mut self) {
        self.version += 1;
    }

    pub(super) fn set_last_round(&mut self, round: &str) {
        self.last_round = Some(round.to_string());
    }
}

/// The label at a position the engine itself handed out (the index's, the embedding signal's).
impl std::ops::Index<usize> for Labels {
    type Output = LabelInfo;

    fn index(&self, position: usize) -> &LabelInfo {
        &self.list[position]
    }
}
