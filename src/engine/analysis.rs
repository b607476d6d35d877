//! A text's analysis — its phrases, the keywords chosen from them, its retrieval terms — and
//! the cut-down forms the learn record and the discovery pool keep.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::embedding::{Embeddings, EncodeError, TextEncoder};
use super::index::{TextIndex, SEEN_TERMS};
use super::keywords::{self, Keyword};
use super::rounds::example_to_encode;
use super::terms::TermCounts;
use super::text::PhraseCounts;
use super::tfidf::CorpusStats;
use super::{EngineConfig, Labels, NewLabel};

/// A text's phrases and the keywords chosen from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub phrases: PhraseCounts,
    pub keywords: Vec<Keyword>,
    /// The retrieval index's terms of the text (stems, phrases within stop words).
    #[serde(default)]
    pub terms: TermCounts,
    /// The text's sentence vector, with the embedding signal (the shell's
    /// `one_text::Preliminary`, or [`Analyzer::embed_query`]). Never stored: learn records and the
    /// pool carry terms only.
    #[serde(skip)]
    pub embedding: Option<Vec<f32>>,
    /// The text's words as the probe reads them ([`super::probe::word_counts`]); boxed, as
    /// most analyses that travel (learn records, the pool) have none. Never stored, like the
    /// vector.
    #[serde(skip)]
    pub words: Option<Box<TermCounts>>,
}

impl Analysis {
    /// The text's words as the probe reads them (none for an analysis that travelled without
    /// them: a learn record, a pooled text).
    pub fn probe_words(&self) -> std::borrow::Cow<'_, TermCounts> {
        match &self.words {
            Some(words) => std::borrow::Cow::Borrowed(words),
            None => std::borrow::Cow::Owned(TermCounts::default()),
        }
    }

    /// The same phrases and keywords with `terms` instead.
    fn with_terms(&self, terms: TermCounts) -> Self {
        Self {
            phrases: self.phrases.clone(),
            keywords: self.keywords.clone(),
            terms,
            embedding: None,
            words: None,
        }
    }
}

/// Terms a pooled text keeps at most (see [`Analyzer::poolable`]).
pub const POOL_TERMS: usize = 1_000;

/// What the engine reads of a text ([`super::Engine::analyzer`]): its phrases, keywords and
/// terms, their cut-down forms, and which of the sentence encoder's readings a text or an
/// update needs. It reads the configuration, the label set, the keyword statistics, the
/// retrieval index and the embedding signal, and changes nothing.
#[derive(Clone, Copy)]
pub struct Analyzer<'e> {
    pub(super) config: &'e EngineConfig,
    pub(super) labels: &'e Labels,
    pub(super) stats: &'e CorpusStats,
    pub(super) index: &'e TextIndex,
    pub(super) embeddings: Option<&'e Embeddings>,
}

impl Analyzer<'_> {
    /// Phrases and statistical keywords of a query text, scored as if it had joined the
    /// statistics (which online indexing then makes true).
    pub fn analyze(&self, text: &str) -> Analysis {
        let phrases = PhraseCounts::of(text);
        let scores = self.stats.scores(&phrases, false);
        let keywords = keywords::select(scores, &self.config.selection);
        Analysis {
            phrases,
            keywords,
            terms: TermCounts::of(text),
            embedding: None,
            words: self.probe_words(text),
        }
    }

    /// A query's words for the probe, wherever the configuration may read one — not only
    /// while a probe is fitted: the service reads a text ahead of its turn, and whether the
    /// probe weighs by then depends on timing, which must not change what it is decided.
    fn probe_words(&self, text: &str) -> Option<Box<TermCounts>> {
        super::probe::reads_probe(self.config).then(|| Box::new(super::probe::word_counts(text)))
    }

    /// The encoder a query's text goes through, with the embedding signal on and a strategy
    /// with a first hop (`ranked`, `hybrid`); None otherwise. Its vector goes in
    /// [`Analysis::embedding`] (the shell encodes off its loop: `one_text::Preliminary`).
    pub fn query_encoder(&self) -> Option<Arc<dyn TextEncoder>> {
        self.embeddings
            .filter(|_| self.config.strategy.reads_meaning())
            .map(|embeddings| embeddings.encoder())
    }

    /// Encode the query text into `analysis` here and now, when [`Self::query_encoder`] says
    /// so (a no-op otherwise). On error the analysis is left without a vector.
    pub fn embed_query(&self, analysis: &mut Analysis, text: &str) -> Result<(), EncodeError> {
        if let Some(encoder) = self.query_encoder() {
            analysis.embedding = Some(encoder.encode(text)?);
        }
        Ok(())
    }

    /// The analysis as online indexing needs it: the text graph keeps a text's heaviest terms
    /// only, so a learn record need not carry the rest (long texts would make it large).
    pub fn learnable(&self, analysis: &Analysis) -> Analysis {
        analysis.with_terms(self.index.weights().heaviest(&analysis.terms, SEEN_TERMS))
    }

    /// `analysis` as the discovery pool keeps it: its [`POOL_TERMS`] heaviest terms (every term
    /// of a text of ordinary length). The pool's similarities need more than a learn record's
    /// heaviest hundred (docs/design/emerging-classes.md, "Emerging classes"), but a note that
    /// kept all the terms of a 100 kB text would be a megabyte in the changelog and in every
    /// replica's pool.
    pub fn poolable(&self, analysis: &Analysis) -> Analysis {
        analysis.with_terms(self.poolable_terms(&analysis.terms))
    }

    /// The terms of [`Analyzer::poolable`] alone (what a discovery note carries).
    pub fn poolable_terms(&self, terms: &TermCounts) -> TermCounts {
        self.index.weights().heaviest(terms, POOL_TERMS)
    }

    /// Like [`Analyzer::analyze`] but with the keywords an LLM proposed.
    pub fn analyze_with_llm_keywords(&self, text: &str, answer: &str) -> Analysis {
        let phrases = PhraseCounts::of(text);
        let scores: HashMap<String, f64> = self
            .stats
            .scores(&phrases, false)
            .into_iter()
            .map(|(phrase, score)| (phrase.to_string(), score))
            .collect();
        let keywords = keywords::from_llm_answer(answer, &phrases, &scores, &self.config.selection);
        Analysis {
            phrases,
            keywords,
            terms: TermCounts::of(text),
            embedding: None,
            words: self.probe_words(text),
        }
    }

    /// The labelled texts a round asks the encoder for (its labels' names and examples), as
    /// [`super::Engine::apply_round`] asks for them: a shell may encode them ahead, off its
    /// loop, with an encoder that keeps material (`embed::RememberingEncoder`), so that applying
    /// reads the vectors back. Empty without the embedding signal, and for a round the engine
    /// would refuse (it encodes nothing then).
    pub fn round_material(&self, labels: &[NewLabel]) -> Vec<String> {
        if self.embeddings.is_none() || self.labels.check_round(labels).is_err() {
            return Vec::new();
        }
        labels
            .iter()
            .filter_map(|label| label.name.as_deref().map(Embeddings::name_text))
            .chain(
                labels
                    .iter()
                    .flat_map(|label| examples_to_encode(&label.examples)),
            )
            .collect()
    }

    /// The same for examples added to `label` (by an operator, or a correction's text): empty
    /// without the embedding signal or when `label` is not active.
    pub fn examples_material(&self, label: &str, examples: &[String]) -> Vec<String> {
        if self.embeddings.is_none() || self.labels.active_position(label).is_err() {
            return Vec::new();
        }
        examples_to_encode(examples)
    }

    /// The encoder a label's material goes through (None without the embedding signal).
    pub fn material_encoder(&self) -> Option<Arc<dyn TextEncoder>> {
        self.embeddings.map(Embeddings::encoder)
    }
}

/// The examples of `examples` the encoder is asked for (a label's material).
fn examples_to_encode(examples: &[String]) -> Vec<String> {
    examples
        .iter()
        .filter_map(|e| example_to_encode(e, true, &TermCounts::of(e)))
        .map(str::to_string)
        .collect()
}
