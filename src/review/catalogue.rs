//! The labels the desk knows from the labels topic: each label's view (active or retired) and
//! the labels each round announced — what an answer is checked against.

use std::collections::BTreeMap;

use super::item::LabelView;
use crate::events::LabelSpec;

/// The labels and rounds read so far.
#[derive(Debug, Default)]
pub struct Catalogue {
    labels: BTreeMap<String, LabelView>,
    /// The rounds announced so far, with their labels' ids.
    rounds: BTreeMap<String, Vec<String>>,
}

impl Catalogue {
    /// A round's labels, active from now on.
    pub fn announce(&mut self, round: String, labels: Vec<LabelSpec>) {
        let ids = labels.iter().map(|l| l.id.clone()).collect();
        self.rounds.insert(round, ids);
        for spec in labels {
            let view = LabelView {
                id: spec.id.clone(),
                name: spec.name,
                description: spec.description,
                example: spec.examples.first().map(|e| super::item::example_start(e)),
                active: true,
            };
            self.labels.insert(spec.id, view);
        }
    }

    /// `label` is retired: no answer may name it any more.
    pub fn retire(&mut self, label: &str) {
        if let Some(view) = self.labels.get_mut(label) {
            view.active = false;
        }
    }

    pub fn is_active(&self, label: &str) -> bool {
        self.active_label(label).is_some()
    }

    /// `label`'s view, while it is active.
    pub fn active_label(&self, label: &str) -> Option<&LabelView> {
        self.labels.get(label).filter(|l| l.active)
    }

    /// Whether `label` was ever announced (active or retired): a new label may not take its id.
    pub fn exists(&self, label: &str) -> bool {
        self.labels.contains_key(label)
    }

    /// The labels round `round` announced, if it was read.
    pub fn round_labels(&self, round: &str) -> Option<&[String]> {
        self.rounds.get(round).map(Vec::as_slice)
    }

    /// The active labels, for the search box.
    pub fn active(&self) -> Vec<LabelView> {
        self.labels.values().filter(|l| l.active).cloned().collect()
    }
}
