//! The label sets the metrics are counted by, the label values known in advance, and the LLM
//! client's counts as the metrics take them: names and counts only, no domain type.

use prometheus_client::encoding::EncodeLabelSet;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

/// The confidence buckets corrections are counted in.
pub const CONFIDENCE_BUCKETS: [&str; 4] = ["0-0.5", "0.5-0.8", "0.8-0.9", "0.9-1"];

/// A correction: whether gorag's own decision for the text agreed with it, and that
/// decision's confidence bucket ([`CONFIDENCE_BUCKETS`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CorrectionLabel {
    pub agreed: String,
    pub confidence: String,
}

/// A prediction: where its label came from (`llm`, `graph`) and its status (`decided`,
/// `needs_review`, `no_match`): decided over all is the live coverage.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PredictionLabel {
    pub source: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ParamLabel {
    pub param: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabel {
    pub stage: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PartitionLabel {
    pub partition: i32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

/// The hallucination kinds counted (`events::HallucinationKind`'s names; a test in `events/kinds.rs` keeps them equal).
pub const HALLUCINATION_KINDS: [&str; 2] = ["unknown_label", "outside_candidates"];

/// The LLM breaker's states, closed first (`BreakerState`'s names; a test there keeps them equal).
pub const BREAKER_STATES: [&str; 3] = ["closed", "open", "half_open"];

/// What an LLM client has counted since it started, as the metrics take it (the llm module
/// converts its own snapshot): telemetry knows no domain type, so it sits below every module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmCounts {
    pub calls: u64,
    pub retries: u64,
    pub failures: u64,
    pub oversized: u64,
    pub breaker_skipped: u64,
    pub breaker_openings: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// One of [`BREAKER_STATES`].
    pub breaker: &'static str,
}

impl Default for LlmCounts {
    fn default() -> Self {
        Self {
            calls: 0,
            retries: 0,
            failures: 0,
            oversized: 0,
            breaker_skipped: 0,
            breaker_openings: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            breaker: BREAKER_STATES[0],
        }
    }
}
