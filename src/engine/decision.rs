//! Reading the LLM's answer into a decision (under the choice mode), with its confidence; what
//! the decision comes to (published as what, learned how) is [`super::verdict`]'s.

use super::answer::{match_answer, AnswerMatch, HallucinationKind, LabelSpelling};
use super::confidence::{LlmOpinion, Signals};
use super::prompt::{self, ChoiceMode, ClassChoice, Prompt};
use super::refit::{OutcomeLog, Recalibration};
use super::{
    choice, fusion, Analysis, Decision, EngineConfig, Labels, Retrieval, Source, SCORED_ON_LIST,
};

/// The decision step ([`super::Engine::decisions`]): the prompt that asks the LLM, the reading
/// of its answer into a decision and that decision's confidence, and what it is published and
/// learned as. It reads the configuration, the label set and the confidence's outcomes, and
/// changes nothing.
#[derive(Clone, Copy)]
pub struct Decisions<'e> {
    pub(super) config: &'e EngineConfig,
    pub(super) labels: &'e Labels,
    pub(super) outcomes: &'e OutcomeLog,
}

/// A `scored` choice: the fused label, the LLM's own favourite (None when it has none: its
/// answer names no candidate and its first token begins several names equally), how much it
/// answered from the list.
struct Fused {
    label: String,
    preferred: Option<String>,
    on_list: f64,
}

impl Decisions<'_> {
    /// Turn the LLM's answer (None: no LLM, or it failed) into a decision.
    pub fn decide(&self, retrieval: &Retrieval, answer: Option<&str>) -> Decision {
        self.decide_with_alternatives(retrieval, answer, &[])
    }

    /// Turn the LLM's answer into a decision under the configured choice mode. `alternatives`
    /// are the answer's first-token alternatives with log-probabilities (`scored` mode; empty
    /// when the endpoint gave none, and the answer is then read as in `free` mode).
    ///
    /// The hallucination flag always describes what the LLM itself answered: `unknown_label`
    /// when its answer names no active label (or, numbered, no listed number),
    /// `outside_candidates` when it names a label retrieval did not offer. In `scored` mode the
    /// model's answer is its first-token distribution over the list: its text is flagged only
    /// when less than [`SCORED_ON_LIST`] of that mass began a candidate's name; the decision is
    /// the fused choice among the candidates either way.
    pub fn decide_with_alternatives(
        &self,
        retrieval: &Retrieval,
        answer: Option<&str>,
        alternatives: &[(String, f64)],
    ) -> Decision {
        self.decide_as(
            retrieval,
            answer,
            alternatives,
            self.config.choice,
            self.config.llm_weight,
        )
    }

    /// [`Decisions::decide_with_alternatives`] under another choice mode and weight: how the same
    /// answer reads otherwise (the evaluation compares readings of one set of LLM calls).
    pub fn decide_as(
        &self,
        retrieval: &Retrieval,
        answer: Option<&str>,
        alternatives: &[(String, f64)],
        mode: ChoiceMode,
        llm_weight: f64,
    ) -> Decision {
        let mut decision = self.choose(retrieval, answer, alternatives, mode, llm_weight);
        let signals = self.signals(retrieval, &decision.label, answer, alternatives);
        // Rounded as it is published, so the published status and the published confidence
        // never disagree at the threshold.
        decision.confidence = (self.confidence_of(&signals) * 10_000.0).round() / 10_000.0;
        decision
    }

    /// The evidence for deciding `label`: retrieval's, and the LLM's belief when it answered.
    pub fn signals(
        &self,
        retrieval: &Retrieval,
        label: &str,
        answer: Option<&str>,
        alternatives: &[(String, f64)],
    ) -> Signals {
        let mut signals = Signals::of(retrieval, label);
        signals.llm = answer.map(|answer| LlmOpinion {
            belief: self.belief_in(retrieval, label, answer, alternatives),
        });
        signals
    }

    /// The LLM's belief in `label`: its first-token belief when the endpoint gave
    /// log-probabilities that begin some candidate's name, else 1 when its answer named the
    /// label and 0 when it did not.
    fn belief_in(
        &self,
        retrieval: &Retrieval,
        label: &str,
        answer: &str,
        alternatives: &[(String, f64)],
    ) -> f64 {
        let at = retrieval.position(label);
        let displays = self.candidate_displays(retrieval);
        if let (Some(at), Some(belief)) = (at, choice::belief(&displays, alternatives)) {
            return belief.per_candidate.get(at).copied().unwrap_or(0.0);
        }
        let spellings = self.spellings();
        let named = match match_answer(answer, &spellings, |_| true) {
            AnswerMatch::Candidate(named) | AnswerMatch::OutsideCandidates(named) => named == label,
            AnswerMatch::Unknown => false,
        };
        if named {
            1.0
        } else {
            0.0
        }
    }

    /// The decision under a choice mode and weight, its confidence not yet read.
    fn choose(
        &self,
        retrieval: &Retrieval,
        answer: Option<&str>,
        alternatives: &[(String, f64)],
        mode: ChoiceMode,
        llm_weight: f64,
    ) -> Decision {
        let graph = |hallucination| Decision {
            label: self.graph_label(retrieval),
            source: Source::Graph,
            hallucination,
            confidence: 0.0,
        };
        let Some(answer) = answer else {
            return graph(None);
        };
        if mode == ChoiceMode::Numbered {
            if let Some(i) = choice::numbered(answer, retrieval.candidates.len()) {
                // A label retired while the LLM was answering is no longer a decision; the
                // model named a listed number all the same, so it is no hallucination.
                if !self.labels.is_active(&retrieval.candidates[i].label) {
                    return graph(None);
                }
                return Decision {
                    label: retrieval.candidates[i].label.clone(),
                    source: Source::Llm,
                    hallucination: None,
                    confidence: 0.0,
                };
            }
        }
        let spellings = self.spellings();
        let is_candidate = |id: &str| retrieval.offers(id);
        let matched = match_answer(answer, &spellings, is_candidate);
        if mode == ChoiceMode::Scored {
            if let Some(decision) =
                self.scored_decision(retrieval, alternatives, llm_weight, &matched)
            {
                return decision;
            }
        }
        match matched {
            AnswerMatch::Candidate(label) => Decision {
                label,
                source: Source::Llm,
                hallucination: None,
                confidence: 0.0,
            },
            AnswerMatch::OutsideCandidates(label) => Decision {
                label,
                source: Source::Llm,
                hallucination: Some(HallucinationKind::OutsideCandidates),
                confidence: 0.0,
            },
            AnswerMatch::Unknown => graph(Some(HallucinationKind::UnknownLabel)),
        }
    }

    /// The scored mode's decision: the model's first-token distribution over the list fused
    /// with retrieval's scores; `None` when there is nothing to fuse (no alternatives).
    fn scored_decision(
        &self,
        retrieval: &Retrieval,
        alternatives: &[(String, f64)],
        llm_weight: f64,
        matched: &AnswerMatch,
    ) -> Option<Decision> {
        let named = match matched {
            AnswerMatch::Candidate(label) => Some(label.as_str()),
            _ => None,
        };
        let mut fused = self.fused_choice(retrieval, alternatives, llm_weight, named)?;
        if !self.labels.is_active(&fused.label) {
            // Retired while the model answered: retrieval's choice, or the next candidate.
            fused.label = self.graph_label(retrieval);
        }
        // The model's answer is its distribution over the list; its text is flagged only when
        // that distribution was mostly off the list too.
        let hallucination = match matched {
            AnswerMatch::Candidate(_) => None,
            _ if fused.on_list >= SCORED_ON_LIST => None,
            AnswerMatch::OutsideCandidates(_) => Some(HallucinationKind::OutsideCandidates),
            AnswerMatch::Unknown => Some(HallucinationKind::UnknownLabel),
        };
        // `llm` when the model's own favourite won; `graph` when retrieval outweighed it, or
        // the model had no favourite.
        let source = if fused.preferred.as_deref() == Some(fused.label.as_str()) {
            Source::Llm
        } else {
            Source::Graph
        };
        Some(Decision {
            label: fused.label,
            source,
            hallucination,
            confidence: 0.0,
        })
    }

    /// How an answer may name each active label.
    fn spellings(&self) -> Vec<LabelSpelling> {
        self.labels
            .active()
            .map(|l| LabelSpelling::new(&l.id, l.name.as_deref()))
            .collect()
    }

    /// How each candidate is shown to the LLM, in order.
    fn candidate_displays<'a>(&'a self, retrieval: &'a Retrieval) -> Vec<&'a str> {
        retrieval
            .labels()
            .map(|id| self.labels.get(id).map_or(id, |l| l.display()))
            .collect()
    }

    /// The share of the answer's first-token probability mass that began a candidate's name
    /// (None without alternatives): how closely the model kept to the list, for comparing
    /// prompts below the hallucination threshold.
    pub fn on_list_mass(
        &self,
        retrieval: &Retrieval,
        alternatives: &[(String, f64)],
    ) -> Option<f64> {
        let displays = self.candidate_displays(retrieval);
        choice::belief(&displays, alternatives).map(|b| b.on_list)
    }

    /// `scored` mode: the candidate that maximises retrieval score (relative to the best) plus
    /// `llm_weight` × the LLM's belief; None without alternatives (an endpoint that gives no
    /// log-probabilities: the answer is then read as in `free` mode).
    /// The model's favourite is the candidate its answer `named`, else the one its first token
    /// favours alone: a first token that begins several names (" computer" for "computer
    /// vision" and "computer graphics"; "label" for every Reuters label) says nothing of which.
    fn fused_choice(
        &self,
        retrieval: &Retrieval,
        alternatives: &[(String, f64)],
        llm_weight: f64,
        named: Option<&str>,
    ) -> Option<Fused> {
        if alternatives.is_empty() {
            return None;
        }
        let displays = self.candidate_displays(retrieval);
        // No first token began a name (the answer opened with "The", a quote…): the belief is
        // the candidate the answer's text named — so the decision still fuses, and at weight 0
        // stays retrieval's. Nothing named either: retrieval's choice (candidates without
        // scores are in label order, so fusing zeros would pick an arbitrary first one).
        let named_at = || named.and_then(|label| retrieval.position(label));
        let Some(belief) = choice::belief(&displays, alternatives)
            .or_else(|| named_at().map(|at| choice::one_hot(retrieval.candidates.len(), at)))
        else {
            return Some(Fused {
                label: self.graph_label(retrieval),
                preferred: None,
                on_list: 0.0,
            });
        };
        let scores: Vec<Option<f64>> = retrieval.candidates.iter().map(|c| c.score).collect();
        let chosen = fusion::with_llm(&scores, &belief.per_candidate, llm_weight);
        let preferred = match named {
            Some(label) => Some(label.to_string()),
            None => choice::favourite(&belief.per_candidate)
                .and_then(|i| retrieval.candidates.get(i))
                .map(|c| c.label.clone()),
        };
        Some(Fused {
            label: retrieval.candidates.get(chosen)?.label.clone(),
            preferred,
            on_list: belief.on_list,
        })
    }

    /// Retrieval's own choice, or — should it have been retired while the LLM was answering —
    /// the best candidate still active (the choice itself when none is).
    fn graph_label(&self, retrieval: &Retrieval) -> String {
        if self.labels.is_active(&retrieval.graph_choice) {
            return retrieval.graph_choice.clone();
        }
        retrieval
            .labels()
            .find(|id| self.labels.is_active(id))
            .unwrap_or(&retrieval.graph_choice)
            .to_string()
    }

    /// Whether to ask the LLM about a text: retrieval's own decision has a confidence below
    /// `ask_below` (1 asks about every text, 0 about none). What the answer can then change
    /// is the choice mode's and `llm_weight`'s to say; `gorag eval` measures both.
    pub fn should_ask(&self, retrieval: &Retrieval) -> bool {
        if !retrieval.is_calibrated() {
            // The strategies without scores decide by the LLM, as the paper does.
            return true;
        }
        asks(self.retrieval_confidence(retrieval), self.config.ask_below)
    }

    /// The confidence of retrieval's own decision (no LLM).
    pub fn retrieval_confidence(&self, retrieval: &Retrieval) -> f64 {
        self.decide(retrieval, None).confidence
    }

    /// The probability that a decision with these signals is right: the calibrator's, as
    /// recalibrated from the log's outcomes (which are all decisions without the LLM: one it
    /// answered keeps the calibrator's own); 0 when the signals make no number.
    pub(super) fn confidence_of(&self, signals: &Signals) -> f64 {
        let calibrator = &self.config.calibrator;
        let z = calibrator.log_odds_of(signals);
        // The recalibration is fitted on the long-text weights' log-odds of held-out examples
        // (an outcome does not say whether its text was short): a short text keeps the
        // short-text weights' own figure.
        let recalibration = match signals.llm {
            None if !calibrator.reads_as_short(signals) => self.outcomes.recalibration(),
            None | Some(_) => Recalibration::default(),
        };
        let p = recalibration.probability(z);
        if p.is_nan() {
            0.0
        } else {
            p
        }
    }

    /// The prompt asking the LLM to pick one of the candidates.
    pub fn classification_prompt(
        &self,
        retrieval: &Retrieval,
        text: &str,
        analysis: &Analysis,
    ) -> Prompt {
        let choices: Vec<ClassChoice<'_>> = retrieval
            .candidates
            .iter()
            .filter_map(|c| self.labels.get(&c.label).map(|label| (c, label)))
            .map(|(candidate, label)| ClassChoice {
                display: label.display(),
                description: label.description.as_deref(),
                example: candidate
                    .evidence
                    .as_ref()
                    .and_then(|e| e.example.as_deref())
                    .filter(|_| self.config.example_chars > 0)
                    .map(|e| prompt::clip(e, self.config.example_chars)),
            })
            .collect();
        let keyword_body;
        let body = if self.config.keyword_input {
            keyword_body = analysis
                .keywords
                .iter()
                .map(|k| k.phrase.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            keyword_body.as_str()
        } else {
            prompt::clip(text, self.config.max_prompt_chars)
        };
        prompt::classification_for(
            &choices,
            body,
            self.config.answer_max_tokens,
            self.config.choice,
            self.config.prompt_layout,
        )
    }
}

/// Whether a text of this retrieval confidence is asked about: below `ask_below`, and every text
/// at 1 — a confidence can reach 1.0 exactly, and "1 asks about every text" must hold for it
/// too (`gorag eval --ask-below 1` reads the model's answer for every text).
pub fn asks(confidence: f64, ask_below: f64) -> bool {
    ask_below >= 1.0 || confidence < ask_below
}

#[cfg(test)]
mod tests {
    use super::asks;

    #[test]
    fn one_asks_about_every_text_and_zero_about_none() {
        for confidence in [0.0, 0.5, 0.999, 1.0, f64::NAN] {
            assert!(asks(confidence, 1.0), "{confidence}");
            assert!(!asks(confidence, 0.0), "{confidence}");
        }
        assert!(asks(0.59, 0.6));
        assert!(!asks(0.6, 0.6));
    }
}
