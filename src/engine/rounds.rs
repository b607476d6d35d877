//! Rounds: registering labels and indexing their own material — examples, descriptions,
//! names — into the corpus statistics, the keyword graph, the retrieval index and (with the
//! embedding signal) the labels' vectors; and turning the embedding signal on.

use std::sync::Arc;

use petgraph::graph::NodeIndex;

use super::embedding::{Embeddings, TextEncoder};
use super::graph::KeywordGraph;
use super::index::{self, DocKind, LabelPos, TextIndex};
use super::keywords;
use super::prompt;
use super::refit::{HeldOutScoring, IndexedExample};
use super::terms::TermCounts;
use super::text::PhraseSpans;
use super::tfidf::CorpusStats;
use super::{Engine, EngineConfig, EngineError, IndexReport, LabelInfo, Labels, NewLabel};

/// What of a labelled document the encoder reads: an example's text as the index keeps it
/// (clipped), when it has any term at all; descriptions are not encoded.
pub(super) fn example_to_encode<'t>(
    text: &'t str,
    is_example: bool,
    terms: &TermCounts,
) -> Option<&'t str> {
    (is_example && !terms.is_empty()).then(|| prompt::clip(text, index::EXAMPLE_TEXT_CHARS))
}

/// Documents in a batch from which preparing them is spread over the cores (below it, starting
/// threads costs more than it saves).
const PREPARE_IN_THREADS_FROM: usize = 256;

/// A labelled document ready to index (see [`prepare_documents`]).
struct PreparedDocument<'t> {
    position: usize,
    text: &'t str,
    is_example: bool,
    terms: TermCounts,
    phrases: PhraseSpans,
    /// With the embedding signal, its vector (Some(None): the encoder failed on it).
    vector: Option<Option<Vec<f32>>>,
}

impl Engine {
    /// Turn the embedding signal on: every label name and labelled example the engine holds is
    /// encoded now, and what later rounds bring as it arrives. Material the encoder fails on is
    /// left without a vector, as a round leaves it, so a restarted instance is the one that ran
    /// (the count is returned).
    pub fn with_encoder(mut self, encoder: Arc<dyn TextEncoder>) -> (Self, usize) {
        let mut embeddings = Embeddings::new(encoder);
        let names: Vec<(usize, String)> = self
            .labels
            .all()
            .iter()
            .enumerate()
            .filter_map(|(position, label)| {
                let name = label.name.as_deref()?;
                Some((position, Embeddings::name_text(name)))
            })
            .collect();
        let examples: Vec<(usize, &str)> = self
            .index
            .documents()
            .alive()
            .filter_map(|doc| match (doc.kind, &doc.text) {
                (DocKind::Example, Some(text)) => Some((doc.label.index(), text.as_str())),
                _ => None,
            })
            .collect();
        let texts: Vec<&str> = names
            .iter()
            .map(|(_, name)| name.as_str())
            .chain(examples.iter().map(|&(_, text)| text))
            .collect();
        let mut vectors = embeddings.encode_material(&texts).into_iter();
        let mut unencoded = 0;
        for (&(position, _), vector) in names.iter().zip(vectors.by_ref()) {
            match vector {
                Ok(vector) => embeddings.set_name(position, vector),
                Err(_) => unencoded += 1,
            }
        }
        for (&(position, _), vector) in examples.iter().zip(vectors) {
            match vector {
                Ok(vector) => embeddings.push_example(position, vector),
                Err(_) => unencoded += 1,
            }
        }
        self.embeddings = Some(embeddings);
        self.refit_probe();
        (self, unencoded)
    }

    /// Register a round's labels and index their examples and descriptions; a round with an
    /// id (`round`: every round event has one) is kept as the last round. Validated as a whole
    /// first: on error nothing changes.
    pub fn apply_round(
        &mut self,
        round: Option<&str>,
        labels: &[NewLabel],
    ) -> Result<IndexReport, EngineError> {
        self.labels.check_round(labels)?;
        let first = self.labels.len();
        let mut documents = Vec::new();
        for (i, label) in labels.iter().enumerate() {
            for example in &label.examples {
                documents.push((first + i, example.as_str(), true));
            }
            if let Some(description) = &label.description {
                documents.push((first + i, description.as_str(), false));
            }
        }
        let prepared = prepare_documents(self.embeddings.as_ref(), &documents);
        let threads = if labels.len() >= PREPARE_IN_THREADS_FROM {
            crate::threads::cores()
        } else {
            1
        };
        let name_terms = crate::threads::in_threads(labels.iter().collect(), threads, |label| {
            label
                .name
                .as_ref()
                .map(|name| TermCounts::of(&name.replace('_', " ")))
        });
        let name_vectors: Vec<_> = labels
            .iter()
            .map(|label| encode_name(self.embeddings.as_ref(), label.name.as_deref()))
            .collect();
        let unencoded_names = name_vectors
            .iter()
            .filter(|v| matches!(v, Some(None)))
            .count();
        for ((label, name_vector), name_terms) in labels.iter().zip(name_vectors).zip(name_terms) {
            let position = self.labels.push(LabelInfo {
                id: label.id.clone(),
                name: label.name.clone(),
                description: label.description.clone(),
                active: true,
                examples: label.examples.len() as u32,
            });
            self.graph.ensure_label(&label.id);
            if let Some(terms) = name_terms {
                self.index
                    .add_labelled(DocKind::Name, LabelPos::at(position), terms, None);
            }
            if let (Some(embeddings), Some(Some(vector))) = (&mut self.embeddings, name_vector) {
                embeddings.set_name(position, vector);
            }
        }
        self.labels.bump_version();
        let (mut report, indexed) = Indexer::of(self).index(prepared);
        let cross_fit = super::probe_weight::refit_on_material(self);
        let outcomes = HeldOutScoring::of(self)
            .with_cross_fit(cross_fit.as_ref())
            .new_examples(&indexed);
        self.outcomes.record(outcomes, &self.config);
        report.labels_added = labels.len();
        report.unencoded += unencoded_names;
        if let Some(round) = round {
            self.labels.set_last_round(round);
        }
        Ok(report)
    }

    /// More labelled examples for an existing, active label (each scored against the label's
    /// other examples for the confidence's refit, as a round's are).
    pub fn add_examples(
        &mut self,
        label: &str,
        examples: &[String],
    ) -> Result<IndexReport, EngineError> {
        let (report, indexed) = Indexer::of(self).examples(label, examples)?;
        let cross_fit = super::probe_weight::refit_on_material(self);
        let outcomes = HeldOutScoring::of(self)
            .with_cross_fit(cross_fit.as_ref())
            .new_examples(&indexed);
        self.outcomes.record(outcomes, &self.config);
        Ok(report)
    }

    /// Stop offering a label. Its graph nodes stay (their keywords still connect the graph).
    pub fn retire_label(&mut self, label: &str) -> Result<(), EngineError> {
        let position = self.labels.active_position(label)?;
        self.labels.retire(position);
        Ok(())
    }
}

/// The parts indexing a batch of labelled material writes (the statistics, the keyword
/// graph, the retrieval index, the embedding signal), with the parts it reads.
pub(super) struct Indexer<'e> {
    config: &'e EngineConfig,
    labels: &'e mut Labels,
    graph: &'e mut KeywordGraph,
    stats: &'e mut CorpusStats,
    index: &'e mut TextIndex,
    embeddings: Option<&'e mut Embeddings>,
}

impl<'e> Indexer<'e> {
    pub(super) fn of(engine: &'e mut Engine) -> Self {
        Self {
            config: &engine.config,
            labels: &mut engine.labels,
            graph: &mut engine.graph,
            stats: &mut engine.stats,
            index: &mut engine.index,
            embeddings: engine.embeddings.as_mut(),
        }
    }

    /// Index more examples of an active label; the examples indexed come back with the report.
    pub(super) fn examples<'t>(
        self,
        label: &str,
        examples: &'t [String],
    ) -> Result<(IndexReport, Vec<IndexedExample<'t>>), EngineError> {
        let position = self.labels.active_position(label)?;
        let documents: Vec<_> = examples
            .iter()
            .map(|e| (position, e.as_str(), true))
            .collect();
        let prepared = prepare_documents(self.embeddings.as_deref(), &documents);
        self.labels.add_examples(position, examples.len() as u32);
        Ok(self.index(prepared))
    }

    /// Two passes, as a vectoriser fitted on the whole batch would: every document joins the
    /// statistics first, then each is scored and linked to its label. The retrieval index gets
    /// the examples and descriptions too, and each new label's name, then recomputes its
    /// weights once for the batch. The two sides touch different state, so a large batch runs
    /// them side by side, each in the documents' order.
    fn index<'t>(
        mut self,
        documents: Vec<PreparedDocument<'t>>,
    ) -> (IndexReport, Vec<IndexedExample<'t>>) {
        let texts_indexed = documents.len();
        let unencoded = documents
            .iter()
            .filter(|d| matches!(d.vector, Some(None)))
            .count();
        let threads = if documents.len() >= PREPARE_IN_THREADS_FROM {
            crate::threads::cores()
        } else {
            1
        };
        let before = self.graph.keyword_count();
        let mut phrases = Vec::with_capacity(documents.len());
        let mut material = Vec::with_capacity(documents.len());
        for document in documents {
            let PreparedDocument {
                position,
                text,
                is_example,
                terms,
                phrases: spans,
                vector,
            } = document;
            let label = self.graph.ensure_label(&self.labels[position].id);
            phrases.push((label, spans));
            material.push((position, text, is_example, terms, vector));
        }
        let sides = vec![
            Side::Keywords {
                graph: &mut *self.graph,
                stats: &mut *self.stats,
                config: self.config,
                phrases,
                threads,
            },
            Side::Index {
                index: &mut *self.index,
                embeddings: self.embeddings.as_deref_mut(),
                material,
            },
        ];
        let indexed = crate::threads::in_threads(sides, threads.min(2), Side::run)
            .into_iter()
            .flatten()
            .collect();
        let report = IndexReport {
            labels_added: 0,
            texts_indexed,
            keywords_added: self.graph.keyword_count() - before,
            unencoded,
            correction: None,
        };
        (report, indexed)
    }
}

/// What is derived from a batch of labelled material: each document's retrieval terms and
/// keyword phrases (on every core for a large batch: they depend on the text alone) and,
/// with the embedding signal, each kept example's vector (encoded from the text the index
/// keeps, so a restored engine encodes the same). An encoder failure leaves the document
/// without a vector rather than refusing it: whether a round applies must depend on the
/// round alone, or replicas would disagree.
fn prepare_documents<'t>(
    embeddings: Option<&Embeddings>,
    documents: &[(usize, &'t str, bool)],
) -> Vec<PreparedDocument<'t>> {
    let threads = if documents.len() >= PREPARE_IN_THREADS_FROM {
        crate::threads::cores()
    } else {
        1
    };
    let mut prepared: Vec<PreparedDocument<'t>> = crate::threads::in_threads(
        documents.to_vec(),
        threads,
        |(position, text, is_example)| PreparedDocument {
            position,
            text,
            is_example,
            terms: TermCounts::of(text),
            phrases: PhraseSpans::of(text),
            vector: None,
        },
    );
    let Some(embeddings) = embeddings else {
        return prepared;
    };
    let encoded: Vec<(&mut PreparedDocument<'t>, &'t str)> = prepared
        .iter_mut()
        .filter_map(|d| {
            let text = example_to_encode(d.text, d.is_example, &d.terms)?;
            Some((d, text))
        })
        .collect();
    let (encoded, texts): (Vec<_>, Vec<&str>) = encoded.into_iter().unzip();
    for (document, vector) in encoded.into_iter().zip(embeddings.encode_material(&texts)) {
        document.vector = Some(vector.ok());
    }
    prepared
}

/// A label name's vector with the embedding signal: None without it, Some(None) when the
/// encoder failed.
fn encode_name(embeddings: Option<&Embeddings>, name: Option<&str>) -> Option<Option<Vec<f32>>> {
    match (embeddings, name) {
        (Some(embeddings), Some(name)) => Some(embeddings.encode_name(name).ok()),
        _ => None,
    }
}

/// One side of indexing a batch ([`Indexer::index`]).
enum Side<'e, 't> {
    /// The statistics, each text's keywords and the keyword graph.
    Keywords {
        graph: &'e mut KeywordGraph,
        stats: &'e mut CorpusStats,
        config: &'e EngineConfig,
        /// Per document, its label's node and its phrases.
        phrases: Vec<(NodeIndex, PhraseSpans)>,
        threads: usize,
    },
    /// The retrieval index and, with the embedding signal, the examples' vectors.
    Index {
        index: &'e mut TextIndex,
        embeddings: Option<&'e mut Embeddings>,
        /// Per document: its label's position, its text, whether it is an example, its terms
        /// and its vector.
        material: Vec<Material<'t>>,
    },
}

type Material<'t> = (usize, &'t str, bool, TermCounts, Option<Option<Vec<f32>>>);

impl<'t> Side<'_, 't> {
    /// Index this side; the examples indexed come back from the index's side.
    fn run(self) -> Vec<IndexedExample<'t>> {
        match self {
            Side::Keywords {
                graph,
                stats,
                config,
                phrases,
                threads,
            } => {
                let distinct: usize = phrases.iter().map(|(_, text)| text.distinct()).sum();
                stats.reserve(distinct.min(config.phrase_capacity));
                for (_, text) in &phrases {
                    stats.add_distinct(text.iter().map(|(phrase, _)| phrase));
                }
                // Each text's keywords, scored with every text counted, depend on the
                // statistics alone: chosen on every core, then linked in the documents' order.
                let stats_now: &CorpusStats = stats;
                let selection = &config.example_selection;
                let chosen: Vec<Vec<(&str, f64)>> =
                    crate::threads::in_threads(phrases.iter().collect(), threads, |(_, text)| {
                        keywords::best(
                            stats_now.scores_of(text.iter(), text.total, true),
                            selection,
                        )
                    });
                graph.reserve(chosen.iter().map(Vec::len).sum());
                for ((label, _), chosen) in phrases.iter().zip(chosen) {
                    for (phrase, score) in chosen {
                        graph.observe_at(phrase, *label, 1.0 - score);
                    }
                }
                // After the batch's keywords were chosen: they were scored with every text
                // counted.
                stats.bound(config.phrase_capacity);
                Vec::new()
            }
            Side::Index {
                index,
                mut embeddings,
                material,
            } => {
                let mut indexed = Vec::new();
                for (position, text, is_example, terms, vector) in material {
                    let kind = if is_example {
                        DocKind::Example
                    } else {
                        DocKind::Description
                    };
                    let doc = index.add_labelled(kind, LabelPos::at(position), terms, Some(text));
                    let vector = vector.flatten();
                    if let (Some(embeddings), Some(vector)) = (embeddings.as_deref_mut(), &vector) {
                        embeddings.push_example(position, vector.clone());
                    }
                    if let (true, Some(doc)) = (is_example, doc) {
                        indexed.push(IndexedExample {
                            position,
                            doc,
                            text,
                            vector,
                        });
                    }
                }
                index.reweigh();
                indexed
            }
        }
    }
}
