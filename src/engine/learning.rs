//! When a decision is learned from as a confident text (`[engine.learning]`; read by
//! [`super::Decisions::verdict`]).

use serde::{Deserialize, Serialize};

/// When a decision is learned from as a confident text (`[engine.learning]`): what retrieval's
/// margin (best − second score) must reach (docs/design/confidence.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
#[command(next_help_heading = "Learning (engine.learning)")]
pub struct LearningConfig {
    /// Learn from a graph-only decision when its score margin (best − second) reaches this.
    #[arg(long = "learn-margin", default_value_t = LearningConfig::default().margin)]
    pub margin: f64,
    /// Learn from an LLM decision that agrees with retrieval's best label when the margin
    /// reaches this (a label the LLM chose against retrieval's best is never learned). The
    /// default equals `margin`: the local 0.5B model's agreement was measured to add mostly
    /// wrong texts (docs/design/confidence.md, "The model's agreement is no evidence"); a model
    /// whose agreement is measured to be evidence can be given a lower margin.
    #[arg(long = "learn-margin-agreeing", default_value_t = LearningConfig::default().margin_agreeing)]
    pub margin_agreeing: f64,
}

impl Default for LearningConfig {
    fn default() -> Self {
        Self {
            margin: 0.05,
            margin_agreeing: 0.05,
        }
    }
}

impl LearningConfig {
    /// What is wrong with the settings, each problem starting with its key (none: they hold).
    pub fn problems(&self) -> Vec<String> {
        [
            ("margin", self.margin),
            ("margin_agreeing", self.margin_agreeing),
        ]
        .into_iter()
        .filter(|(_, value)| !(value.is_finite() && *value >= 0.0))
        .map(|(key, _)| format!("{key}: must be a number ≥ 0"))
        .collect()
    }
}
