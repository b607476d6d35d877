//! Every change to the replicated state as one value: what the service applies, logs (the state
//! store, the changelog) and replays. The engine's changes, plus the discovery pool's.

use crate::discovery::PooledText;
use crate::engine::correct::CorrectionKind;
use crate::engine::{Analysis, Engine, NewLabel};
use crate::one_text::Classified;

/// Written and read as its wire layout (`codec/wire/update.rs`), whose places this enum's
/// variants mirror (the formats' policy: `codec/mod.rs`).
#[derive(Debug, Clone, PartialEq)]
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
    /// An operator's "none of these": no active label fits the text. It becomes no label's
    /// example, its learned copies are taken back, and it joins the discovery pool as a text
    /// nothing explains.
    CorrectNone { text_id: String, text: String },
    /// The same from an audit: its decision's outcome (wrong) also refits the confidence.
    AuditNone { text_id: String, text: String },
}

impl Update {
    /// The learn record of a classified text, as `classify` and `eval` write it (the service's
    /// changelog carries the same in its `LearnedText`): the text's heaviest terms, under the
    /// label online indexing learns it as (none, `NO_LABEL`, when it matched no label).
    pub fn learned(engine: &Engine, classified: &Classified) -> Self {
        Self::Learn {
            analysis: engine.analyzer().learnable(&classified.analysis),
            label: classified.verdict.learn_as.clone(),
            confident: classified.verdict.confident,
        }
    }

    /// An operator's label for a text: a reviewer's ([`Update::Correct`]) or an audit's
    /// ([`Update::Audit`]).
    /// `label` None: none of the active labels fits the text.
    pub fn correction(
        text_id: String,
        label: Option<String>,
        text: String,
        kind: CorrectionKind,
    ) -> Self {
        match (label, kind) {
            (Some(label), CorrectionKind::Review) => Self::Correct {
                text_id,
                label,
                text,
            },
            (Some(label), CorrectionKind::Audit) => Self::Audit {
                text_id,
                label,
                text,
            },
            (None, CorrectionKind::Review) => Self::CorrectNone { text_id, text },
            (None, CorrectionKind::Audit) => Self::AuditNone { text_id, text },
        }
    }

    /// The text id of a correction (to a label or to none); None for other updates.
    pub fn corrected_text(&self) -> Option<&str> {
        match self {
            Self::Correct { text_id, .. }
            | Self::Audit { text_id, .. }
            | Self::CorrectNone { text_id, .. }
            | Self::AuditNone { text_id, .. } => Some(text_id),
            _ => None,
        }
    }

    /// The labelled texts applying the update asks `engine`'s encoder for (see
    /// [`crate::engine::Analyzer::round_material`]): a shell encodes them ahead, off its loop.
    pub fn material(&self, engine: &Engine) -> Vec<String> {
        let analyzer = engine.analyzer();
        match self {
            Self::Round { labels, .. } => analyzer.round_material(labels),
            Self::AddExamples { label, examples } => analyzer.examples_material(label, examples),
            Self::Correct { label, text, .. } | Self::Audit { label, text, .. } => {
                analyzer.examples_material(label, std::slice::from_ref(text))
            }
            Self::RetireLabel { .. }
            | Self::Learn { .. }
            | Self::Pooled { .. }
            | Self::CorrectNone { .. }
            | Self::AuditNone { .. } => Vec::new(),
        }
    }
}
