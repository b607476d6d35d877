//! What the discovery protocol's stream said of each text, and which signals separate the
//! held-back classes' texts from the known ones (`gorag eval --discover`'s second table).

use serde::Serialize;

use crate::engine::Status;

/// One streamed text: its gold label, whether its class was held back, retrieval's best score.
pub(super) struct Streamed {
    pub gold: String,
    pub held: bool,
    pub best_score: Option<f64>,
    pub flags: Flags,
}

/// What the stream said of one text: each unexplained signal on its own (a pooled text
/// records only the first that fired), whether it was pooled, and whether it was learned from.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Flags {
    pub unknown_label: bool,
    pub no_evidence: bool,
    pub weak_score: bool,
    /// The fitted probe's doubt (`discovery::in_doubt`).
    pub doubt: bool,
    pub pooled: bool,
    /// Held for review as reading like an open proposal (second half of the stream).
    pub held_for_proposal: bool,
    pub learned: bool,
    /// What the text was published as.
    pub status: Status,
}

/// Counts of [`Flags`] over a set of streamed texts.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct SignalCounts {
    pub texts: usize,
    pub unknown_label: usize,
    pub no_evidence: usize,
    pub weak_score: usize,
    pub doubt: usize,
    pub pooled: usize,
    /// Held for review as reading like an open proposal.
    pub held_for_proposal: usize,
    pub learned: usize,
    /// Published as a decided label, as needing review, as no match.
    pub decided: usize,
    pub needs_review: usize,
    pub no_match: usize,
}

impl SignalCounts {
    fn add(&mut self, flags: Flags) {
        self.texts += 1;
        self.unknown_label += usize::from(flags.unknown_label);
        self.no_evidence += usize::from(flags.no_evidence);
        self.weak_score += usize::from(flags.weak_score);
        self.doubt += usize::from(flags.doubt);
        self.pooled += usize::from(flags.pooled);
        self.held_for_proposal += usize::from(flags.held_for_proposal);
        self.learned += usize::from(flags.learned);
        match flags.status {
            Status::Decided => self.decided += 1,
            Status::NeedsReview => self.needs_review += 1,
            Status::NoMatch => self.no_match += 1,
        }
    }
}

/// Which signals separate texts of missing classes from the rest: a signal that fires as often
/// on known classes' texts as on held-back ones only fills the pool with known classes; a
/// held-back text learned from teaches a known label a missing class's words.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Signals {
    pub held: SignalCounts,
    pub known: SignalCounts,
}

pub(super) fn count_signals(streamed: &[Streamed]) -> Signals {
    let mut out = Signals::default();
    for s in streamed {
        if s.held {
            out.held.add(s.flags);
        } else {
            out.known.add(s.flags);
        }
    }
    out
}

/// ROC AUC of "a lower best score means a held-back class": the probability that a held-back
/// text scores below a known one (ties count half). Texts without a score are left out.
pub(super) fn weak_score_auc(streamed: &[Streamed]) -> f64 {
    let mut scored: Vec<(f64, bool)> = streamed
        .iter()
        .filter_map(|s| s.best_score.map(|b| (b, s.held)))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (held, known) = scored.iter().fold((0f64, 0f64), |(h, k), (_, is_held)| {
        if *is_held {
            (h + 1.0, k)
        } else {
            (h, k + 1.0)
        }
    });
    if held == 0.0 || known == 0.0 {
        return 0.5;
    }
    // Mann–Whitney: for each held text, the known texts scoring above it.
    let mut pairs = 0.0;
    let mut i = 0;
    let mut known_below = 0.0;
    while i < scored.len() {
        let mut j = i;
        let (mut held_tied, mut known_tied) = (0.0, 0.0);
        while j < scored.len() && scored[j].0 == scored[i].0 {
            if scored[j].1 {
                held_tied += 1.0;
            } else {
                known_tied += 1.0;
            }
            j += 1;
        }
        pairs += held_tied * (known - known_below - known_tied) + held_tied * known_tied / 2.0;
        known_below += known_tied;
        i = j;
    }
    pairs / (held * known)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(score: f64, held: bool) -> Streamed {
        Streamed {
            gold: String::new(),
            held,
            best_score: Some(score),
            flags: Flags::default(),
        }
    }

    #[test]
    fn auc_is_one_when_every_held_text_scores_lowest() {
        let perfect = [
            streamed(0.1, true),
            streamed(0.2, true),
            streamed(0.5, false),
        ];
        assert_eq!(weak_score_auc(&perfect), 1.0);
        let reversed = [streamed(0.9, true), streamed(0.2, false)];
        assert_eq!(weak_score_auc(&reversed), 0.0);
        let tied = [streamed(0.3, true), streamed(0.3, false)];
        assert_eq!(weak_score_auc(&tied), 0.5);
    }

    #[test]
    fn signals_are_counted_apart_for_held_back_and_known_texts() {
        let flagged = |held, flags| Streamed {
            flags,
            ..streamed(0.0, held)
        };
        let pooled_unknown = Flags {
            unknown_label: true,
            weak_score: true,
            pooled: true,
            ..Flags::default()
        };
        let learned = Flags {
            learned: true,
            ..Flags::default()
        };
        let stream = [
            flagged(true, pooled_unknown),
            flagged(true, learned),
            flagged(false, learned),
        ];
        let counts = count_signals(&stream);
        assert_eq!(counts.held.texts, 2);
        assert_eq!(counts.held.unknown_label, 1);
        assert_eq!(counts.held.weak_score, 1);
        assert_eq!(counts.held.pooled, 1);
        assert_eq!(counts.held.learned, 1);
        assert_eq!(counts.held.no_evidence, 0);
        assert_eq!(counts.known.texts, 1);
        assert_eq!(counts.known.learned, 1);
        assert_eq!(counts.known.pooled, 0);
    }
}
