//! Every change to the engine as one value: what the service applies, logs and replays.

use serde::{Deserialize, Serialize};

use super::correct::CorrectionKind;
use super::{Analysis, Engine, EngineError, IndexReport, NewLabel};
use crate::discovery::PooledText;

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
        #[serde(default = "learned_with_confidence")]
        confident: bool,
    },
    /// A text the active labels explain poorly joins the discovery pool, as logs before arrival
    /// scores wrote it (read, never written; postcard numbers variants, so it keeps its place).
    Unexplained { text: PooledText },
    /// A text the active labels explain poorly joins the discovery pool, with its arrival score
    /// (which the text's own layout does not carry; see [`PooledText::arrival_score`]).
    Pooled {
        text: PooledText,
        arrival_score: Option<f64>,
    },
    /// An operator's label for a text: learned as a labelled example, its learned copy under
    /// another label taken back ([`Engine::correct`]). Last, so that earlier variants keep
    /// their postcard numbers.
    Correct {
        text_id: String,
        label: String,
        text: String,
    },
    /// A correction from an audit (a text picked at random, not because it needed review):
    /// applied as [`Update::Correct`], and its decision's outcome refits the confidence
    /// ([`Engine::audit`]). Last, for the same reason.
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
}

impl Engine {
    /// Apply one update. On error the engine is unchanged.
    pub fn apply(&mut self, update: &Update) -> Result<IndexReport, EngineError> {
        match update {
            Update::Round { round, labels } => {
                let report = self.apply_round(labels)?;
                self.last_round = Some(round.clone());
                Ok(report)
            }
            Update::AddExamples { label, examples } => self.add_examples(label, examples),
            Update::RetireLabel { label } => {
                self.retire_label(label)?;
                Ok(IndexReport::default())
            }
            Update::Unexplained { text } => {
                self.pool.push(text.clone());
                Ok(IndexReport::default())
            }
            Update::Pooled {
                text,
                arrival_score,
            } => {
                self.pool.push(PooledText {
                    arrival_score: *arrival_score,
                    ..text.clone()
                });
                Ok(IndexReport::default())
            }
            Update::Correct {
                text_id,
                label,
                text,
            }
            | Update::Audit {
                text_id,
                label,
                text,
            } => {
                let kind = match update {
                    Update::Audit { .. } => CorrectionKind::Audit,
                    _ => CorrectionKind::Review,
                };
                let (report, correction) = self.correct(text_id, label, text, kind)?;
                Ok(IndexReport {
                    correction: Some(correction),
                    ..report
                })
            }
            Update::Learn {
                analysis,
                label,
                confident,
            } => {
                let keywords_added = self.learn(analysis, label, *confident);
                Ok(IndexReport {
                    labels_added: 0,
                    texts_indexed: 1,
                    keywords_added,
                    ..IndexReport::default()
                })
            }
        }
    }
}

/// Learn records written before confidence existed learned everything (this default serves
/// the JSON changelog; the postcard state store changed format instead).
fn learned_with_confidence() -> bool {
    true
}
