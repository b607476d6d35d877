//! What a decision comes to — published as what, learned or not, under which label — read once
//! per text ([`Decisions::verdict`]): the service, `gorag classify`, the evaluation, discovery
//! and the state all read the one [`Verdict`].

use super::rank::{RankingConfig, FEW_SHARED_WORDS};
use super::{no_match, Decision, Decisions, Retrieval, Status, NO_LABEL};

/// What one decided text comes to.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// What it is published as.
    pub status: Status,
    /// Whether online indexing learns it as a confident text (else as a tentative one).
    pub confident: bool,
    /// The label it is learned under: [`NO_LABEL`] when it matches no label, else the
    /// decided label.
    pub learn_as: String,
}

impl Verdict {
    /// The same text held for a person however it was decided (the shell's reason: it reads
    /// like an open proposal, a class not yet among the labels): published as needing review,
    /// and learned under none, so no known label learns a text that may be another class's.
    /// A text that matched nothing stays so.
    pub fn held_for_review(self) -> Self {
        match self.status {
            Status::NoMatch => self,
            Status::Decided | Status::NeedsReview => Self {
                status: Status::NeedsReview,
                confident: false,
                learn_as: NO_LABEL.to_string(),
            },
        }
    }
}

impl Decisions<'_> {
    /// What `decision` (of a text retrieved as `retrieval`) comes to.
    pub fn verdict(&self, retrieval: &Retrieval, decision: &Decision) -> Verdict {
        let status = self.status(retrieval, decision);
        Verdict {
            status,
            confident: self
                .config
                .learning
                .learns_from(retrieval, decision, status),
            learn_as: match status {
                Status::NoMatch => NO_LABEL.to_string(),
                Status::Decided | Status::NeedsReview => decision.label.clone(),
            },
        }
    }

    /// Whether the decision needs a person's review: its confidence is below `abstain_below`
    /// (a confidence that is no number counts as below). Only for the ranked strategies: the
    /// calibrator reads retrieval scores, which the strategies without scores (`steiner`,
    /// `all`, `naive`: the paper's and its baselines) do not have, so their decisions are
    /// neither reviewed nor gated, as in the paper.
    /// It also needs review when its label reads far from the text in meaning
    /// ([`far_in_meaning`]).
    fn needs_review(&self, retrieval: &Retrieval, decision: &Decision) -> bool {
        retrieval.is_calibrated()
            && (decision.confidence.is_nan()
                || decision.confidence < self.config.abstain_below
                || far_in_meaning(&self.config.ranking, retrieval, &decision.label))
    }

    /// What a decision is published as: no label when nothing the labels know explains the
    /// text ([`super::no_match`]), else its label, decided or needing review.
    pub fn status(&self, retrieval: &Retrieval, decision: &Decision) -> Status {
        if self.matches_nothing(retrieval, decision) {
            Status::NoMatch
        } else if self.needs_review(retrieval, decision) {
            Status::NeedsReview
        } else {
            Status::Decided
        }
    }

    /// Whether the text matches none of the active labels ([`super::no_match`]): it is then
    /// published with no label, and learned under none.
    pub fn matches_nothing(&self, retrieval: &Retrieval, decision: &Decision) -> bool {
        no_match::matches_nothing(
            &self.config.no_match,
            retrieval,
            &decision.label,
            decision.confidence,
        )
    }
}

/// A `label` that reads far from the text in meaning (never without an encoder): less close
/// than `short_text_min_meaning` in a short text, or than `few_words_min_meaning` when it
/// shares at most [`FEW_SHARED_WORDS`] of the text's words.
fn far_in_meaning(ranking: &RankingConfig, retrieval: &Retrieval, label: &str) -> bool {
    let Some(matched) = retrieval
        .candidate(label)
        .and_then(|c| c.evidence.as_ref())
        .map(|evidence| evidence.matched)
    else {
        return false;
    };
    // A closeness that is no number counts as far.
    let below = |meaning: f64, floor: f64| meaning.is_nan() || meaning < floor;
    matched.meaning.is_some_and(|meaning| {
        (retrieval.short_text && below(meaning, ranking.short_text_min_meaning))
            || (matched.shared_words <= FEW_SHARED_WORDS
                && below(meaning, ranking.few_words_min_meaning))
    })
}
