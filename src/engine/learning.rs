//! When a decision is learned from as a confident text (`[engine.learning]`; read by
//! [`super::Decisions::verdict`]).

use serde::{Deserialize, Serialize};

use super::{Basis, Decision, Retrieval, Source, Status};

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

    /// Whether a decision is trusted enough to learn from. Ranked strategies: never one that
    /// needs review; retrieval's best
    /// label decided without the LLM's agreement (no LLM, or a `scored` choice where retrieval
    /// outweighed the model's favourite or the model had none) when retrieval's margin reaches
    /// `margin`; retrieval's best label that is also the model's favourite when the
    /// margin reaches `margin_agreeing`; never another label, never a hallucination.
    /// Strategies without scores (`steiner`, `all`, `naive`) learn from every decision, an
    /// answer outside the candidates included, as the paper does.
    pub fn learns_from(&self, retrieval: &Retrieval, decision: &Decision, status: Status) -> bool {
        let Some(margin) = retrieval.margin() else {
            return true;
        };
        if status != Status::Decided {
            return false;
        }
        if decision.hallucination.is_some() || retrieval.basis != Basis::RankedScores {
            return false;
        }
        // Ranked by meaning alone (no word of the text in any label's material): kept as a
        // tentative text, never learned as a confident one, as when it was not ranked at all.
        if retrieval.first_hop_labels == 0 {
            return false;
        }
        match decision.source {
            // A blend of retrieval and the LLM (weight > 0) that is neither's favourite: the
            // margin is evidence for another label.
            Source::Graph => decision.label == retrieval.graph_choice && margin >= self.margin,
            Source::Llm => {
                decision.label == retrieval.graph_choice && margin >= self.margin_agreeing
            }
        }
    }
}
