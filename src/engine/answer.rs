//! Reading the LLM's answer: normalise it, match it to a label, flag hallucinations.
//!
//! Matching, in order: the normalised answer equals a label's normalised id or name; else the
//! answer contains label names as whole words (LLMs often wrap the class in a sentence) — the
//! longest such name wins, candidates before other labels; else the answer is part of one
//! candidate's longer name — a run of two or more of its whole words, not all stop words, found
//! in no other candidate's name (a small model shown "located on terrain feature" answers
//! "terrain feature"; on IFS-Rel such answers were most of what was flagged). Only **active**
//! labels match: a retired or never-seen label in the answer is an `unknown_label`
//! hallucination (the paper's definition). A known active label that retrieval did not offer
//! is accepted, as the reference code does, but flagged `outside_candidates`.

use super::text::normalise_label_text;
use super::text::stop_words::is_stop_word;

/// Why an answer was flagged (published as `events::HallucinationKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HallucinationKind {
    /// The answer is not any active label.
    UnknownLabel,
    /// The answer is an active label that retrieval did not offer.
    OutsideCandidates,
}

/// What an answer matched.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerMatch {
    /// A candidate label (the normal case).
    Candidate(String),
    /// An active label outside the candidate set.
    OutsideCandidates(String),
    /// No active label.
    Unknown,
}

/// A label as answers may spell it: id and display name, both normalised.
#[derive(Debug, Clone)]
pub struct LabelSpelling {
    pub id: String,
    pub forms: Vec<String>,
}

impl LabelSpelling {
    pub fn new(id: &str, name: Option<&str>) -> Self {
        let mut forms = vec![normalise_label_text(id)];
        if let Some(name) = name {
            let form = normalise_label_text(name);
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        forms.retain(|f| !f.is_empty());
        Self {
            id: id.to_string(),
            forms,
        }
    }
}

/// Match `raw` against the active labels. `is_candidate` tells which ids retrieval offered.
pub fn match_answer(
    raw: &str,
    labels: &[LabelSpelling],
    is_candidate: impl Fn(&str) -> bool,
) -> AnswerMatch {
    let answer = normalise_label_text(raw);
    if answer.is_empty() {
        return AnswerMatch::Unknown;
    }
    let classify = |id: &str| {
        if is_candidate(id) {
            AnswerMatch::Candidate(id.to_string())
        } else {
            AnswerMatch::OutsideCandidates(id.to_string())
        }
    };
    // Exact: candidates first, in case two labels normalise alike.
    let exact = |want_candidate: bool| {
        labels
            .iter()
            .find(|l| is_candidate(&l.id) == want_candidate && l.forms.contains(&answer))
    };
    if let Some(label) = exact(true).or_else(|| exact(false)) {
        return classify(&label.id);
    }
    // Contained as whole words: longest form wins; candidates win ties.
    let padded = format!(" {answer} ");
    let mut best: Option<(&LabelSpelling, usize, bool)> = None;
    for label in labels {
        for form in &label.forms {
            if padded.contains(&format!(" {form} ")) {
                let key = (form.len(), is_candidate(&label.id));
                let better = match best {
                    None => true,
                    Some((_, len, cand)) => key > (len, cand),
                };
                if better {
                    best = Some((label, key.0, key.1));
                }
            }
        }
    }
    if let Some((label, _, _)) = best {
        return classify(&label.id);
    }
    match part_of_one_candidate(&answer, labels, &is_candidate) {
        Some(label) => classify(&label.id),
        None => AnswerMatch::Unknown,
    }
}

/// The one candidate whose name holds `answer` (normalised) as a run of whole words — at
/// least two, not all stop words; None when no candidate or several do.
fn part_of_one_candidate<'l>(
    answer: &str,
    labels: &'l [LabelSpelling],
    is_candidate: &impl Fn(&str) -> bool,
) -> Option<&'l LabelSpelling> {
    let words: Vec<&str> = answer.split(' ').collect();
    if words.len() < 2 || words.iter().all(|w| is_stop_word(w)) {
        return None;
    }
    let padded = format!(" {answer} ");
    let mut holders = labels.iter().filter(|l| {
        is_candidate(&l.id) && l.forms.iter().any(|f| format!(" {f} ").contains(&padded))
    });
    let first = holders.next()?;
    holders.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Vec<LabelSpelling> {
        vec![
            LabelSpelling::new("machine_learning", Some("machine learning")),
            LabelSpelling::new("computer_vision", None),
            LabelSpelling::new("learning", None),
            LabelSpelling::new("label 7", None),
        ]
    }

    #[test]
    fn exact_answers_match_ids_and_names() {
        let cands = |id: &str| id != "learning";
        assert_eq!(
            match_answer("Machine Learning.", &labels(), cands),
            AnswerMatch::Candidate("machine_learning".into())
        );
        assert_eq!(
            match_answer("computer_vision", &labels(), cands),
            AnswerMatch::Candidate("computer_vision".into())
        );
        assert_eq!(
            match_answer("Label 7", &labels(), cands),
            AnswerMatch::Candidate("label 7".into())
        );
    }

    #[test]
    fn wrapped_answers_take_the_longest_label() {
        assert_eq!(
            match_answer("The class is: machine learning", &labels(), |_| true),
            AnswerMatch::Candidate("machine_learning".into())
        );
    }

    #[test]
    fn a_part_of_one_candidate_name_names_it() {
        let labels = vec![
            LabelSpelling::new("located_on_terrain_feature", None),
            LabelSpelling::new("place_served_by_transport_hub", None),
            LabelSpelling::new("head_of_government", None),
            LabelSpelling::new("head_of_state", None),
            LabelSpelling::new("country_of_origin", None),
        ];
        let all = |_: &str| true;
        assert_eq!(
            match_answer("Terrain feature", &labels, all),
            AnswerMatch::Candidate("located_on_terrain_feature".into())
        );
        assert_eq!(
            match_answer("transport hub.", &labels, all),
            AnswerMatch::Candidate("place_served_by_transport_hub".into())
        );
        // One word, stop words only, or a run two candidates share: no match.
        for answer in [
            "hub",
            "of the",
            "head of",
            "geological formation",
            "feature terrain",
        ] {
            assert_eq!(
                match_answer(answer, &labels, all),
                AnswerMatch::Unknown,
                "{answer}"
            );
        }
        // Only a candidate's name is read so: the model was shown those.
        assert_eq!(
            match_answer("terrain feature", &labels, |id| id
                != "located_on_terrain_feature"),
            AnswerMatch::Unknown
        );
        // Unique among the candidates, even when another label shares the run.
        assert_eq!(
            match_answer("head of", &labels, |id| id == "head_of_state"),
            AnswerMatch::Candidate("head_of_state".into())
        );
    }

    #[test]
    fn known_label_outside_candidates_is_flagged() {
        assert_eq!(
            match_answer("learning", &labels(), |id| id == "computer_vision"),
            AnswerMatch::OutsideCandidates("learning".into())
        );
    }

    #[test]
    fn unknown_and_empty_answers_are_unknown() {
        assert_eq!(
            match_answer("quantum biology", &labels(), |_| true),
            AnswerMatch::Unknown
        );
        assert_eq!(
            match_answer("  ...  ", &labels(), |_| true),
            AnswerMatch::Unknown
        );
        // "label 70" must not match "label 7".
        assert_eq!(
            match_answer("label 70", &labels(), |_| true),
            AnswerMatch::Unknown
        );
    }
}
