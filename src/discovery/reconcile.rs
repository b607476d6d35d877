//! A community pass's proposals against those already published: the same theme keeps its id
//! (recognised by its members), grows by revisions, and once accepted or rejected is not
//! proposed again.

use std::collections::{BTreeMap, HashSet};

use super::Proposal;
use crate::events::proposal::{ProposalError, ProposalEvent, ProposalStatus};

/// Share of a published proposal's members a community must hold to be that proposal again.
const SAME_THEME: f64 = 0.5;

/// The proposal events this pass publishes: new proposals, and open ones whose members changed,
/// as their next revision. `published` is the current state of every proposal (see
/// [`crate::events::proposal::current`]); `found` comes largest first, and each published
/// proposal is matched at most once.
pub fn reconcile(
    found: &[Proposal],
    published: &BTreeMap<String, ProposalEvent>,
) -> Result<Vec<ProposalEvent>, ProposalError> {
    let mut taken: HashSet<&str> = HashSet::new();
    let mut events = Vec::new();
    for proposal in found {
        let members: HashSet<&str> = proposal.members.iter().map(String::as_str).collect();
        let previous = published
            .values()
            .filter(|p| !taken.contains(p.proposal.as_str()))
            .map(|p| (share_held(p, &members), p))
            .filter(|&(share, _)| share >= SAME_THEME)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p)
            .or_else(|| {
                published
                    .get(&proposal.id)
                    .filter(|p| !taken.contains(p.proposal.as_str()))
            });
        let Some(previous) = previous else {
            events.push(ProposalEvent::open(proposal, None)?);
            continue;
        };
        taken.insert(previous.proposal.as_str());
        // Members come most central first, and centrality shifts as the pool grows: the same
        // set is the same proposal.
        let unchanged = previous.members.len() == members.len()
            && previous
                .members
                .iter()
                .all(|m| members.contains(m.as_str()));
        if previous.status != ProposalStatus::Open || unchanged {
            continue;
        }
        let same_id = Proposal {
            id: previous.proposal.clone(),
            ..proposal.clone()
        };
        let mut event = ProposalEvent::open(&same_id, Some(previous))?;
        // A name and description the LLM wrote stay: a proposal does not change its name
        // under the operator's eyes as it grows.
        if previous.description.is_some() {
            event.name = previous.name.clone();
            event.description = previous.description.clone();
        }
        events.push(event);
    }
    Ok(events)
}

/// The share of `published`'s members among `members`.
fn share_held(published: &ProposalEvent, members: &HashSet<&str>) -> f64 {
    if published.members.is_empty() {
        return 0.0;
    }
    let held = published
        .members
        .iter()
        .filter(|m| members.contains(m.as_str()))
        .count();
    held as f64 / published.members.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::proposal::current;

    fn found(id: &str, members: std::ops::Range<u32>) -> Proposal {
        let members: Vec<String> = members.map(|m| format!("t{m}")).collect();
        Proposal {
            id: id.into(),
            name: "lava, crater".into(),
            keywords: vec!["lava".into(), "crater".into()],
            representatives: members.iter().take(2).cloned().collect(),
            excerpts: vec!["Lava…".into(), "Crater…".into()],
            size: members.len(),
            members,
            cohesion: 0.5,
        }
    }

    #[test]
    fn a_theme_keeps_its_id_grows_and_is_not_proposed_once_decided() {
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new()).unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].proposal.as_str(), first[0].revision), ("p-a", 1));
        let published = current(first.clone());

        // Unchanged, even in another order of centrality: nothing to publish.
        assert!(reconcile(&[found("p-a", 0..10)], &published)
            .unwrap()
            .is_empty());
        let mut reordered = found("p-a", 0..10);
        reordered.members.reverse();
        assert!(reconcile(&[reordered], &published).unwrap().is_empty());
        // Its oldest member left the pool (a new id would be derived), but most members are
        // still together: the same proposal, next revision, with its growth.
        let grown = reconcile(&[found("p-b", 3..15)], &published).unwrap();
        assert_eq!(grown.len(), 1);
        assert_eq!(grown[0].proposal, "p-a");
        assert_eq!(
            (grown[0].revision, grown[0].size, grown[0].growth),
            (2, 12, 2)
        );
        // A name the LLM gave stays through revisions.
        let mut named = first[0].clone();
        named.name = "Volcanology".into();
        named.description = Some("Eruptions.".into());
        let renamed = reconcile(&[found("p-b", 3..15)], &current([named])).unwrap();
        assert_eq!(renamed[0].name, "Volcanology");
        assert_eq!(renamed[0].description.as_deref(), Some("Eruptions."));
        // A different theme is a proposal of its own.
        let other = reconcile(&[found("p-c", 100..110)], &published).unwrap();
        assert_eq!(other[0].proposal, "p-c");

        // Rejected (or accepted): not proposed again while its members stay together.
        let rejected = first[0].decided(ProposalStatus::Rejected, None).unwrap();
        let published = current([first[0].clone(), rejected]);
        assert!(reconcile(&[found("p-b", 2..14)], &published)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn two_communities_do_not_both_become_the_same_proposal() {
        let published = current(reconcile(&[found("p-a", 0..10)], &BTreeMap::new()).unwrap());
        // The theme split: the larger part keeps the id, the other is new.
        let split = reconcile(&[found("p-a", 0..7), found("p-x", 5..10)], &published).unwrap();
        let ids: Vec<&str> = split.iter().map(|e| e.proposal.as_str()).collect();
        assert_eq!(ids, ["p-a", "p-x"]);
    }
}
