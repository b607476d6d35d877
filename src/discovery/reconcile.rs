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
/// proposal is matched at most once, by its members only: a community that holds fewer than
/// half of them is another theme, even when its oldest member gave it the same id — it gets a
/// fresh one ([`fresh_id`]), so one key never carries two themes. A proposal whose event cannot
/// be made (its revision at the end of `u64`: someone else's record) is skipped and named in
/// the returned errors; the rest of the pass goes on.
pub fn reconcile(
    found: &[Proposal],
    published: &BTreeMap<String, ProposalEvent>,
) -> (Vec<ProposalEvent>, Vec<ProposalError>) {
    let mut taken: HashSet<&str> = HashSet::new();
    let mut new_ids: HashSet<String> = HashSet::new();
    let (mut events, mut errors) = (Vec::new(), Vec::new());
    for proposal in found {
        let members: HashSet<&str> = proposal.members.iter().map(String::as_str).collect();
        let previous = published
            .values()
            .filter(|p| !taken.contains(p.proposal.as_str()))
            .map(|p| (share_held(p, &members), p))
            .filter(|&(share, _)| share >= SAME_THEME)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p);
        let Some(previous) = previous else {
            let id = fresh_id(&proposal.id, published, &new_ids);
            new_ids.insert(id.clone());
            let fresh = Proposal {
                id,
                ..proposal.clone()
            };
            match ProposalEvent::open(&fresh, None) {
                Ok(event) => events.push(event),
                Err(error) => errors.push(error),
            }
            continue;
        };
        taken.insert(previous.proposal.as_str());
        // Members come most central first, and centrality shifts as the pool grows: the same
        // set is the same proposal.
        let before: HashSet<&str> = previous.members.iter().map(String::as_str).collect();
        if previous.status != ProposalStatus::Open || before == members {
            continue;
        }
        let same_id = Proposal {
            id: previous.proposal.clone(),
            ..proposal.clone()
        };
        let mut event = match ProposalEvent::open(&same_id, Some(previous)) {
            Ok(event) => event,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        // A name and description the LLM wrote stay: a proposal does not change its name
        // under the operator's eyes as it grows.
        if previous.description.is_some() {
            event.name = previous.name.clone();
            event.description = previous.description.clone();
        }
        events.push(event);
    }
    (events, errors)
}

/// `derived` (the id its oldest member gives a new proposal) unless a published proposal or
/// another new one of this pass has it; then `derived-2`, `derived-3`, … — the first free one.
fn fresh_id(
    derived: &str,
    published: &BTreeMap<String, ProposalEvent>,
    new_ids: &HashSet<String>,
) -> String {
    let used = |id: &str| published.contains_key(id) || new_ids.contains(id);
    if !used(derived) {
        return derived.to_string();
    }
    (2u64..)
        .map(|n| format!("{derived}-{n}"))
        .find(|id| !used(id))
        .unwrap_or_else(|| derived.to_string())
}

/// The share of `published`'s members (each counted once) among `members`.
fn share_held(published: &ProposalEvent, members: &HashSet<&str>) -> f64 {
    let before: HashSet<&str> = published.members.iter().map(String::as_str).collect();
    if before.is_empty() {
        return 0.0;
    }
    let held = before.iter().filter(|m| members.contains(*m)).count();
    held as f64 / before.len() as f64
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
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new()).0;
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].proposal.as_str(), first[0].revision), ("p-a", 1));
        let published = current(first.clone());

        // Unchanged, even in another order of centrality: nothing to publish.
        assert!(reconcile(&[found("p-a", 0..10)], &published).0.is_empty());
        let mut reordered = found("p-a", 0..10);
        reordered.members.reverse();
        assert!(reconcile(&[reordered], &published).0.is_empty());
        // Its oldest member left the pool (a new id would be derived), but most members are
        // still together: the same proposal, next revision, with its growth.
        let grown = reconcile(&[found("p-b", 3..15)], &published).0;
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
        let renamed = reconcile(&[found("p-b", 3..15)], &current([named])).0;
        assert_eq!(renamed[0].name, "Volcanology");
        assert_eq!(renamed[0].description.as_deref(), Some("Eruptions."));
        // A different theme is a proposal of its own.
        let other = reconcile(&[found("p-c", 100..110)], &published).0;
        assert_eq!(other[0].proposal, "p-c");

        // Rejected (or accepted): not proposed again while its members stay together.
        let rejected = first[0].decided(ProposalStatus::Rejected, None).unwrap();
        let published = current([first[0].clone(), rejected]);
        assert!(reconcile(&[found("p-b", 2..14)], &published).0.is_empty());
    }

    #[test]
    fn two_communities_do_not_both_become_the_same_proposal() {
        let published = current(reconcile(&[found("p-a", 0..10)], &BTreeMap::new()).0);
        // The theme split: the larger part keeps the id, the other is new.
        let split = reconcile(&[found("p-a", 0..7), found("p-x", 5..10)], &published).0;
        let ids: Vec<&str> = split.iter().map(|e| e.proposal.as_str()).collect();
        assert_eq!(ids, ["p-a", "p-x"]);
    }

    #[test]
    fn a_community_holding_an_old_proposals_oldest_member_but_not_its_theme_gets_a_fresh_id() {
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new()).0;
        let rejected = first[0].decided(ProposalStatus::Rejected, None).unwrap();
        let published = current([first[0].clone(), rejected]);
        // The theme split: most of it (3..10) is still the rejected p-a, and stays quiet; the
        // other part keeps p-a's oldest member (so the same derived id) with a new theme.
        let mut other_theme = found("p-a", 100..120);
        other_theme.size = 22;
        other_theme
            .members
            .extend(["t0".to_string(), "t1".to_string()]);
        for order in [
            vec![found("p-z", 3..10), other_theme.clone()],
            vec![other_theme.clone(), found("p-z", 3..10)],
        ] {
            let (events, errors) = reconcile(&order, &published);
            assert!(errors.is_empty());
            let ids: Vec<&str> = events.iter().map(|e| e.proposal.as_str()).collect();
            assert_eq!(ids, ["p-a-2"], "{order:?}");
            assert_eq!((events[0].revision, events[0].size), (1, 22));
        }
        // Two new communities deriving the same id in one pass get different ones.
        let (events, _) = reconcile(
            &[found("p-q", 200..210), found("p-q", 300..310)],
            &published,
        );
        let ids: Vec<&str> = events.iter().map(|e| e.proposal.as_str()).collect();
        assert_eq!(ids, ["p-q", "p-q-2"]);
    }

    #[test]
    fn members_seen_twice_are_still_the_same_members() {
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new()).0;
        let mut twice = first[0].clone();
        twice.members.push("t3".into());
        assert!(reconcile(&[found("p-a", 0..10)], &current([twice]))
            .0
            .is_empty());
    }

    #[test]
    fn a_record_at_the_last_revision_is_skipped_not_fatal() {
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new()).0;
        let mut last = first[0].clone();
        last.revision = u64::MAX;
        let (events, errors) = reconcile(
            &[found("p-a", 0..12), found("p-c", 100..110)],
            &current([last]),
        );
        assert_eq!(errors.len(), 1);
        let ids: Vec<&str> = events.iter().map(|e| e.proposal.as_str()).collect();
        assert_eq!(ids, ["p-c"]);
    }
}
