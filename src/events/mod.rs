//! The service's events: what operators publish (labels, texts) and what gorag publishes
//! (predictions, hallucinations, dead letters). JSON on the wire; the JSON Schemas in
//! `schemas/` are generated from these types (`gorag schemas`) and a test keeps them equal.
//!
//! Inputs are strict (`deny_unknown_fields`): a misspelt `exmples` would otherwise silently
//! drop an operator's examples, so it goes to the dead-letter topic instead. `version` may be
//! left out (it means 1); any other version is refused until this code knows it.

pub mod bounds;
pub mod classification;
pub mod decode;
mod kinds;
pub mod label_id;
pub mod proposal;
pub mod schema;
pub mod taxonomy;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::NewLabel;
pub use kinds::{Basis, HallucinationKind, Source};

/// The version of every event this build writes but label events; inputs of this version
/// are read.
pub const EVENT_VERSION: u32 = 1;

/// The newest label event version this build reads (versions 1 to this one). Version 2 added a
/// correction to none of the labels (`correct` with `none_of_these`); `gorag correct --none`
/// writes it, so that an older build refuses it as `unsupported_version` rather than a field
/// it does not know. Version 3 added who gave a correction (`reviewer`), which the review desk
/// writes. Version 4 added the open proposal a text was placed in (`proposal`, with
/// `none_of_these`), which the review desk writes.
pub const LABEL_EVENT_VERSION: u32 = 4;

/// The first label event version with `none_of_these`.
pub const NONE_OF_THESE_VERSION: u32 = 2;
/// The first label event version with `reviewer`.
pub const REVIEWER_VERSION: u32 = 3;
/// The first label event version with `proposal`.
pub const PROPOSAL_VOTE_VERSION: u32 = 4;

/// The version of the prediction events this build writes. Version 2 added `confidence`,
/// `status`, `llm_asked`, `llm_changed` and `rationale`, all optional to a reader: a consumer of
/// version 1 reads version 2 unchanged. Version 3 added the status `no_match`, whose `label`
/// and `label_name` are null: a consumer of version 2 that requires a label must accept null
/// (schemas/README.md). Version 4 added `proposal`, optional: a consumer of version 3 reads
/// version 4 unchanged.
pub const PREDICTION_VERSION: u32 = 4;

fn version_one() -> u32 {
    EVENT_VERSION
}

/// An event of the labels topic. Every instance reads that topic in full, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum LabelEvent {
    /// A round: new classes, each with zero or more labelled examples.
    Round {
        #[serde(default = "version_one")]
        version: u32,
        /// The round's id (also the record key).
        round: String,
        labels: Vec<LabelSpec>,
    },
    /// More labelled examples for an existing, active label.
    AddExamples {
        #[serde(default = "version_one")]
        version: u32,
        label: String,
        examples: Vec<String>,
    },
    /// Stop offering a label to later texts.
    RetireLabel {
        #[serde(default = "version_one")]
        version: u32,
        label: String,
    },
    /// An operator's (or a review tool's) label for a text gorag classified: the text becomes
    /// a labelled example of `label`, and what gorag had learned from its own decision for it,
    /// under another label, is taken back (docs/design/decisions.md, "Corrections"). Or, with
    /// `none_of_these`, no active label fits it: it becomes no label's example, what gorag had
    /// learned from it is taken back, and it joins the discovery pool.
    Correct {
        #[serde(default = "version_one")]
        version: u32,
        /// The text's id, as its prediction gave it.
        text_id: String,
        /// The right label: an active label. Left out with `none_of_these`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        /// No active label fits the text (version 2; then `label` is left out).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        none_of_these: bool,
        /// The text, as it was sent.
        text: String,
        /// The text was picked at random to check gorag (an audit), not because its prediction
        /// needed review: its outcome then also refits the confidence (docs/design/decisions.md).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        audit: bool,
        /// Who gave the correction: the review desk's login name (version 3). Only recorded;
        /// the engine learns the same from any reviewer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reviewer: Option<String>,
        /// With `none_of_these`: the open proposal the text belongs to (version 4), a vote for
        /// that class. The service applies it as `none_of_these`; the review desk keeps it, and
        /// accepting the proposal makes the text one of the new label's examples.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        proposal: Option<String>,
    },
}

impl LabelEvent {
    pub fn version(&self) -> u32 {
        match self {
            Self::Round { version, .. }
            | Self::AddExamples { version, .. }
            | Self::RetireLabel { version, .. }
            | Self::Correct { version, .. } => *version,
        }
    }
}

/// A new label as announced in a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelSpec {
    /// Stable id; predictions name it.
    pub id: String,
    /// Human-meaningful name shown to the LLM; leave out for opaque labels (the id is shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the class is about; when left out and the label has a name, the LLM writes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Few-shot examples (none: zero-shot, the name and description alone index the label).
    #[serde(default)]
    pub examples: Vec<String>,
}

impl From<&LabelSpec> for NewLabel {
    fn from(spec: &LabelSpec) -> Self {
        NewLabel {
            id: spec.id.clone(),
            name: spec.name.clone(),
            description: spec.description.clone(),
            examples: spec.examples.clone(),
        }
    }
}

/// A text to classify (texts topic, keyed by id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextEvent {
    #[serde(default = "version_one")]
    pub version: u32,
    pub id: String,
    pub text: String,
    /// Anything; copied to the prediction unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    /// The true label, when known (evaluation): copied to the prediction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_label: Option<String>,
}

/// Where an output came from in the input log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InputPosition {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

/// Milliseconds spent per stage of one text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageLatency {
    pub decode_ms: f64,
    pub keywords_ms: f64,
    pub retrieve_ms: f64,
    /// Includes waiting for a free LLM slot and retries.
    pub llm_ms: f64,
    pub index_ms: f64,
    /// From the record's arrival to handing the outputs to the producer.
    pub total_ms: f64,
}

/// gorag's answer for one text (predictions topic, keyed by text id). A replay after a crash
/// can repeat a prediction; consumers keep the last one per key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Prediction {
    pub version: u32,
    pub text_id: String,
    /// The predicted label id; null when `status` is `no_match` (version 3): no active label
    /// fits the text.
    pub label: Option<String>,
    /// The label's name, when it has one (absent with no label, version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_name: Option<String>,
    /// `llm`, or `graph` when the LLM's answer was unusable or the LLM failed.
    pub source: Source,
    /// Candidate labels retrieved for the text (what the LLM chose from): best first under the
    /// ranked strategies (`hybrid`, `ranked`, `proximity`).
    pub candidates: Vec<String>,
    /// Ranked strategies: each candidate's retrieval score, in the same order (`nearest`: its
    /// closest labelled example's cosine with the text).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidate_scores: Vec<f64>,
    /// Why the candidates are what they are.
    pub basis: Basis,
    /// Whether the decision was trusted enough for online indexing to learn from it (score
    /// margin, agreement of the LLM with retrieval; docs/design/confidence.md).
    #[serde(default)]
    pub confident: bool,
    /// The probability that `label` is right, from the decision's evidence (version 2;
    /// docs/design/decisions.md). With `no_match`: the probability that the best candidate
    /// (`candidates[0]`) would have been right.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// `decided`; `needs_review` when `confidence` is below `engine.abstain_below` (or the label
    /// reads far from the text in meaning: a short text's, `engine.ranking.short_text_min_meaning`;
    /// one sharing a word or two with it, `engine.ranking.few_words_min_meaning`): `label` is
    /// then only the best guess, and gorag did not learn from it (version 2; absent means
    /// `decided`); `no_match` when nothing the active labels know explains the text: `label` is
    /// null, `candidates` still lists what retrieval found (version 3).
    #[serde(default)]
    pub status: PredictionStatus,
    /// Whether the LLM was asked to choose (only texts below `llm.ask_below` are; version 2).
    #[serde(default)]
    pub llm_asked: bool,
    /// Whether the LLM's answer changed the label from retrieval's own choice (version 2).
    #[serde(default)]
    pub llm_changed: bool,
    /// Why `label`, without an LLM: its closest labelled example and the terms they share
    /// (version 2; absent for the strategies without scores and texts with no evidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<Rationale>,
    /// An open proposal — a class discovery found that an operator has not decided yet — the
    /// text reads like (version 4). The text is then `needs_review` however confident its
    /// label, and no known label learns it: a reviewer may place it in the proposal
    /// (docs/design/emerging-classes.md, "Texts held for an open proposal").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<ProposalCandidate>,
    /// The text's keywords, best first.
    pub keywords: Vec<String>,
    /// True when the LLM answered outside the candidates or with no known label.
    pub hallucination: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hallucination_kind: Option<HallucinationKind>,
    /// Why the LLM gave no answer (`source` is then `graph`); at most 1 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_error: Option<String>,
    /// The last round applied when the text was classified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<String>,
    /// Bumped on every change to the label set.
    pub label_version: u64,
    /// The LLM model asked about this text (absent when none was: graph-only mode, or retrieval
    /// decided without asking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub latency: StageLatency,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    pub input: InputPosition,
}

/// The open proposal a text was held for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalCandidate {
    /// The proposal's id (proposals topic).
    pub id: String,
    /// Its name as last published.
    pub name: String,
    /// The text's cosine, in meaning, with the proposal's members' mean (centred).
    pub similarity: f64,
}

/// Whether a prediction can be acted on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PredictionStatus {
    /// Confident enough to apply (confidence at or above `engine.abstain_below`).
    #[default]
    Decided,
    /// Below `engine.abstain_below`, or a label far from the text in meaning: a person
    /// should look; `label` is the best guess.
    NeedsReview,
    /// No active label fits the text: `label` is null (version 3; `[engine.no_match]`).
    NoMatch,
}

impl PredictionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decided => "decided",
            Self::NeedsReview => "needs_review",
            Self::NoMatch => "no_match",
        }
    }
}

impl From<crate::engine::Status> for PredictionStatus {
    fn from(status: crate::engine::Status) -> Self {
        match status {
            crate::engine::Status::Decided => Self::Decided,
            crate::engine::Status::NeedsReview => Self::NeedsReview,
            crate::engine::Status::NoMatch => Self::NoMatch,
        }
    }
}

/// The evidence for a prediction's label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rationale {
    /// The label's labelled example most similar to the text: `LABEL#N`, its N-th example in
    /// the order the labels topic gave them (from 1).
    pub example_id: String,
    /// The example's first characters.
    pub excerpt: String,
    /// The (stemmed) terms of the text that matched that example most, heaviest first.
    pub terms: Vec<String>,
}

/// A flagged prediction with the LLM's raw answer (hallucinations topic, keyed by text id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HallucinationReport {
    pub version: u32,
    pub text_id: String,
    pub kind: HallucinationKind,
    /// What the LLM said, verbatim.
    pub raw_answer: String,
    /// What was offered to it.
    pub candidates: Vec<String>,
    /// The label finally predicted (an active label outside the candidates is kept; an unknown
    /// answer is replaced by the graph's choice).
    pub label: String,
    pub source: Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub label_version: u64,
    pub input: InputPosition,
}

/// Headers of a dead-letter record, after Kafka Connect's DLQ convention
/// (`errors.deadletterqueue.context.headers.enable`). The record's key and value are the
/// original bytes, untouched. Header values are UTF-8 strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterHeaders {
    /// The input topic the record was read from.
    #[serde(rename = "__connect.errors.topic")]
    pub topic: String,
    /// Its partition, in decimal.
    #[serde(rename = "__connect.errors.partition")]
    pub partition: String,
    /// Its offset, in decimal.
    #[serde(rename = "__connect.errors.offset")]
    pub offset: String,
    /// Where it failed: `decode`, `apply` (a label event the graph refused) or `classify`.
    #[serde(rename = "__connect.errors.stage")]
    pub stage: String,
    /// `gorag.<reason>`, in the place Connect puts the exception class.
    #[serde(rename = "__connect.errors.exception.class.name")]
    pub class_name: String,
    /// What exactly was wrong: at most 1 KiB, quoting the input only in short excerpts.
    #[serde(rename = "__connect.errors.exception.message")]
    pub message: String,
    /// The reason code alone (see `schemas/README.md` for the list).
    #[serde(rename = "gorag.reason")]
    pub reason: String,
    /// Present only when the value was cut to fit the dead-letter topic: the original value's
    /// length in bytes, in decimal. The record keeps as much of the value's start as fits the
    /// broker's record limit (the producer's `message.max.bytes`, `kafka.client`); nothing of
    /// it when even that was refused.
    #[serde(
        rename = "gorag.truncated_from",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub truncated_from: Option<String>,
    /// Present only when the key was cut (a key longer than 4 KiB,
    /// `DEAD_LETTER_MAX_KEY_BYTES`, keeps its first 4 KiB): the original key's length in
    /// bytes, in decimal.
    #[serde(
        rename = "gorag.key_truncated_from",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub key_truncated_from: Option<String>,
}

/// The most of a rejected record's key a dead letter keeps: a key that long is itself the
/// problem (a text id past `input.max_id_bytes`), and the value keeps the record's content.
pub const DEAD_LETTER_MAX_KEY_BYTES: usize = 4096;

impl DeadLetterHeaders {
    pub fn new(position: &InputPosition, stage: &str, rejection: &decode::Rejection) -> Self {
        Self {
            topic: position.topic.clone(),
            partition: position.partition.to_string(),
            offset: position.offset.to_string(),
            stage: stage.to_string(),
            class_name: format!("gorag.{}", rejection.reason.code()),
            message: crate::bounds::error_text(rejection.message.as_str()),
            reason: rejection.reason.code().to_string(),
            truncated_from: None,
            key_truncated_from: None,
        }
    }

    /// (name, value) pairs in a fixed order.
    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        let mut pairs: Vec<(&'static str, &str)> = vec![
            ("__connect.errors.topic", &self.topic),
            ("__connect.errors.partition", &self.partition),
            ("__connect.errors.offset", &self.offset),
            ("__connect.errors.stage", &self.stage),
            ("__connect.errors.exception.class.name", &self.class_name),
            ("__connect.errors.exception.message", &self.message),
            ("gorag.reason", &self.reason),
        ];
        if let Some(length) = &self.truncated_from {
            pairs.push(("gorag.truncated_from", length.as_str()));
        }
        if let Some(length) = &self.key_truncated_from {
            pairs.push(("gorag.key_truncated_from", length.as_str()));
        }
        pairs
    }
}
