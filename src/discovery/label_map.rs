//! The label space at a glance: active labels joined by the keywords they share in the graph
//! (and, when known, by the confusions observed between them), grouped into Leiden communities
//! and laid out for a map — communities around a circle, their labels around each community's
//! centre. Deterministic: the same engine and counts give the same map.

use std::collections::{BTreeMap, HashMap};

use leiden_rs::{GraphDataBuilder, Leiden, LeidenConfig, LeidenError, QualityType};
use serde::Serialize;

use crate::engine::Engine;
use crate::events::HallucinationKind;
use crate::events::Prediction;

/// Leiden's seed (the same state gives the same map).
const SEED: u64 = 7;
/// Links drawn per label: its strongest.
const LINKS_PER_LABEL: usize = 3;
/// Keywords listed per label.
const KEYWORDS_PER_LABEL: usize = 5;
/// A keyword shared by more labels than this says nothing about any two of them.
const MAX_SHARING_LABELS: usize = 10;

/// What the stream (or an evaluation) observed of one label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LabelTraffic {
    /// Texts predicted as this label.
    pub volume: u64,
    /// Of those, flagged as hallucinations.
    pub hallucinations: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MappedLabel {
    pub id: String,
    pub group: usize,
    pub x: f64,
    pub y: f64,
    pub keywords: Vec<String>,
    pub traffic: Option<LabelTraffic>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelMap {
    pub labels: Vec<MappedLabel>,
    /// (label, label, weight) by position in `labels`, strongest first per label.
    pub links: Vec<(usize, usize, f64)>,
    pub groups: usize,
}

/// The map of `engine`'s active labels. `confusions` counts, per pair of label ids, texts of
/// one predicted as the other (either way); `traffic` is per label id.
pub fn label_map(
    engine: &Engine,
    confusions: &BTreeMap<(String, String), u64>,
    traffic: &HashMap<String, LabelTraffic>,
) -> Result<LabelMap, LeidenError> {
    let ids: Vec<String> = engine.labels().active().map(|l| l.id.clone()).collect();
    let position: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let (weights, keywords) = shared_keywords(engine, &position);
    let mut weights = weights;
    for ((a, b), count) in confusions {
        if let (Some(&i), Some(&j)) = (position.get(a.as_str()), position.get(b.as_str())) {
            if i != j {
                *weights.entry((i.min(j), i.max(j))).or_default() += *count as f64;
            }
        }
    }
    let groups = communities(ids.len(), &weights)?;
    let group_count = groups.iter().copied().max().map_or(0, |g| g + 1);
    let places = layout(&groups, group_count);
    let labels = ids
        .iter()
        .enumerate()
        .map(|(i, id)| MappedLabel {
            id: id.clone(),
            group: groups[i],
            x: places[i].0,
            y: places[i].1,
            keywords: keywords.get(&i).cloned().unwrap_or_default(),
            traffic: traffic.get(id).copied(),
        })
        .collect();
    Ok(LabelMap {
        labels,
        links: strongest_links(ids.len(), &weights),
        groups: group_count,
    })
}

/// What a stream of predictions says of the labels: per label id its volume and hallucinations
/// (the last prediction per text id counts: a replay repeats some), and the confusions the LLM
/// made — a label chosen outside the candidates, against retrieval's best candidate.
pub fn observed(
    predictions: &[Prediction],
) -> (
    HashMap<String, LabelTraffic>,
    BTreeMap<(String, String), u64>,
) {
    let mut last: HashMap<&str, &Prediction> = HashMap::new();
    for prediction in predictions {
        last.insert(prediction.text_id.as_str(), prediction);
    }
    let mut traffic: HashMap<String, LabelTraffic> = HashMap::new();
    let mut confusions: BTreeMap<(String, String), u64> = BTreeMap::new();
    for prediction in last.values() {
        // A text that matched no label is no label's traffic.
        let Some(label) = &prediction.label else {
            continue;
        };
        let entry = traffic.entry(label.clone()).or_default();
        entry.volume += 1;
        entry.hallucinations += u64::from(prediction.hallucination);
        let outside = prediction.hallucination_kind == Some(HallucinationKind::OutsideCandidates);
        if let (true, Some(best)) = (outside, prediction.candidates.first()) {
            let pair = if label < best {
                (label.clone(), best.clone())
            } else {
                (best.clone(), label.clone())
            };
            *confusions.entry(pair).or_default() += 1;
        }
    }
    (traffic, confusions)
}

/// Weight per pair of label positions `(a, b)`, `a < b`.
type PairWeights = BTreeMap<(usize, usize), f64>;

/// Pair weights from keywords two labels both link to (a keyword shared by `k` labels adds
/// `1 / (k − 1)` to each of its pairs), and each label's most specific keywords.
fn shared_keywords(
    engine: &Engine,
    position: &HashMap<&str, usize>,
) -> (PairWeights, HashMap<usize, Vec<String>>) {
    let mut by_keyword: BTreeMap<&str, Vec<(usize, f64)>> = BTreeMap::new();
    for (keyword, label, cost) in engine.graph().keyword_edges() {
        if let Some(&i) = position.get(label) {
            by_keyword
                .entry(keyword)
                .or_default()
                .push((i, cost.mean()));
        }
    }
    let mut weights = PairWeights::new();
    let mut own: HashMap<usize, Vec<(f64, &str)>> = HashMap::new();
    for (keyword, labels) in &by_keyword {
        if labels.len() == 1 {
            let (label, cost) = labels[0];
            own.entry(label).or_default().push((cost, keyword));
            continue;
        }
        if labels.len() > MAX_SHARING_LABELS {
            continue;
        }
        let share = 1.0 / (labels.len() - 1) as f64;
        for (n, &(a, _)) in labels.iter().enumerate() {
            for &(b, _) in &labels[n + 1..] {
                if a != b {
                    *weights.entry((a.min(b), a.max(b))).or_default() += share;
                }
            }
        }
    }
    let keywords = own
        .into_iter()
        .map(|(label, mut list)| {
            // Cheapest edges first: the keywords most typical of the label.
            list.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(y.1)));
            let names = list
                .into_iter()
                .take(KEYWORDS_PER_LABEL)
                .map(|(_, k)| k.to_string())
                .collect();
            (label, names)
        })
        .collect();
    (weights, keywords)
}

/// Community of each label (0-based, largest community first); isolated labels get their own.
fn communities(labels: usize, weights: &PairWeights) -> Result<Vec<usize>, LeidenError> {
    if labels == 0 {
        return Ok(Vec::new());
    }
    let mut builder = GraphDataBuilder::new(labels);
    for (&(a, b), &w) in weights {
        builder.add_edge(a, b, w)?;
    }
    let partition = Leiden::new(LeidenConfig {
        seed: Some(SEED),
        quality: QualityType::Modularity,
        ..LeidenConfig::default()
    })
    .run(&builder.build()?)?
    .partition;
    let mut members: Vec<Vec<usize>> = partition
        .communities()
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| !m.is_empty())
        .collect();
    members.sort_by(|a, b| b.len().cmp(&a.len()).then(a.first().cmp(&b.first())));
    let mut group = vec![0; labels];
    for (g, list) in members.iter().enumerate() {
        for &label in list {
            group[label] = g;
        }
    }
    Ok(group)
}

/// Positions in the unit square: community centres on a circle, each community's labels on a
/// circle around its centre sized by how many it holds.
fn layout(groups: &[usize], group_count: usize) -> Vec<(f64, f64)> {
    use std::f64::consts::TAU;
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); group_count];
    for (label, &g) in groups.iter().enumerate() {
        members[g].push(label);
    }
    let mut places = vec![(0.5, 0.5); groups.len()];
    let ring = if group_count > 1 { 0.34 } else { 0.0 };
    for (g, list) in members.iter().enumerate() {
        let angle = TAU * g as f64 / group_count.max(1) as f64;
        let centre = (0.5 + ring * angle.cos(), 0.5 + ring * angle.sin());
        let radius = if list.len() > 1 {
            (0.012 * list.len() as f64).clamp(0.03, if group_count > 1 { 0.13 } else { 0.42 })
        } else {
            0.0
        };
        for (n, &label) in list.iter().enumerate() {
            let a = TAU * n as f64 / list.len() as f64;
            places[label] = (centre.0 + radius * a.cos(), centre.1 + radius * a.sin());
        }
    }
    places
}

/// Each label's strongest links, each pair once, strongest first.
fn strongest_links(
    labels: usize,
    weights: &BTreeMap<(usize, usize), f64>,
) -> Vec<(usize, usize, f64)> {
    let mut per_label: Vec<Vec<(usize, usize, f64)>> = vec![Vec::new(); labels];
    for (&(a, b), &w) in weights {
        per_label[a].push((a, b, w));
        per_label[b].push((a, b, w));
    }
    let mut kept: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for mut list in per_label {
        list.sort_by(|x, y| y.2.total_cmp(&x.2).then((x.0, x.1).cmp(&(y.0, y.1))));
        for (a, b, w) in list.into_iter().take(LINKS_PER_LABEL) {
            kept.insert((a, b), w);
        }
    }
    let mut links: Vec<(usize, usize, f64)> =
        kept.into_iter().map(|((a, b), w)| (a, b, w)).collect();
    links.sort_by(|x, y| y.2.total_cmp(&x.2).then((x.0, x.1).cmp(&(y.0, y.1))));
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prediction(id: &str, label: &str, kind: Option<&str>, candidates: &[&str]) -> Prediction {
        let mut json = serde_json::json!({
            "version": 1, "text_id": id, "label": label, "source": "llm",
            "candidates": candidates, "basis": "ranked_scores", "keywords": [],
            "hallucination": kind.is_some(), "label_version": 1,
            "latency": {"decode_ms": 0.0, "keywords_ms": 0.0, "retrieve_ms": 0.0, "llm_ms": 0.0, "index_ms": 0.0,
                        "total_ms": 0.0},
            "input": {"topic": "t", "partition": 0, "offset": 0}
        });
        if let Some(kind) = kind {
            json["hallucination_kind"] = kind.into();
        }
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn traffic_counts_the_last_prediction_per_text_and_outside_choices_confuse() {
        let predictions = [
            prediction("t1", "a", None, &["a", "b"]),
            // A replay of t1, decided otherwise: the last one counts.
            prediction("t1", "b", None, &["b", "a"]),
            prediction("t2", "c", Some("outside_candidates"), &["a", "b"]),
            prediction("t3", "a", Some("unknown_label"), &["a"]),
        ];
        let (traffic, confusions) = observed(&predictions);
        assert_eq!(traffic["a"].volume, 1);
        assert_eq!(traffic["a"].hallucinations, 1);
        assert_eq!(traffic["b"].volume, 1);
        assert_eq!(traffic["c"].hallucinations, 1);
        assert_eq!(confusions.len(), 1);
        assert_eq!(confusions[&("a".to_string(), "c".to_string())], 1);
    }
    use crate::engine::{EngineConfig, NewLabel};

    fn label(id: &str, example: &str) -> NewLabel {
        NewLabel {
            id: id.into(),
            name: Some(id.replace('_', " ")),
            description: None,
            examples: vec![example.into()],
        }
    }

    #[test]
    fn labels_sharing_keywords_or_confused_fall_together() {
        let mut engine = Engine::new(EngineConfig::default());
        engine
            .apply_round(
                None,
                &[
                    label("volcanoes", "lava magma eruption crater ash volcano"),
                    label("earthquakes", "seismic fault crater magma tremor"),
                    label("violins", "violin strings bow orchestra concerto"),
                    label("cellos", "cello strings bow orchestra symphony"),
                ],
            )
            .unwrap();
        let mut traffic = HashMap::new();
        traffic.insert(
            "violins".to_string(),
            LabelTraffic {
                volume: 10,
                hallucinations: 1,
            },
        );
        let map = label_map(&engine, &BTreeMap::new(), &traffic).unwrap();
        let group = |id: &str| map.labels.iter().find(|l| l.id == id).unwrap().group;
        assert_eq!(group("volcanoes"), group("earthquakes"));
        assert_eq!(group("violins"), group("cellos"));
        assert_ne!(group("volcanoes"), group("violins"));
        assert_eq!(map.groups, 2);
        assert!(map
            .labels
            .iter()
            .all(|l| (0.0..=1.0).contains(&l.x) && (0.0..=1.0).contains(&l.y)));
        let violins = map.labels.iter().find(|l| l.id == "violins").unwrap();
        assert_eq!(violins.traffic.map(|t| t.volume), Some(10));
        assert!(!map.links.is_empty());

        // Confusions join what keywords alone keep apart.
        let mut confusions = BTreeMap::new();
        confusions.insert(("volcanoes".to_string(), "violins".to_string()), 50);
        confusions.insert(("earthquakes".to_string(), "cellos".to_string()), 50);
        let confused = label_map(&engine, &confusions, &traffic).unwrap();
        assert_eq!(confused, label_map(&engine, &confusions, &traffic).unwrap());
        let group = |id: &str| confused.labels.iter().find(|l| l.id == id).unwrap().group;
        assert_eq!(group("volcanoes"), group("violins"));
    }
}
