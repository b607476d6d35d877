//! While a proposal is open, a new text that reads like its members is held for review rather
//! than decided into a known label: the desk shows the proposal beside the text's candidates,
//! and a reviewer's answer both places the text and counts for the class. Without it, a theme's
//! later texts are decided into whatever known label is nearest, and learned there, while the
//! theme waits for an operator.
//!
//! By meaning alone: a new text's sentence vector against each open proposal's members' mean,
//! centred as the pass centres them ([`Meaning::centre`]). A text is held for a proposal when
//! it is at least as close to the proposal as half the proposal's own members are (the median
//! of the members' cosines with their mean) and closer to it than to every active label's
//! examples' mean — so a text that reads like a known class stays with that class.

use std::collections::HashMap;

use std::collections::HashSet;
use std::sync::Arc;

use super::meaning::meaning_for_holding;
use super::{Meaning, PooledText, Proposal};
use crate::engine::embedding::TextEncoder;
use crate::engine::LabelMaterial;
use crate::events::proposal::ProposalEvent;

/// What a pass knows of the open proposals, to hold the texts that read like them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Holding {
    /// The point vectors are centred on.
    centre: Vec<f64>,
    themes: Vec<Theme>,
    /// Each active label's position and its examples' mean, centred, unit length.
    labels: Vec<(usize, Vec<f64>)>,
}

/// One open proposal as [`Holding`] compares texts with it.
#[derive(Debug, Clone, PartialEq)]
struct Theme {
    proposal: String,
    name: String,
    /// Its members' mean, centred, unit length.
    direction: Vec<f64>,
    /// How close a text must be: the median of its members' cosines with `direction`.
    floor: f64,
}

/// An open proposal as the pass read it: its id, its name, its members' text ids.
#[derive(Debug, Clone, Copy)]
pub struct OpenProposal<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub members: &'a [String],
}

impl<'a> From<&'a Proposal> for OpenProposal<'a> {
    /// A proposal a pass has just found (`gorag eval --discover`'s mid-stream pass).
    fn from(proposal: &'a Proposal) -> Self {
        Self {
            id: &proposal.id,
            name: &proposal.name,
            members: &proposal.members,
        }
    }
}

impl<'a> From<&'a ProposalEvent> for OpenProposal<'a> {
    /// A proposal as the proposals topic holds it (the service's passes).
    fn from(event: &'a ProposalEvent) -> Self {
        Self {
            id: &event.proposal,
            name: &event.name,
            members: &event.members,
        }
    }
}

/// A text held for an open proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub proposal: String,
    pub name: String,
    /// The text's cosine with the proposal's members' mean (centred).
    pub similarity: f64,
}

/// Fewer members with a vector than this make no theme to hold texts for.
const MIN_MEMBERS: usize = 3;

impl Holding {
    /// The open proposals' themes from their members among `pool`, encoded here (every member,
    /// whatever its meaning weighs in a pass), with the active labels' examples of `material`:
    /// what the service's passes and the evaluation hold texts for.
    pub fn of_members(
        open: &[OpenProposal],
        pool: &[&PooledText],
        encoder: Option<&Arc<dyn TextEncoder>>,
        material: &LabelMaterial,
    ) -> Self {
        let members: HashSet<&str> = open
            .iter()
            .flat_map(|p| p.members.iter().map(String::as_str))
            .collect();
        let texts: Vec<&PooledText> = pool
            .iter()
            .copied()
            .filter(|t| members.contains(t.id.as_str()))
            .collect();
        let meaning = meaning_for_holding(&texts, encoder, material);
        Self::build(open.iter().copied(), &texts, &meaning)
    }

    /// The open proposals' themes, from their members among `texts` (with `meaning`, the
    /// pass's vectors of `texts`). Empty without vectors.
    pub fn build<'a>(
        open: impl IntoIterator<Item = OpenProposal<'a>>,
        texts: &[&PooledText],
        meaning: &Meaning,
    ) -> Self {
        let dims = meaning.vectors.iter().flatten().map(Vec::len).max();
        let Some(dims) = dims.filter(|d| *d > 0 && meaning.vectors.len() == texts.len()) else {
            return Self::default();
        };
        let centre = match &meaning.centre {
            Some(centre) if centre.len() == dims => centre.clone(),
            _ => mean(meaning.vectors.iter().flatten().filter(|v| v.len() == dims)),
        };
        let at: HashMap<&str, usize> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        let themes = open
            .into_iter()
            .filter_map(|open| {
                let members: Vec<Vec<f64>> = open
                    .members
                    .iter()
                    .filter_map(|id| at.get(id.as_str()))
                    .filter_map(|&i| meaning.vectors[i].as_ref())
                    .filter(|v| v.len() == dims)
                    .filter_map(|v| unit(centred(v, &centre)))
                    .collect();
                theme(open, &members)
            })
            .collect();
        let labels = meaning
            .labels
            .iter()
            .filter(|(_, l)| l.len() == dims)
            .filter_map(|(at, l)| {
                let centred = l.iter().zip(&centre).map(|(x, c)| x - c).collect();
                Some((*at, unit(centred)?))
            })
            .collect();
        Self {
            centre,
            themes,
            labels,
        }
    }

    /// Whether there is any theme to hold a text for.
    pub fn is_empty(&self) -> bool {
        self.themes.is_empty()
    }

    /// Name open proposal `proposal` `name` (as it is published).
    pub fn rename(&mut self, proposal: &str, name: &str) {
        for theme in self.themes.iter_mut().filter(|t| t.proposal == proposal) {
            theme.name = name.to_string();
        }
    }

    /// The active label whose examples read most like open proposal `proposal`'s members (in
    /// meaning, centred): its position and the cosine of the two means. What the operator is
    /// told a proposal is closest to — a proposal close to a label may be that label's texts
    /// the examples do not cover, rather than a class of its own.
    pub fn closest_label(&self, proposal: &str) -> Option<(usize, f64)> {
        let theme = self.themes.iter().find(|t| t.proposal == proposal)?;
        self.labels
            .iter()
            .map(|(at, l)| (*at, dot(&theme.direction, l)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    }

    /// The open proposal a text of sentence vector `vector` is held for, if any: the closest
    /// of those it is close enough to, and closer to than to every active label.
    pub fn hold(&self, vector: &[f32]) -> Option<Held> {
        if self.themes.is_empty() || vector.len() != self.centre.len() {
            return None;
        }
        let text = unit(centred(vector, &self.centre))?;
        let nearest_label = self
            .labels
            .iter()
            .map(|(_, l)| dot(&text, l))
            .fold(f64::NEG_INFINITY, f64::max);
        self.themes
            .iter()
            .map(|t| (t, dot(&text, &t.direction)))
            .filter(|(t, cosine)| *cosine >= t.floor && *cosine > nearest_label)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.proposal.cmp(&a.0.proposal)))
            .map(|(t, cosine)| Held {
                proposal: t.proposal.clone(),
                name: t.name.clone(),
                similarity: cosine,
            })
    }
}

/// A proposal's theme from its members' centred unit vectors.
fn theme(open: OpenProposal, members: &[Vec<f64>]) -> Option<Theme> {
    if members.len() < MIN_MEMBERS {
        return None;
    }
    let direction = unit(mean(members.iter()))?;
    let mut cosines: Vec<f64> = members.iter().map(|m| dot(m, &direction)).collect();
    cosines.sort_by(f64::total_cmp);
    let floor = cosines[(cosines.len() - 1) / 2];
    // A theme whose members do not lean its way (a loose community) holds nothing.
    (floor > 0.0).then(|| Theme {
        proposal: open.id.to_string(),
        name: open.name.to_string(),
        direction,
        floor,
    })
}

fn centred(vector: &[f32], centre: &[f64]) -> Vec<f64> {
    vector
        .iter()
        .zip(centre)
        .map(|(x, c)| f64::from(*x) - c)
        .collect()
}

/// `vector` scaled to unit length (None for a zero or non-finite vector).
fn unit(mut vector: Vec<f64>) -> Option<Vec<f64>> {
    let norm = vector.iter().map(|x| x * x).sum::<f64>().sqrt();
    if !(norm.is_finite() && norm > 0.0) {
        return None;
    }
    vector.iter_mut().for_each(|x| *x /= norm);
    Some(vector)
}

/// The mean of vectors of one length (empty for none).
fn mean<'v, V: AsRef<[T]> + 'v, T: Copy + Into<f64> + 'v>(
    vectors: impl Iterator<Item = &'v V>,
) -> Vec<f64> {
    let mut sum: Vec<f64> = Vec::new();
    let mut count = 0usize;
    for v in vectors {
        let v = v.as_ref();
        if sum.is_empty() {
            sum = vec![0.0; v.len()];
        }
        if v.len() != sum.len() {
            continue;
        }
        sum.iter_mut().zip(v).for_each(|(s, x)| *s += (*x).into());
        count += 1;
    }
    sum.iter_mut().for_each(|s| *s /= count.max(1) as f64);
    sum
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::Unexplained;

    fn pooled(id: &str) -> PooledText {
        PooledText {
            id: id.to_string(),
            terms: Default::default(),
            keywords: Vec::new(),
            excerpt: id.to_string(),
            why: Unexplained::NoMatch,
            label: String::new(),
            arrival_score: None,
        }
    }

    /// Five members near the x axis; label 0 between x and y, label 1 on z; centred on the
    /// origin.
    fn holding() -> Holding {
        let texts: Vec<PooledText> = (0..5).map(|i| pooled(&format!("t{i}"))).collect();
        let refs: Vec<&PooledText> = texts.iter().collect();
        let meaning = Meaning {
            vectors: (0..5)
                .map(|i| Some(vec![1.0, 0.1 * i as f32 - 0.2, 0.0]))
                .collect(),
            centre: Some(vec![0.0; 3]),
            labels: vec![(0, vec![1.0, 1.0, 0.0]), (1, vec![0.0, 0.0, 1.0])],
        };
        let members: Vec<String> = (0..5).map(|i| format!("t{i}")).collect();
        let open = OpenProposal {
            id: "p-1",
            name: "x things",
            members: &members,
        };
        Holding::build([open], &refs, &meaning)
    }

    #[test]
    fn a_text_like_the_members_is_held_and_one_like_a_label_is_not() {
        let holding = holding();
        let held = holding.hold(&[1.0, 0.0, 0.0]).expect("held");
        assert_eq!(held.proposal, "p-1");
        assert!((held.similarity - 1.0).abs() < 1e-9);
        assert_eq!(holding.hold(&[0.2, 1.0, 0.0]), None);
        // Its members read half like label 0's examples (x and y), not at all like label 1's.
        let (closest, cosine) = holding.closest_label("p-1").expect("a closest label");
        assert_eq!(closest, 0);
        assert!((cosine - 0.5f64.sqrt()).abs() < 1e-6, "{cosine}");
        assert_eq!(holding.closest_label("p-2"), None);
        // Nearer label 1's examples than the proposal.
        assert_eq!(holding.hold(&[0.5, 0.0, 1.0]), None);
    }

    #[test]
    fn a_text_nearer_the_proposal_than_any_label_but_less_than_half_its_members_is_not_held() {
        let mut holding = holding();
        // Cosine 0.958 with the members' mean, whose median member is at 1.0; 0.47 with
        // label 0.
        assert_eq!(holding.hold(&[1.0, -0.3, 0.0]), None);
        assert!(holding.hold(&[1.0, 0.0, 0.0]).is_some());
        holding.rename("p-1", "weather");
        assert_eq!(
            holding.hold(&[1.0, 0.0, 0.0]).map(|h| h.name).as_deref(),
            Some("weather")
        );
    }

    #[test]
    fn bad_vectors_are_not_held() {
        let holding = holding();
        assert_eq!(holding.hold(&[1.0, 0.0]), None);
        assert_eq!(holding.hold(&[0.0, 0.0, 0.0]), None);
        assert_eq!(holding.hold(&[f32::NAN, 0.0, 0.0]), None);
    }

    #[test]
    fn too_few_members_with_a_vector_make_no_theme() {
        let texts = [pooled("a"), pooled("b")];
        let refs: Vec<&PooledText> = texts.iter().collect();
        let meaning = Meaning {
            vectors: vec![Some(vec![1.0, 0.0]), Some(vec![1.0, 0.1])],
            centre: Some(vec![0.0; 2]),
            labels: Vec::new(),
        };
        let members = vec!["a".to_string(), "b".to_string(), "gone".to_string()];
        let open = OpenProposal {
            id: "p",
            name: "n",
            members: &members,
        };
        assert!(Holding::build([open], &refs, &meaning).is_empty());
        assert!(Holding::build([], &refs, &Meaning::default()).is_empty());
    }
}
