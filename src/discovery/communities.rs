//! One community pass over the pool: the texts' vectors and nearest neighbours
//! ([`super::similarity`]), a k-nearest-neighbour similarity graph, Leiden communities (the `leiden-rs` crate), kept when large and
//! cohesive enough and not explained by the active labels' own material.

use std::collections::{BTreeMap, BTreeSet};

use leiden_rs::{GraphDataBuilder, Leiden, LeidenConfig, LeidenError, QualityType};

use super::similarity::{neighbour_edges, text_vectors, Centroid, TextVector};
use super::{DiscoveryConfig, Meaning, PooledText};
use crate::engine::LabelMaterial;

/// Leiden's seed: the same pool gives the same communities on every replica and every run.
const SEED: u64 = 42;

#[derive(Debug, Clone, PartialEq)]
pub struct Community {
    /// Positions in the slice given to [`find`], most central first.
    pub members: Vec<usize>,
    /// Mean cosine of the members with their centroid.
    pub cohesion: f64,
}

/// What a pass found: the communities proposed, and how many Leiden found that were not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    /// Largest first.
    pub communities: Vec<Community>,
    pub dropped: Dropped,
}

/// Communities left out of a pass, by the rule that left them out (in this order: a small
/// community is not also counted as loose).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Below `min_size` members.
    pub small: usize,
    /// Below `min_cohesion`.
    pub loose: usize,
    /// Explained by the active labels (`max_community_score`, see [`known_score`]).
    pub known: usize,
}

/// Communities of `texts`, largest first, those below `min_size` or `min_cohesion` left out,
/// and those the active labels' `material` explains (see [`known_score`]); with the count of
/// those each rule left out.
/// `meaning`: the texts' sentence vectors ([`Meaning`]; empty without an encoder), mixed into
/// their word vectors at `meaning_weight`. `open`: each text's open proposal, by any number
/// naming it (empty: none), whose parts are joined to it (see [`join_open`]).
pub fn find(
    texts: &[&PooledText],
    meaning: &Meaning,
    open: &[Option<u32>],
    config: &DiscoveryConfig,
    material: &LabelMaterial,
) -> Result<Found, LeidenError> {
    if texts.len() < config.min_size.max(2) {
        return Ok(Found::default());
    }
    let vectors = text_vectors(texts, meaning, config, material);
    let edges = neighbour_edges(&vectors, config);
    let mut builder = GraphDataBuilder::new(texts.len());
    for &(a, b, similarity) in &edges {
        builder.add_edge(a, b, similarity)?;
    }
    let graph = builder.build()?;
    let leiden = Leiden::new(LeidenConfig {
        seed: Some(SEED),
        quality: QualityType::Modularity,
        resolution: resolution(texts.len(), config),
        ..LeidenConfig::default()
    });
    let partition = leiden.run(&graph)?.partition;
    let groups = partition
        .communities()
        .into_iter()
        .map(|(_, members)| members)
        .collect();
    let mut dropped = Dropped::default();
    let mut found: Vec<Community> = Vec::new();
    for members in join_open(groups, &vectors, open, config.merge_above) {
        if members.len() < config.min_size {
            dropped.small += 1;
            continue;
        }
        let community = community(members, &vectors);
        if community.cohesion < config.min_cohesion {
            dropped.loose += 1;
        } else if known_score(&community, texts, material) >= config.max_community_score {
            dropped.known += 1;
        } else {
            found.push(community);
        }
    }
    // Largest first; ties by their most central member, so the order is canonical.
    found.sort_by(|a, b| {
        b.members
            .len()
            .cmp(&a.members.len())
            .then(a.members.first().cmp(&b.members.first()))
    });
    Ok(Found {
        communities: found,
        dropped,
    })
}

/// The mean over members of how well the active labels explain each: the better of its score
/// when it arrived (retrieval's best, second hop included, descriptions not) and its best score now against the
/// labels' own material (which sees labels added since). Most pooled texts scored weakly on
/// their own; a community whose members sit near that ceiling together is a known class's
/// thinly covered texts rather than a missing class (docs/design/emerging-classes.md,
/// "Emerging classes": on WOS, with round 3 or round 4 held back and over eight stream orders,
/// communities of mostly known classes had the higher means, and the arrival score told them
/// apart better than the pass-time score alone). Members pooled for the probe's doubt are left
/// out (0 when every member was): their scores were above the ceiling when they were pooled.
pub fn known_score(community: &Community, texts: &[&PooledText], material: &LabelMaterial) -> f64 {
    // A text pooled for the probe's doubt scored above the weak-score ceiling by definition:
    // this scale says nothing of it.
    let counted: Vec<usize> = community
        .members
        .iter()
        .copied()
        .filter(|&m| texts[m].why != super::Unexplained::Doubt)
        .collect();
    let total: f64 = counted
        .iter()
        .map(|&m| {
            let now = material.best_score(&texts[m].terms);
            texts[m]
                .arrival_score
                .map_or(now, |arrival| arrival.max(now))
        })
        .sum();
    total / counted.len().max(1) as f64
}

/// Leiden's resolution for a pool of `n` texts. Modularity at resolution γ keeps a community
/// under about n/γ texts (its internal edges must beat γ times what chance gives, and chance
/// grows with its size), so a small pool at the configured γ (tuned on pools of hundreds)
/// could hold no community at all: γ is lowered until n/γ is at least four times `min_size`.
fn resolution(n: usize, config: &DiscoveryConfig) -> f64 {
    let room = n as f64 / (4 * config.min_size.max(1)) as f64;
    config.resolution.min(room).max(f64::EPSILON)
}

/// Leiden's groups, with the parts of a theme already proposed joined to it: for each open
/// proposal, the group holding most of its members (its anchor) takes in every other group of
/// two texts or more whose centroid's cosine with the anchor's reaches `merge_above`, largest
/// first, the anchor's centroid redone after each. A later pass's Leiden may cut a proposed
/// theme where the last one did not; the proposal then grows under its id instead of a second
/// one opening. `open`: each text's open proposal, by any number naming it (empty: none open).
/// Groups no proposal anchors are never joined to each other: in a large pool such joins chain
/// into blobs (docs/design/emerging-classes.md, "One proposal per theme").
fn join_open(
    mut groups: Vec<Vec<usize>>,
    vectors: &[TextVector],
    open: &[Option<u32>],
    merge_above: f64,
) -> Vec<Vec<usize>> {
    groups.iter_mut().for_each(|g| g.sort_unstable());
    groups.sort_by(|a, b| b.len().cmp(&a.len()).then(a.first().cmp(&b.first())));
    // Each open proposal's anchor: the group with most of its pooled members (the first of a
    // tie), even under half of them — a theme cut in three may leave no part with half, and the
    // pass then keeps the proposal's id in one part anyway (`reconcile`: its oldest member's).
    // A join still needs the part to be `merge_above` alike the anchor.
    let mut held: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for (g, group) in groups.iter().enumerate() {
        let mut here: BTreeMap<u32, usize> = BTreeMap::new();
        for proposal in group.iter().filter_map(|&m| open.get(m).copied().flatten()) {
            *here.entry(proposal).or_default() += 1;
        }
        for (proposal, count) in here {
            let best = held.entry(proposal).or_insert((g, count));
            if count > best.1 {
                *best = (g, count);
            }
        }
    }
    let anchors: BTreeSet<usize> = held.values().map(|&(g, _)| g).collect();
    if anchors.is_empty() {
        return groups;
    }
    let centroid = |group: &[usize]| Centroid::of(group.iter().map(|&m| &vectors[m]));
    let mut centroids: BTreeMap<usize, Centroid> =
        anchors.iter().map(|&g| (g, centroid(&groups[g]))).collect();
    for g in 0..groups.len() {
        if anchors.contains(&g) || groups[g].len() < 2 {
            continue;
        }
        let part = centroid(&groups[g]);
        let nearest = centroids
            .iter()
            .map(|(&anchor, c)| (anchor, c.cosine(&part)))
            .filter(|&(_, alike)| alike >= merge_above)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        if let Some((anchor, _)) = nearest {
            let part = std::mem::take(&mut groups[g]);
            groups[anchor].extend(part);
            groups[anchor].sort_unstable();
            centroids.insert(anchor, centroid(&groups[anchor]));
        }
    }
    groups.retain(|group| !group.is_empty());
    groups
}

/// The members ordered by their cosine with the centroid, and their mean.
fn community(members: Vec<usize>, vectors: &[TextVector]) -> Community {
    let centroid = Centroid::of(members.iter().map(|&m| &vectors[m]));
    let mut central: Vec<(usize, f64)> = members
        .iter()
        .map(|&m| (m, vectors[m].cosine_with(&centroid)))
        .collect();
    central.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let cohesion = central.iter().map(|(_, c)| c).sum::<f64>() / central.len().max(1) as f64;
    Community {
        members: central.into_iter().map(|(m, _)| m).collect(),
        cohesion,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::Unexplained;
    use crate::engine::terms::TermCounts;

    fn text(id: usize, body: &str) -> PooledText {
        PooledText {
            id: format!("t{id}"),
            terms: TermCounts::of(body),
            keywords: Vec::new(),
            excerpt: body.into(),
            why: Unexplained::WeakScore,
            label: String::new(),
            arrival_score: None,
        }
    }

    #[test]
    fn short_texts_without_a_word_in_common_group_by_meaning() {
        use crate::engine::embedding::tests::TopicEncoder;
        use crate::engine::embedding::TextEncoder;
        // Every word is in one text only (no word links any two); the topic encoder reads the
        // first six as space and the last six as money.
        let names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
        let texts: Vec<PooledText> = names
            .iter()
            .map(|n| format!("spacecraft{n} rocketry{n}"))
            .chain(names.iter().map(|n| format!("moneybox{n} savings{n}")))
            .enumerate()
            .map(|(i, body)| text(i, &body))
            .collect();
        let refs: Vec<&PooledText> = texts.iter().collect();
        let encoder: std::sync::Arc<dyn TextEncoder> = std::sync::Arc::new(TopicEncoder);
        let meaning = crate::discovery::meaning_of(&refs, Some(&encoder), &config(), &none());
        assert!(find(&refs, &Meaning::default(), &[], &config(), &none())
            .unwrap()
            .communities
            .is_empty());
        let words_alone = DiscoveryConfig {
            meaning_weight_short: 0.0,
            ..config()
        };
        assert!(find(&refs, &meaning, &[], &words_alone, &none())
            .unwrap()
            .communities
            .is_empty());
        let mut found: Vec<Vec<usize>> = find(&refs, &meaning, &[], &config(), &none())
            .unwrap()
            .communities
            .into_iter()
            .map(|c| {
                let mut members = c.members;
                members.sort_unstable();
                members
            })
            .collect();
        found.sort();
        assert_eq!(found, vec![(0..6).collect::<Vec<_>>(), (6..12).collect()]);
    }

    /// No labels: nothing is explained by them.
    fn none() -> LabelMaterial {
        LabelMaterial::default()
    }

    fn config() -> DiscoveryConfig {
        DiscoveryConfig {
            min_size: 3,
            min_cohesion: 0.1,
            resolution: 1.0,
            ..DiscoveryConfig::default()
        }
    }

    /// Two themes of six words (volcanoes: texts 0–5; music: 6–11); each text takes four
    /// consecutive words of its theme's ring.
    fn two_themes() -> Vec<PooledText> {
        let themes = [
            ["volcano", "lava", "eruption", "magma", "crater", "ash"],
            [
                "orchestra",
                "violin",
                "concerto",
                "symphony",
                "cello",
                "conductor",
            ],
        ];
        let mut texts = Vec::new();
        for (t, words) in themes.iter().enumerate() {
            for i in 0..6 {
                let body: Vec<&str> = (0..4).map(|k| words[(i + k) % 6]).collect();
                texts.push(text(t * 6 + i, &body.join(" ")));
            }
        }
        texts
    }

    #[test]
    fn parts_of_an_open_proposal_s_theme_join_it_and_nothing_else_joins() {
        let texts = two_themes();
        let refs: Vec<&PooledText> = texts.iter().collect();
        let vectors = text_vectors(&refs, &Meaning::default(), &config(), &none());
        // The volcano theme cut in two parts, the music theme whole, one lone text.
        let groups = vec![vec![0, 1, 2], vec![3, 4], vec![6, 7, 8, 9, 10, 11], vec![5]];
        let sorted = |mut groups: Vec<Vec<usize>>| {
            groups.sort();
            groups
        };
        // Texts 0 to 2 are an open proposal's: its other part joins it; music stays apart.
        let mut open = vec![None; texts.len()];
        open[..3].fill(Some(7));
        assert_eq!(
            sorted(join_open(groups.clone(), &vectors, &open, 0.4)),
            vec![vec![0, 1, 2, 3, 4], vec![5], vec![6, 7, 8, 9, 10, 11]]
        );
        // With no proposal open, parts are not joined to each other.
        assert_eq!(
            sorted(join_open(groups.clone(), &vectors, &[], 0.4)),
            sorted(groups.clone())
        );
        // Nor when they are less alike than `merge_above`.
        assert_eq!(
            sorted(join_open(groups.clone(), &vectors, &open, 1.0)),
            sorted(groups)
        );
    }

    #[test]
    fn two_themes_give_two_communities() {
        let texts = two_themes();
        let refs: Vec<&PooledText> = texts.iter().collect();
        let found = find(&refs, &Meaning::default(), &[], &config(), &none())
            .unwrap()
            .communities;
        assert_eq!(found.len(), 2, "{found:?}");
        for community in &found {
            assert_eq!(community.members.len(), 6);
            let theme = community.members[0] / 6;
            assert!(community.members.iter().all(|&m| m / 6 == theme));
            assert!(community.cohesion > 0.3);
        }
        // The same pool, the same communities.
        assert_eq!(
            find(&refs, &Meaning::default(), &[], &config(), &none())
                .unwrap()
                .communities,
            found
        );
    }

    #[test]
    fn a_community_the_known_labels_explain_is_not_proposed() {
        let texts = two_themes();
        let refs: Vec<&PooledText> = texts.iter().collect();
        // A known label whose example speaks of volcanoes, and one about something else.
        let mut engine = crate::engine::Engine::new(crate::engine::EngineConfig::default());
        let label = |id: &str, example: &str| crate::engine::NewLabel {
            id: id.into(),
            name: None,
            description: None,
            examples: vec![example.into()],
        };
        engine
            .apply_round(
                None,
                &[
                    label("geology", "volcano lava eruption magma crater ash rock"),
                    label("finance", "bank interest loan mortgage"),
                ],
            )
            .unwrap();
        let material = engine
            .retriever()
            .label_material(refs.iter().map(|text| &text.terms));
        let found = find(&refs, &Meaning::default(), &[], &config(), &material)
            .unwrap()
            .communities;
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].members.iter().all(|&m| m >= 6), "{found:?}");
        let all = find(&refs, &Meaning::default(), &[], &config(), &none())
            .unwrap()
            .communities;
        assert_eq!(all.len(), 2);
        let volcanoes = all.iter().find(|c| c.members[0] < 6).unwrap();
        assert!(known_score(volcanoes, &refs, &material) >= config().max_community_score);
        // The pass says why it proposed one community of two.
        let counted = find(&refs, &Meaning::default(), &[], &config(), &material).unwrap();
        assert_eq!(counted.communities, found);
        assert_eq!(
            counted.dropped,
            Dropped {
                small: 0,
                loose: 0,
                known: 1
            }
        );
        let strict = DiscoveryConfig {
            min_size: 7,
            ..config()
        };
        let counted = find(&refs, &Meaning::default(), &[], &strict, &none()).unwrap();
        assert!(counted.communities.is_empty());
        assert_eq!(counted.dropped.small, 2);
        // Pooled for the fitted probe's doubt, the same texts scored above the weak-score
        // ceiling by definition: that scale leaves them out, and both themes are proposed.
        let doubted: Vec<PooledText> = texts
            .iter()
            .cloned()
            .map(|text| PooledText {
                why: Unexplained::Doubt,
                ..text
            })
            .collect();
        let doubted: Vec<&PooledText> = doubted.iter().collect();
        assert_eq!(known_score(volcanoes, &doubted, &material), 0.0);
        assert_eq!(
            find(&doubted, &Meaning::default(), &[], &config(), &material)
                .unwrap()
                .communities
                .len(),
            2
        );
    }

    #[test]
    fn a_community_that_arrived_near_the_ceiling_is_explained_even_if_no_label_now_knows_it() {
        let mut texts = two_themes();
        let all = {
            let refs: Vec<&PooledText> = texts.iter().collect();
            find(&refs, &Meaning::default(), &[], &config(), &none())
                .unwrap()
                .communities
        };
        assert_eq!(all.len(), 2);
        // The first theme's texts arrived scoring just under `max_score` (the labels they were
        // close to have since been retired); the second's arrived with nothing.
        for (i, text) in texts.iter_mut().enumerate() {
            text.arrival_score = Some(if i < 6 { 0.09 } else { 0.0 });
        }
        let refs: Vec<&PooledText> = texts.iter().collect();
        let volcanoes = all.iter().find(|c| c.members[0] < 6).unwrap();
        assert!((known_score(volcanoes, &refs, &none()) - 0.09).abs() < 1e-12);
        let found = find(&refs, &Meaning::default(), &[], &config(), &none()).unwrap();
        assert_eq!(found.dropped.known, 1);
        assert!(found.communities[0].members.iter().all(|&m| m >= 6));
    }

    #[test]
    fn one_theme_filling_a_small_pool_is_still_found() {
        let devices = ["laptop", "tablet", "phone", "camera"];
        let faults = [
            "battery swells",
            "screen cracked",
            "hinge snapped",
            "fan rattles",
        ];
        let texts: Vec<PooledText> = (0..12)
            .map(|i| {
                let (d, f) = (devices[i % 4], faults[(i / 4) % 4]);
                text(i, &format!("warranty repair technician {d} {f}"))
            })
            .collect();
        let refs: Vec<&PooledText> = texts.iter().collect();
        let config = DiscoveryConfig {
            min_size: 3,
            ..DiscoveryConfig::default()
        };
        let found = find(&refs, &Meaning::default(), &[], &config, &none())
            .unwrap()
            .communities;
        assert!(!found.is_empty());
        assert!(found.iter().all(|c| c.members.len() >= 3));
        assert_eq!(resolution(12, &config), 1.0);
        assert_eq!(resolution(10_000, &config), config.resolution);
    }

    #[test]
    fn small_or_unrelated_pools_give_nothing() {
        let texts = [text(0, "alpha beta"), text(1, "gamma delta")];
        let refs: Vec<&PooledText> = texts.iter().collect();
        assert!(find(&refs, &Meaning::default(), &[], &config(), &none())
            .unwrap()
            .communities
            .is_empty());
        let words = ["apple", "river", "stone", "cloud", "tiger", "piano"];
        let unrelated: Vec<PooledText> = words
            .iter()
            .enumerate()
            .map(|(i, w)| text(i, &format!("{w} {w}s")))
            .collect();
        let refs: Vec<&PooledText> = unrelated.iter().collect();
        assert!(find(&refs, &Meaning::default(), &[], &config(), &none())
            .unwrap()
            .communities
            .is_empty());
    }
}
