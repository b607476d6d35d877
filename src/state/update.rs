//! Every change to the replicated state as one value: what the service applies, logs (the state
//! store, the changelog) and replays. The engine's changes, plus the discovery pool's.

use serde::{Deserialize, Serialize};

use super::codec::Retired;
use crate::discovery::PooledText;
use crate::engine::correct::CorrectionKind;
use crate::engine::update::Update as EngineUpdate;
use crate::engine::{Analysis, NewLabel};

/// Postcard numbers variants in order: a variant keeps its place for as long as logs that
/// carry it are read (the formats' policy: `codec/mod.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Update {
    /// A round of new labels (descriptions already filled in, so replay needs no LLM).
    Round {
        round: String,
        labels: Vec<NewLabel>,
    },
    /// More labelled examples for an active label.
    AddExamples {
        label: String,
        examples: Vec<String>,
    },
    /// Stop offering a label.
    RetireLabel { label: String },
    /// Online indexing of one classified text. `confident` is decided once, by the instance
    /// that classified the text, and travels with the update: replicas never recompute it.
    Learn {
        analysis: Analysis,
        label: String,
        confident: bool,
    },
    /// Place 4: a pooled text as logs before arrival scores wrote it (no longer read: the
    /// formats' policy, `codec/mod.rs`).
    #[doc(hidden)]
    Retired4(Retired),
    /// A text the active labels explain poorly joins the discovery pool, with its arrival score
    /// (which the text's own layout does not carry; see [`PooledText::arrival_score`]).
    Pooled {
        text: PooledText,
        arrival_score: Option<f64>,
    },
    /// An operator's label for a text: learned as a labelled example, its learned copy under
    /// another label taken back, and its pooled copy dropped.
    Correct {
        text_id: String,
        label: String,
        text: String,
    },
    /// A correction from an audit (a text picked at random, not because it needed review):
    /// applied as [`Update::Correct`], and its decision's outcome refits the confidence.
    Audit {
        text_id: String,
        label: String,
        text: String,
    },
}

impl Update {
    /// An operator's label for a text: a reviewer's ([`Update::Correct`]) or an audit's
    /// ([`Update::Audit`]).
    pub fn correction(text_id: String, label: String, text: String, kind: CorrectionKind) -> Self {
        match kind {
            CorrectionKind::Review => Self::Correct {
                text_id,
                label,
                text,
            },
            CorrectionKind::Audit => Self::Audit {
                text_id,
                label,
                text,
            },
        }
    }

    /// The engine's part of the update; None for the pool's own.
    pub fn engine_update(&self) -> Option<EngineUpdate> {
        Some(match self.clone() {
            Self::Round { round, labels } => EngineUpdate::Round { round, labels },
            Self::AddExamples { label, examples } => EngineUpdate::AddExamples { label, examples },
            Self::RetireLabel { label } => EngineUpdate::RetireLabel { label },
            Self::Learn {
                analysis,
                label,
                confident,
            } => EngineUpdate::Learn {
                analysis,
                label,
                confident,
            },
            Self::Correct { label, text, .. } => EngineUpdate::Correct { label, text },
            Self::Audit { label, text, .. } => EngineUpdate::Audit { label, text },
            Self::Pooled { .. } => return None,
            Self::Retired4(retired) => match retired {},
        })
    }
}
