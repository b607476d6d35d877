//! When a community pass falls due: after every `discovery.pass_every` pooled texts, on the
//! instance whose record crossed the mark (every replica holds the same pool there); the others
//! note that one fell due elsewhere.

/// The pass marks, and which crossing the loop has not yet taken.
#[derive(Debug, Default)]
pub struct PassMarks {
    /// A pass after every this many pooled texts (None: discovery off).
    every: Option<u64>,
    /// One of this instance's records made a pass due.
    due: bool,
    /// Another instance's record made one due (that instance runs it).
    elsewhere: bool,
}

impl PassMarks {
    /// A pass after every `every` pooled texts (None or 0: never).
    pub fn every(every: Option<u64>) -> Self {
        Self {
            every: every.filter(|&n| n > 0),
            ..Self::default()
        }
    }

    /// A record was applied that took the pool from `before` pushed texts to `after`: note a
    /// mark it crossed, as this instance's pass (`mine`) or another's.
    pub(super) fn note(&mut self, before: u64, after: u64, mine: bool) {
        let crossed = self
            .every
            .is_some_and(|every| after / every > before / every);
        if crossed && mine {
            self.due = true;
        } else if crossed {
            self.elsewhere = true;
        }
    }

    /// Whether a pass became due here since the last call.
    pub fn take_due(&mut self) -> bool {
        std::mem::take(&mut self.due)
    }

    /// Whether another instance's record made a pass due since the last call.
    pub fn take_elsewhere(&mut self) -> bool {
        std::mem::take(&mut self.elsewhere)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crossed_mark_is_taken_once_by_whoever_crossed_it() {
        let mut marks = PassMarks::every(Some(10));
        marks.note(8, 9, true);
        assert!(!marks.take_due());
        marks.note(9, 11, true);
        assert!(marks.take_due() && !marks.take_due());
        marks.note(19, 20, false);
        assert!(!marks.take_due() && marks.take_elsewhere() && !marks.take_elsewhere());
        let mut never = PassMarks::every(Some(0));
        never.note(0, 100, true);
        assert!(!never.take_due());
    }
}
