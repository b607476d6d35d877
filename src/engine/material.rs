//! The labels' own material — labelled examples and names — detached from the engine: what
//! emerging-class discovery measures a text's first-hop score against. Descriptions are left
//! out: an LLM may have written them for some labels and not others, and they would move the
//! scale discovery's thresholds were set on. It holds no seen texts, so it is cheap to build,
//! and it is owned, so a task off the service loop (a community pass) can score texts with it.
//! Its weights are the engine's (the label spread as of the engine's last fold) for the texts
//! it is made to score: the copy carries what classified texts taught of their terms only.

use super::index::{DocKind, IndexDoc, TextIndex};
use super::rank::{self, Evidence, RankingConfig};
use super::retrieve::Retriever;
use super::terms::TermCounts;

#[derive(Debug, Clone, Default)]
pub struct LabelMaterial {
    index: TextIndex,
    /// Per label position: whether it is active.
    active: Vec<bool>,
    /// Per label position: its id.
    ids: Vec<String>,
    ranking: RankingConfig,
}

impl LabelMaterial {
    /// Whether a text of these terms is short, as the ranking calls it.
    pub fn is_short(&self, terms: &TermCounts) -> bool {
        self.ranking.is_short(terms.counts.len())
    }

    /// The id of the label at `position`.
    pub fn label_id(&self, position: usize) -> Option<&str> {
        self.ids.get(position).map(String::as_str)
    }

    /// The active labels' examples' texts (clipped as the index keeps them).
    pub fn example_texts(&self) -> impl Iterator<Item = &str> + '_ {
        self.labelled_examples().map(|(_, text)| text)
    }

    /// The same, each with its label's position (an example's label, told apart from the
    /// others', without naming it).
    pub fn labelled_examples(&self) -> impl Iterator<Item = (usize, &str)> + '_ {
        self.index.documents().alive().filter_map(|doc| {
            let label = doc.label.index();
            let active = self.active.get(label).copied() == Some(true);
            doc.text
                .as_deref()
                .filter(|_| active && doc.kind == DocKind::Example)
                .map(|text| (label, text))
        })
    }

    /// A text's best first-hop score over the active labels (0 when none knows any of its
    /// terms): the `ranked` strategy's score, without the second hop and descriptions.
    pub fn best_score(&self, terms: &TermCounts) -> f64 {
        let hits = self.index.search(terms);
        let evidence = Evidence {
            first_hop: true,
            second_hop: false,
        };
        let is_active = |label: u32| self.active.get(label as usize).copied().unwrap_or(false);
        let ranking = rank::score(&hits, self.active.len(), is_active, &self.ranking, evidence);
        ranking.ranked.first().map_or(0.0, |&(_, score)| score)
    }
}

impl Retriever<'_> {
    /// A copy of the labels' own material, as it stands now, to score texts made of the
    /// `scored` texts' terms (others are scored as if nothing had been learned of the terms only
    /// this engine's classified texts hold).
    pub fn label_material<'a>(
        &self,
        scored: impl IntoIterator<Item = &'a TermCounts>,
    ) -> LabelMaterial {
        let docs: Vec<IndexDoc> = self
            .index
            .documents()
            .alive()
            // Discovery's scale: examples and names, which every named label has, not
            // descriptions, which an LLM may have written for some labels only.
            .filter(|doc| matches!(doc.kind, DocKind::Example | DocKind::Name))
            .map(|doc| IndexDoc {
                kind: doc.kind,
                label: doc.label,
                terms: doc.terms.clone(),
                // An example's text: what discovery centres the pooled texts' meaning on.
                text: doc
                    .text
                    .as_ref()
                    .filter(|_| doc.kind == DocKind::Example)
                    .cloned(),
            })
            .collect();
        LabelMaterial {
            index: self.index.detached(docs, scored),
            active: self.labels.all().iter().map(|label| label.active).collect(),
            ids: self
                .labels
                .all()
                .iter()
                .map(|label| label.id.clone())
                .collect(),
            ranking: self.config.ranking.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineConfig, NewLabel};

    fn label(id: &str, example: &str) -> NewLabel {
        NewLabel {
            id: id.to_string(),
            name: Some(id.to_string()),
            description: None,
            examples: vec![example.to_string()],
        }
    }

    #[test]
    fn scores_as_the_engines_first_hop_without_descriptions_whatever_it_learned_since() {
        let mut engine = Engine::new(EngineConfig::default());
        engine
            .apply_round(
                None,
                &[
                    label(
                        "astronomy",
                        "telescope images of distant galaxies and stars",
                    ),
                    label(
                        "cooking",
                        "bread dough with flour and yeast baked in the oven",
                    ),
                    label("sailing", "a yacht race with spinnakers in a strong breeze"),
                ],
            )
            .unwrap();
        // Seen texts change the engine's second hop, not the labels' material.
        for text in [
            "galaxies seen through a new telescope",
            "yeast bread recipe",
        ] {
            let analysis = engine.analyzer().analyze(text);
            let label = engine.retriever().retrieve(&analysis).unwrap().graph_choice;
            engine.learn(&analysis, &label, true);
        }
        engine.retire_label("sailing").unwrap();
        // Material that arrives later changes every weight (df) and adds label positions.
        engine
            .apply_round(
                None,
                &[NewLabel {
                    id: "volcanology".into(),
                    name: None,
                    description: Some("eruptions of lava and ash from volcanoes".into()),
                    examples: vec!["magma chamber beneath the crater".into()],
                }],
            )
            .unwrap();
        engine
            .add_examples("cooking", &["a stew of beans simmered slowly".into()])
            .unwrap();
        let first_hop = Evidence {
            first_hop: true,
            second_hop: false,
        };
        let texts = [
            "stars and galaxies seen",
            "oven baked bread",
            "yacht race in a breeze",
            "nothing known here",
            "lava and ash over the crater",
            "bean stew",
        ];
        let scored: Vec<TermCounts> = texts
            .iter()
            .map(|t| engine.analyzer().analyze(t).terms)
            .collect();
        let material = engine.retriever().label_material(&scored);
        for (text, terms) in texts.iter().zip(&scored) {
            // The engine's first hop on discovery's scale: descriptions left out.
            let expected = engine
                .retriever()
                .rank(terms, first_hop)
                .best_without_descriptions;
            let got = material.best_score(terms);
            assert!(
                (got - expected).abs() < 1e-12,
                "{text}: {got} vs {expected}"
            );
        }
        // Volcanology's description counts in retrieval, not in discovery's scale.
        let lava = engine
            .analyzer()
            .analyze("lava and ash over the crater")
            .terms;
        let ranked_best = engine.retriever().rank(&lava, first_hop).ranked[0].1;
        assert!(material.best_score(&lava) < ranked_best);
        // A retired label scores nothing.
        let terms = engine
            .analyzer()
            .analyze("yacht race in a breeze spinnakers")
            .terms;
        assert_eq!(material.best_score(&terms), 0.0);
        assert!(material.best_score(&engine.analyzer().analyze("stars").terms) > 0.0);
    }
}
