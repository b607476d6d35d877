//! Every change to the engine as one value. The replicated state's own updates, which also
//! carry the discovery pool's and are what the service logs and replays, are
//! [`crate::state::Update`].

use super::correct::CorrectionKind;
use super::{Analysis, Engine, EngineError, IndexReport, NewLabel};

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
    /// An operator's label for a text: learned as a labelled example, its learned copy under
    /// another label taken back ([`Engine::correct`]).
    Correct { label: String, text: String },
    /// A correction from an audit (a text picked at random, not because it needed review):
    /// applied as [`Update::Correct`], and its decision's outcome refits the confidence
    /// ([`Engine::audit`]).
    Audit { label: String, text: String },
    /// An operator's "none of these": no active label fits the text ([`Engine::correct_to_none`]).
    CorrectNone { text: String },
    /// The same from an audit: its decision's outcome (wrong) refits the confidence.
    AuditNone { text: String },
}

impl Update {
    /// An operator's label for a text: a reviewer's ([`Update::Correct`]) or an audit's
    /// ([`Update::Audit`]).
    /// `label` None: none of the active labels fits the text.
    pub fn correction(label: Option<String>, text: String, kind: CorrectionKind) -> Self {
        match (label, kind) {
            (Some(label), CorrectionKind::Review) => Self::Correct { label, text },
            (Some(label), CorrectionKind::Audit) => Self::Audit { label, text },
            (None, CorrectionKind::Review) => Self::CorrectNone { text },
            (None, CorrectionKind::Audit) => Self::AuditNone { text },
        }
    }
}

impl Engine {
    /// Apply one update. On error the engine is unchanged.
    pub fn apply(&mut self, update: &Update) -> Result<IndexReport, EngineError> {
        match update {
            Update::Round { round, labels } => self.apply_named_round(round, labels),
            Update::AddExamples { label, examples } => self.add_examples(label, examples),
            Update::RetireLabel { label } => {
                self.retire_label(label)?;
                Ok(IndexReport::default())
            }
            Update::Correct { label, text } | Update::Audit { label, text } => {
                let kind = match update {
                    Update::Audit { .. } => CorrectionKind::Audit,
                    _ => CorrectionKind::Review,
                };
                let (report, correction) = self.correct(label, text, kind)?;
                Ok(IndexReport {
                    correction: Some(correction),
                    ..report
                })
            }
            Update::CorrectNone { text } | Update::AuditNone { text } => {
                let kind = match update {
                    Update::AuditNone { .. } => CorrectionKind::Audit,
                    _ => CorrectionKind::Review,
                };
                let (report, correction) = self.correct_to_none(text, kind)?;
                Ok(IndexReport {
                    correction: Some(correction),
                    ..report
                })
            }
            Update::Learn {
                analysis,
                label,
                confident,
            } => Ok(self.learn_text(analysis, label, *confident)),
        }
    }

    /// A round of new labels ([`Update::Round`]), without an update value to hold it: the
    /// replicated state applies its logged updates by reference (a round can hold 50,000
    /// labels).
    pub fn apply_named_round(
        &mut self,
        round: &str,
        labels: &[NewLabel],
    ) -> Result<IndexReport, EngineError> {
        let report = self.apply_round(labels)?;
        self.labels.set_last_round(round);
        Ok(report)
    }

    /// Online indexing of one classified text ([`Update::Learn`]), without an update value to
    /// hold it: the replicated state applies its logged updates by reference.
    pub fn learn_text(&mut self, analysis: &Analysis, label: &str, confident: bool) -> IndexReport {
        let keywords_added = self.learn(analysis, label, confident);
        IndexReport {
            labels_added: 0,
            texts_indexed: 1,
            keywords_added,
            ..IndexReport::default()
        }
    }
}
