//! What the broker's answers about a finished text's outputs mean for the service.
//!
//! A text's outputs are sent one by one, every one of them even when an earlier one was
//! refused (only a record the broker can never take — too large — is refused; everything else
//! is retried). [`settle`] turns the refusals into what the loop must do: give back the intake
//! place held for a learn record that will never come back from the changelog (once per
//! record: its own delivery task reports it), and dead-letter each text with the reason that
//! names the output refused (each text of a refused learn record hears of it).

use crate::events::decode::{Reason, Rejection};

/// Which of a text's outputs a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// Its online-indexing record, for the changelog.
    Learn,
    Hallucination,
    Prediction,
    /// The text itself, refused as input.
    DeadLetter,
}

impl OutputKind {
    fn refused_because(self) -> &'static str {
        match self {
            OutputKind::Learn => {
                "its online-indexing record is larger than the broker accepts on the changelog \
                 topic; the prediction was sent, the text was not learned"
            }
            OutputKind::Hallucination => {
                "the hallucination report is larger than the broker accepts"
            }
            OutputKind::Prediction => "the prediction is larger than the broker accepts",
            OutputKind::DeadLetter => "the dead letter is larger than the broker accepts",
        }
    }
}

/// What the loop does once a text's outputs are settled.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// A learn record was refused: it will never be read back, release its intake place.
    pub learn_refused: bool,
    /// Dead-letter the text with this (nothing when everything was delivered, or when only the
    /// dead letter itself was refused: there is nowhere left to send it).
    pub dead_letter: Option<Rejection>,
}

/// Settle a text whose outputs of kinds `refused` the broker refused.
pub fn settle(refused: &[OutputKind]) -> Settlement {
    let learn_refused = refused.contains(&OutputKind::Learn);
    let reasons: Vec<&str> = refused
        .iter()
        .filter(|kind| **kind != OutputKind::DeadLetter)
        .map(|kind| kind.refused_because())
        .collect();
    let dead_letter =
        (!reasons.is_empty()).then(|| Rejection::new(Reason::OutputTooLarge, reasons.join("; ")));
    Settlement {
        learn_refused,
        dead_letter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_delivered_needs_nothing() {
        assert_eq!(
            settle(&[]),
            Settlement {
                learn_refused: false,
                dead_letter: None
            }
        );
    }

    /// A learn record the broker refused used to keep its intake place for ever and
    /// dead-letter the text as "the prediction is larger…".
    #[test]
    fn a_refused_learn_record_releases_its_place_and_says_so() {
        let settled = settle(&[OutputKind::Learn]);
        assert!(settled.learn_refused);
        let rejection = settled.dead_letter.unwrap();
        assert_eq!(rejection.reason, Reason::OutputTooLarge);
        assert!(
            rejection.message.contains("online-indexing record"),
            "{rejection}"
        );
        assert!(
            !rejection.message.contains("prediction is larger"),
            "{rejection}"
        );
    }

    #[test]
    fn a_refused_prediction_is_dead_lettered_as_such() {
        let settled = settle(&[OutputKind::Prediction]);
        assert!(!settled.learn_refused);
        assert!(settled
            .dead_letter
            .unwrap()
            .message
            .contains("prediction is larger"));
    }

    #[test]
    fn a_refused_dead_letter_has_nowhere_to_go() {
        assert_eq!(settle(&[OutputKind::DeadLetter]).dead_letter, None);
    }
}
