//! The kinds a published event names — why its candidates are what they are, who chose its
//! label, what kind of hallucination was flagged — as the events' own enums. The engine has its
//! own (`engine::Basis`, `engine::Source`, `engine::answer::HallucinationKind`) and converts
//! into these: renaming an engine variant then cannot change a published name or the JSON
//! Schema (docs/design/formats.md, "Published events"). The conversions are exhaustive, so a
//! new engine variant does not build until it is given a published name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine;

/// Why the candidate set is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Labels of the Steiner tree over ≥ 2 terminals.
    SteinerTree,
    /// One terminal: the active labels it links to directly.
    SingleTerminal,
    /// The tree held no active label: the active labels the terminals link to.
    TerminalNeighbours,
    /// Nothing in the text links to the graph (or, for the ranked strategies, to any label's
    /// examples, name or description): every active label.
    NoEvidence,
    /// The `all` strategy.
    AllLabels,
    /// The `naive` strategy (by words), and `nearest` (by the sentence encoder): the labels of
    /// the most similar labelled examples.
    SimilarExamples,
    /// A ranked strategy (`ranked`, `proximity`, `hybrid`): the best-scored labels.
    RankedScores,
}

impl From<engine::Basis> for Basis {
    fn from(basis: engine::Basis) -> Self {
        match basis {
            engine::Basis::SteinerTree => Self::SteinerTree,
            engine::Basis::SingleTerminal => Self::SingleTerminal,
            engine::Basis::TerminalNeighbours => Self::TerminalNeighbours,
            engine::Basis::NoEvidence => Self::NoEvidence,
            engine::Basis::AllLabels => Self::AllLabels,
            engine::Basis::SimilarExamples => Self::SimilarExamples,
            engine::Basis::RankedScores => Self::RankedScores,
        }
    }
}

// Who chose the published label (no doc comment: it would enter the schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Llm,
    Graph,
}

impl Source {
    /// As predictions name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Llm => "llm",
            Self::Graph => "graph",
        }
    }
}

impl From<engine::Source> for Source {
    fn from(source: engine::Source) -> Self {
        match source {
            engine::Source::Llm => Self::Llm,
            engine::Source::Graph => Self::Graph,
        }
    }
}

// What kind of hallucination a prediction was flagged for (no doc comment: it would enter the
// schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HallucinationKind {
    /// The answer is not any active label.
    UnknownLabel,
    /// The answer is an active label that retrieval did not offer.
    OutsideCandidates,
}

impl HallucinationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownLabel => "unknown_label",
            Self::OutsideCandidates => "outside_candidates",
        }
    }
}

impl From<engine::answer::HallucinationKind> for HallucinationKind {
    fn from(kind: engine::answer::HallucinationKind) -> Self {
        match kind {
            engine::answer::HallucinationKind::UnknownLabel => Self::UnknownLabel,
            engine::answer::HallucinationKind::OutsideCandidates => Self::OutsideCandidates,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published names are the engine's today; the conversion keeps them whatever the
    /// engine calls its variants later.
    fn published<T: Serialize>(value: T) -> String {
        serde_json::to_string(&value).unwrap_or_default()
    }

    #[test]
    fn each_engine_kind_has_its_published_name() {
        assert_eq!(
            published(Basis::from(engine::Basis::RankedScores)),
            "\"ranked_scores\""
        );
        assert_eq!(published(Source::from(engine::Source::Graph)), "\"graph\"");
        let unknown = engine::answer::HallucinationKind::UnknownLabel;
        assert_eq!(
            published(HallucinationKind::from(unknown)),
            "\"unknown_label\""
        );
    }

    #[test]
    fn the_metrics_know_every_hallucination_kind() {
        let names = [
            HallucinationKind::UnknownLabel,
            HallucinationKind::OutsideCandidates,
        ]
        .map(HallucinationKind::as_str);
        assert_eq!(names, crate::telemetry::metrics::HALLUCINATION_KINDS);
    }
}
