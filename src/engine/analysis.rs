//! A text's analysis — its phrases, the keywords chosen from them, its retrieval terms — and
//! the cut-down forms the learn record and the discovery pool keep.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::embedding::{EncodeError, TextEncoder};
use super::keywords::{self, Keyword};
use super::terms::TermCounts;
use super::text::PhraseCounts;
use super::Engine;

/// A text's phrases and the keywords chosen from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub phrases: PhraseCounts,
    pub keywords: Vec<Keyword>,
    /// The retrieval index's terms of the text (stems, phrases within stop words).
    #[serde(default)]
    pub terms: TermCounts,
    /// The text's sentence vector, with the embedding signal (the shell's
    /// `rag::Preliminary`, or [`Engine::embed_query`]). Never stored: learn records and the
    /// pool carry terms only.
    #[serde(skip)]
    pub embedding: Option<Vec<f32>>,
}

impl Analysis {
    /// The same phrases and keywords with `terms` instead.
    fn with_terms(&self, terms: TermCounts) -> Self {
        Self {
            phrases: self.phrases.clone(),
            keywords: self.keywords.clone(),
            terms,
            embedding: None,
        }
    }
}

/// Terms a pooled text keeps at most (see [`Engine::poolable`]).
pub const POOL_TERMS: usize = 1_000;

impl Engine {
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
        }
    }

    /// The encoder a query's text goes through, with the embedding signal on and a strategy
    /// with a first hop (`ranked`, `hybrid`); None otherwise. Its vector goes in
    /// [`Analysis::embedding`] (the shell encodes off its loop: `rag::Preliminary`).
    pub fn query_encoder(&self) -> Option<Arc<dyn TextEncoder>> {
        self.embeddings
            .as_ref()
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
        analysis.with_terms(self.index.heaviest_terms(&analysis.terms))
    }

    /// `analysis` as the discovery pool keeps it: its [`POOL_TERMS`] heaviest terms (every term
    /// of a text of ordinary length). The pool's similarities need more than a learn record's
    /// heaviest hundred (docs/design/emerging-classes.md, "Emerging classes"), but a note that
    /// kept all the terms of a 100 kB text would be a megabyte in the changelog and in every
    /// replica's pool.
    pub fn poolable(&self, analysis: &Analysis) -> Analysis {
        analysis.with_terms(self.poolable_terms(&analysis.terms))
    }

    /// The terms of [`Engine::poolable`] alone (what a discovery note carries).
    pub fn poolable_terms(&self, terms: &TermCounts) -> TermCounts {
        self.index.heaviest_terms_up_to(terms, POOL_TERMS)
    }

    /// Like [`Engine::analyze`] but with the keywords an LLM proposed.
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
        }
    }
}
