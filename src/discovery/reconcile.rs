//! A community pass's proposals against those already published: the same theme keeps its id
//! (recognised by its members), grows by revisions, and once accepted or rejected is not
//! proposed again.

use std::collections::{BTreeMap, HashSet};

use super::Proposal;
use crate::events::proposal::{ProposalError, ProposalEvent, ProposalStatus};

/// Share of a published proposal's members a community must hold to be that proposal again.
const SAME_THEME: f64 = 0.5;

/// The proposal events this pass publishes: new proposals, open ones whose members changed (as
/// their next revision), and withdrawals. `published` is the current state of every proposal
/// (see [`crate::events::proposal::current`]); `found` comes largest first; `pooled` holds the
/// ids of the texts in the pool the pass ran over.
///
/// Each published proposal is matched at most once, in two phases. First by members: a
/// community holding at least half of the proposal's members that are still pooled is that
/// proposal (open or decided; a withdrawn one is never matched: its theme, back, is proposed
/// afresh). Then, for communities still unmatched, by id: an *open* proposal whose theme split
/// with no part holding half goes on in the part holding its oldest member (so deriving its
/// id), reported afresh (the LLM's name is not kept). A new community whose derived id is taken
/// gets a fresh one ([`fresh_id`]), so one key never carries two themes. An open proposal that
/// no community is and none of whose members is still pooled is withdrawn. A proposal whose
/// event cannot be made (its revision at the end of `u64`: someone else's record) is skipped
/// and named in the returned errors; the rest of the pass goes on.
pub fn reconcile(
    found: &[Proposal],
    published: &BTreeMap<String, ProposalEvent>,
    pooled: &HashSet<&str>,
) -> (Vec<ProposalEvent>, Vec<ProposalError>) {
    let mut taken: HashSet<&str> = HashSet::new();
    let member_sets: Vec<HashSet<&str>> = found
        .iter()
        .map(|p| p.members.iter().map(String::as_str).collect())
        .collect();
    // Each matchable proposal's members still pooled, once for every community.
    let still_pooled: Vec<(&ProposalEvent, HashSet<&str>)> = published
        .values()
        .filter(|p| p.status != ProposalStatus::Withdrawn)
        .map(|p| (p, still_pooled(p, pooled)))
        .filter(|(_, still)| !still.is_empty())
        .collect();
    // Phase 1: by members, largest community first.
    let mut matched: Vec<Option<(&ProposalEvent, bool)>> = vec![None; found.len()];
    for (slot, members) in matched.iter_mut().zip(&member_sets) {
        let same_theme = still_pooled
            .iter()
            .filter(|(p, _)| !taken.contains(p.proposal.as_str()))
            .map(|&(p, ref still)| (share_held(still, members), p))
            .filter(|&(share, _)| share >= SAME_THEME)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p);
        if let Some(previous) = same_theme {
            taken.insert(previous.proposal.as_str());
            *slot = Some((previous, true));
        }
    }
    // Phase 2: a split theme's part, by the id its oldest member derives.
    for (slot, proposal) in matched.iter_mut().zip(found) {
        if slot.is_some() {
            continue;
        }
        let split = published
            .get(&proposal.id)
            .filter(|p| p.status == ProposalStatus::Open)
            .filter(|p| !taken.contains(p.proposal.as_str()));
        if let Some(previous) = split {
            taken.insert(previous.proposal.as_str());
            *slot = Some((previous, false));
        }
    }
    let mut new_ids: HashSet<String> = HashSet::new();
    let (mut events, mut errors) = (Vec::new(), Vec::new());
    for ((proposal, members), slot) in found.iter().zip(&member_sets).zip(matched) {
        let event = match slot {
            None => {
                let id = fresh_id(&proposal.id, published, &new_ids);
                new_ids.insert(id.clone());
                let fresh = Proposal {
                    id,
                    ..proposal.clone()
                };
                fresh.open_event(None).map(Some)
            }
            Some((previous, same_theme)) => revision(proposal, members, previous, same_theme),
        };
        match event {
            Ok(Some(event)) => events.push(event),
            Ok(None) => {}
            Err(error) => errors.push(error),
        }
    }
    for stale in published.values().filter(|p| {
        p.status == ProposalStatus::Open
            && !taken.contains(p.proposal.as_str())
            && !p.members.iter().any(|m| pooled.contains(m.as_str()))
    }) {
        match stale.decided(ProposalStatus::Withdrawn, None) {
            Ok(event) => events.push(event),
            Err(error) => errors.push(error),
        }
    }
    (events, errors)
}

/// The next revision of `previous` that `proposal` (its community now) makes, if any: none for
/// a decided proposal or unchanged members (members come most central first, and centrality
/// shifts as the pool grows: the same set is the same proposal).
fn revision(
    proposal: &Proposal,
    members: &HashSet<&str>,
    previous: &ProposalEvent,
    same_theme: bool,
) -> Result<Option<ProposalEvent>, ProposalError> {
    let before: HashSet<&str> = previous.members.iter().map(String::as_str).collect();
    if previous.status != ProposalStatus::Open || before == *members {
        return Ok(None);
    }
    let same_id = Proposal {
        id: previous.proposal.clone(),
        ..proposal.clone()
    };
    let mut event = same_id.open_event(Some(previous))?;
    // A name and description the LLM wrote stay: a proposal does not change its name under the
    // operator's eyes as it grows. A part of a split theme is reported afresh.
    if same_theme && previous.description.is_some() {
        event.name = previous.name.clone();
        event.description = previous.description.clone();
    }
    Ok(Some(event))
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

/// `published`'s members still in the pool, each once: members that left the pool say nothing
/// about where the theme is now.
fn still_pooled<'a>(published: &'a ProposalEvent, pooled: &HashSet<&str>) -> HashSet<&'a str> {
    published
        .members
        .iter()
        .map(String::as_str)
        .filter(|m| pooled.contains(m))
        .collect()
}

/// The share of a proposal's members still pooled (`still`, not empty) that `members` holds.
fn share_held(still: &HashSet<&str>, members: &HashSet<&str>) -> f64 {
    let held = still.iter().filter(|m| members.contains(*m)).count();
    held as f64 / still.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::proposal::current;

    static TEXT_IDS: std::sync::LazyLock<Vec<String>> =
        std::sync::LazyLock::new(|| (0..400).map(|m| format!("t{m}")).collect());

    /// Every test text is still pooled (t0 … t399).
    fn all_pooled() -> HashSet<&'static str> {
        TEXT_IDS.iter().map(String::as_str).collect()
    }

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
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new(), &all_pooled()).0;
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].proposal.as_str(), first[0].revision), ("p-a", 1));
        let published = current(first.clone());

        // Unchanged, even in another order of centrality: nothing to publish.
        assert!(reconcile(&[found("p-a", 0..10)], &published, &all_pooled())
            .0
            .is_empty());
        let mut reordered = found("p-a", 0..10);
        reordered.members.reverse();
        assert!(reconcile(&[reordered], &published, &all_pooled())
            .0
            .is_empty());
        // Its oldest member left the pool (a new id would be derived), but most members are
        // still together: the same proposal, next revision, with its growth.
        let grown = reconcile(&[found("p-b", 3..15)], &published, &all_pooled()).0;
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
        let renamed = reconcile(&[found("p-b", 3..15)], &current([named]), &all_pooled()).0;
        assert_eq!(renamed[0].name, "Volcanology");
        assert_eq!(renamed[0].description.as_deref(), Some("Eruptions."));
        // A different theme is a proposal of its own.
        let other = reconcile(&[found("p-c", 100..110)], &published, &all_pooled()).0;
        assert_eq!(other[0].proposal, "p-c");

        // Rejected (or accepted): not proposed again while its members stay together.
        let rejected = first[0].decided(ProposalStatus::Rejected, None).unwrap();
        let published = current([first[0].clone(), rejected]);
        assert!(reconcile(&[found("p-b", 2..14)], &published, &all_pooled())
            .0
            .is_empty());
    }

    #[test]
    fn two_communities_do_not_both_become_the_same_proposal() {
        let published =
            current(reconcile(&[found("p-a", 0..10)], &BTreeMap::new(), &all_pooled()).0);
        // The theme split: the larger part keeps the id, the other is new.
        let split = reconcile(
            &[found("p-a", 0..7), found("p-x", 5..10)],
            &published,
            &all_pooled(),
        )
        .0;
        let ids: Vec<&str> = split.iter().map(|e| e.proposal.as_str()).collect();
        assert_eq!(ids, ["p-a", "p-x"]);
    }

    #[test]
    fn a_community_holding_an_old_proposals_oldest_member_but_not_its_theme_gets_a_fresh_id() {
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new(), &all_pooled()).0;
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
            let (events, errors) = reconcile(&order, &published, &all_pooled());
            assert!(errors.is_empty());
            let ids: Vec<&str> = events.iter().map(|e| e.proposal.as_str()).collect();
            assert_eq!(ids, ["p-a-2"], "{order:?}");
            assert_eq!((events[0].revision, events[0].size), (1, 22));
        }
        // Two new communities deriving the same id in one pass get different ones.
        let (events, _) = reconcile(
            &[found("p-q", 200..210), found("p-q", 300..310)],
            &published,
            &all_pooled(),
        );
        let ids: Vec<&str> = events.iter().map(|e| e.proposal.as_str()).collect();
        assert_eq!(ids, ["p-q", "p-q-2"]);
    }

    #[test]
    fn members_seen_twice_are_still_the_same_members() {
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new(), &all_pooled()).0;
        let mut twice = first[0].clone();
        twice.members.push("t3".into());
        assert!(
            reconcile(&[found("p-a", 0..10)], &current([twice]), &all_pooled())
                .0
                .is_empty()
        );
    }

    #[test]
    fn a_record_at_the_last_revision_is_skipped_not_fatal() {
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new(), &all_pooled()).0;
        let mut last = first[0].clone();
        last.revision = u64::MAX;
        let (events, errors) = reconcile(
            &[found("p-a", 0..12), found("p-c", 100..110)],
            &current([last]),
            &all_pooled(),
        );
        assert_eq!(errors.len(), 1);
        let ids: Vec<&str> = events.iter().map(|e| e.proposal.as_str()).collect();
        assert_eq!(ids, ["p-c"]);
    }

    #[test]
    fn a_theme_whose_texts_all_left_the_pool_is_withdrawn_once() {
        let first = reconcile(
            &[found("p-a", 0..10), found("p-b", 20..30)],
            &BTreeMap::new(),
            &all_pooled(),
        )
        .0;
        let rejected = first[1].decided(ProposalStatus::Rejected, None).unwrap();
        let published = current([first[0].clone(), first[1].clone(), rejected]);
        // One member of p-a still pooled: it stays open, though no community is it now.
        let one_left: HashSet<&str> = ["t9", "t25"].into_iter().collect();
        assert!(reconcile(&[], &published, &one_left).0.is_empty());
        // None left: withdrawn (p-b, decided, is left alone), under its own key.
        let (events, errors) = reconcile(&[], &published, &HashSet::new());
        assert!(errors.is_empty());
        assert_eq!(events.len(), 1);
        assert_eq!(
            (
                events[0].proposal.as_str(),
                events[0].status,
                events[0].revision
            ),
            ("p-a", ProposalStatus::Withdrawn, 2)
        );
        assert_eq!(events[0].record_key(), "p-a.withdrawn");
        // Withdrawn stays withdrawn: not withdrawn again; should its texts come back (sent
        // again after they left the pool), their theme is proposed afresh, not reopened nor
        // silenced.
        let published = current([first[0].clone(), events[0].clone()]);
        assert!(reconcile(&[], &published, &HashSet::new()).0.is_empty());
        assert_eq!(published["p-a"].status, ProposalStatus::Withdrawn);
        let (back, _) = reconcile(&[found("p-z", 0..12)], &published, &all_pooled());
        let back: Vec<(&str, ProposalStatus)> = back
            .iter()
            .map(|e| (e.proposal.as_str(), e.status))
            .collect();
        assert_eq!(back, [("p-z", ProposalStatus::Open)]);
    }

    #[test]
    fn members_match_before_ids_and_only_members_still_pooled_count() {
        let published =
            current(reconcile(&[found("p-a", 0..10)], &BTreeMap::new(), &all_pooled()).0);
        // A large community that holds p-a's oldest member (so derives its id) and a smaller
        // one that holds the rest of p-a: the smaller one is p-a, the larger one is new.
        let mut large = found("p-a", 100..130);
        large.members.push("t0".into());
        large.size = large.members.len();
        let (events, _) = reconcile(&[large, found("p-x", 1..10)], &published, &all_pooled());
        let ids: Vec<(&str, u64)> = events
            .iter()
            .map(|e| (e.proposal.as_str(), e.revision))
            .collect();
        assert_eq!(ids, [("p-a-2", 1), ("p-a", 2)]);
        // Six of p-a's members left the pool: a community holding the four still pooled is
        // p-a (four of four), not a new proposal beside a stale one.
        let still: HashSet<&str> = TEXT_IDS[6..].iter().map(String::as_str).collect();
        let (events, _) = reconcile(&[found("p-g", 6..30)], &published, &still);
        let ids: Vec<(&str, u64)> = events
            .iter()
            .map(|e| (e.proposal.as_str(), e.revision))
            .collect();
        assert_eq!(ids, [("p-a", 2)]);
    }

    #[test]
    fn a_split_theme_goes_on_in_the_part_holding_its_oldest_member_reported_afresh() {
        let first = reconcile(&[found("p-a", 0..10)], &BTreeMap::new(), &all_pooled()).0;
        let mut named = first[0].clone();
        named.name = "Volcanology".into();
        named.description = Some("Eruptions.".into());
        let published = current([named]);
        let part = |id: &str, members: &[u32]| {
            let mut p = found(id, 0..0);
            p.members = members.iter().map(|m| format!("t{m}")).collect();
            p.size = p.members.len();
            p
        };
        // Neither part holds half of p-a; the one with t0 (so deriving p-a) carries it on.
        let split = [
            part("p-a", &[0, 2, 4, 6, 100, 101]),
            part("p-y", &[1, 3, 5, 7, 102, 103]),
        ];
        let (events, errors) = reconcile(&split, &published, &all_pooled());
        assert!(errors.is_empty());
        let ids: Vec<(&str, u64)> = events
            .iter()
            .map(|e| (e.proposal.as_str(), e.revision))
            .collect();
        assert_eq!(ids, [("p-a", 2), ("p-y", 1)]);
        assert_eq!(events[0].name, "lava, crater");
        assert_eq!(events[0].description, None);
    }
}
