//! A community turned into a proposed class (GraphRAG's community report, without an LLM):
//! its distinctive keywords, a name made of the best of them, its most central texts.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Community, PooledText};
use crate::events::proposal::{ProposalError, ProposalEvent, ProposalStatus, Representative};
use crate::events::EVENT_VERSION;

/// Keywords a proposal lists.
const KEYWORDS: usize = 8;
/// Keywords its name is made of (without an LLM).
const NAME_KEYWORDS: usize = 3;
/// Representative texts (most central first) a proposal lists, with their excerpts (an
/// accepted proposal's examples).
const REPRESENTATIVES: usize = 5;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// Derived from its oldest member: the same while that member stays in the pool and in
    /// the community.
    pub id: String,
    pub name: String,
    pub keywords: Vec<String>,
    /// Every member's text id, most central first.
    pub members: Vec<String>,
    pub representatives: Vec<String>,
    pub excerpts: Vec<String>,
    pub size: usize,
    pub cohesion: f64,
}

impl Proposal {
    /// This proposal's open event; `previous` is the last one published for it, if any (a
    /// decided proposal is not opened again).
    pub fn open_event(
        &self,
        previous: Option<&ProposalEvent>,
    ) -> Result<ProposalEvent, ProposalError> {
        if let Some(decided) = previous.filter(|p| p.status != ProposalStatus::Open) {
            return Err(ProposalError::AlreadyDecided(
                self.id.clone(),
                decided.status.as_str(),
            ));
        }
        let revision = match previous {
            Some(p) => p.next_revision()?,
            None => 1,
        };
        let representatives = self
            .representatives
            .iter()
            .zip(&self.excerpts)
            .map(|(id, excerpt)| Representative {
                text_id: id.clone(),
                excerpt: excerpt.clone(),
            })
            .collect();
        Ok(ProposalEvent {
            version: EVENT_VERSION,
            proposal: self.id.clone(),
            revision,
            status: ProposalStatus::Open,
            name: self.name.clone(),
            description: None,
            keywords: self.keywords.clone(),
            representatives,
            size: self.size,
            members: self.members.clone(),
            growth: self.size.saturating_sub(previous.map_or(0, |p| p.size)),
            cohesion: self.cohesion,
            label: None,
            // The pass says, when it has the members' meaning (`serve::discovery_pass`).
            closest_label: None,
        })
    }

    /// The proposal an event describes, as a community pass made it (for the label map's list).
    pub fn from_event(event: &ProposalEvent) -> Self {
        Self {
            id: event.proposal.clone(),
            name: event.name.clone(),
            keywords: event.keywords.clone(),
            members: event.members.clone(),
            representatives: event
                .representatives
                .iter()
                .map(|r| r.text_id.clone())
                .collect(),
            excerpts: event
                .representatives
                .iter()
                .map(|r| r.excerpt.clone())
                .collect(),
            size: event.size,
            cohesion: event.cohesion,
        }
    }
}

/// The proposal for `community` of `texts` (the slice the community was found in).
pub fn propose(texts: &[&PooledText], community: &Community) -> Proposal {
    let keywords = distinctive_keywords(texts, community);
    let name = keywords
        .iter()
        .take(NAME_KEYWORDS)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let oldest = community.members.iter().min().map_or("", |&m| &texts[m].id);
    let members: Vec<String> = community
        .members
        .iter()
        .map(|&m| texts[m].id.clone())
        .collect();
    Proposal {
        id: proposal_id(oldest),
        name,
        keywords,
        representatives: members.iter().take(REPRESENTATIVES).cloned().collect(),
        excerpts: community
            .members
            .iter()
            .take(REPRESENTATIVES)
            .map(|&m| texts[m].excerpt.clone())
            .collect(),
        size: members.len(),
        members,
        cohesion: community.cohesion,
    }
}

fn proposal_id(oldest_member: &str) -> String {
    let digest = Sha256::digest(oldest_member.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("p-{hex}")
}

/// Keywords the members share more than the rest of the pool: share of members with the
/// keyword minus its share among the other pooled texts (not the whole pool, so a theme that
/// fills most of the pool keeps its own words); at least two members must have it.
fn distinctive_keywords(texts: &[&PooledText], community: &Community) -> Vec<String> {
    let mut in_pool: HashMap<&str, usize> = HashMap::new();
    for text in texts {
        for keyword in &text.keywords {
            *in_pool.entry(keyword.as_str()).or_default() += 1;
        }
    }
    let mut in_community: HashMap<&str, usize> = HashMap::new();
    for &m in &community.members {
        for keyword in &texts[m].keywords {
            *in_community.entry(keyword.as_str()).or_default() += 1;
        }
    }
    let size = community.members.len() as f64;
    let others = (texts.len() as f64 - size).max(1.0);
    let mut scored: Vec<(&str, f64)> = in_community
        .into_iter()
        .filter(|&(_, count)| count >= 2)
        .map(|(keyword, count)| {
            let outside = in_pool
                .get(keyword)
                .copied()
                .unwrap_or(0)
                .saturating_sub(count);
            let background = outside as f64 / others;
            (keyword, count as f64 / size - background)
        })
        .filter(|&(_, score)| score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    // A phrase inside a better one ("neural" after "neural network") adds nothing to a name.
    let mut kept: Vec<String> = Vec::new();
    for (keyword, _) in scored {
        if kept.len() == KEYWORDS {
            break;
        }
        if !kept
            .iter()
            .any(|k| within(k, keyword) || within(keyword, k))
        {
            kept.push(keyword.to_string());
        }
    }
    kept
}

/// Whether the words of `part` occur in a row among the words of `whole` ("lava" in "lava
/// flow"; "art" is not in "party").
fn within(part: &str, whole: &str) -> bool {
    let (part, whole): (Vec<&str>, Vec<&str>) = (
        part.split_whitespace().collect(),
        whole.split_whitespace().collect(),
    );
    !part.is_empty() && whole.windows(part.len()).any(|w| w == part.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::Unexplained;
    use crate::engine::terms::TermCounts;

    fn text(id: &str, keywords: &[&str]) -> PooledText {
        PooledText {
            id: id.into(),
            terms: TermCounts::default(),
            keywords: keywords.iter().map(|k| k.to_string()).collect(),
            excerpt: format!("text {id}"),
            why: Unexplained::WeakScore,
            label: String::new(),
            arrival_score: None,
        }
    }

    #[test]
    fn names_come_from_the_members_distinctive_keywords() {
        let texts = [
            text("a", &["lava flow", "crater", "report"]),
            text("b", &["lava flow", "crater", "lava", "report"]),
            text("c", &["magma", "crater", "report"]),
            text("d", &["violin", "report"]),
            text("e", &["cello", "report"]),
        ];
        let refs: Vec<&PooledText> = texts.iter().collect();
        let community = Community {
            members: vec![1, 0, 2],
            cohesion: 0.5,
        };
        let proposal = propose(&refs, &community);
        // "report" is everywhere; "lava" is inside "lava flow"; "magma" is in one member only.
        assert_eq!(proposal.keywords, ["crater", "lava flow"]);
        assert_eq!(proposal.name, "crater, lava flow");
        assert_eq!(proposal.members, ["b", "a", "c"]);
        assert_eq!(proposal.excerpts[0], "text b");
        assert_eq!(proposal.size, 3);
        // Named after the oldest member (position 0), whatever the centrality.
        assert_eq!(proposal.id, proposal_id("a"));
        assert!(within("lava", "lava flow"));
        assert!(!within("art", "party time"));
    }

    fn proposal(size: usize) -> Proposal {
        Proposal {
            id: "p-1".into(),
            name: "crater, lava flow".into(),
            keywords: vec!["crater".into(), "lava flow".into()],
            members: (0..size).map(|i| i.to_string()).collect(),
            representatives: vec!["0".into(), "1".into()],
            excerpts: vec!["Lava reached the crater rim…".into(), "A new crater".into()],
            size,
            cohesion: 0.4,
        }
    }

    #[test]
    fn revisions_grow_and_decisions_are_later_revisions() {
        let first = proposal(10).open_event(None).unwrap();
        assert_eq!((first.revision, first.growth), (1, 10));
        let grown = proposal(14).open_event(Some(&first)).unwrap();
        assert_eq!((grown.revision, grown.growth), (2, 4));
        let rejected = grown.decided(ProposalStatus::Rejected, None).unwrap();
        assert_eq!(rejected.revision, 3);
        assert_eq!(rejected.status, ProposalStatus::Rejected);
        // Rejected stays rejected; a forged last revision is refused, not wrapped.
        assert!(proposal(20).open_event(Some(&rejected)).is_err());
        let forged = ProposalEvent {
            revision: u64::MAX,
            ..first.clone()
        };
        assert!(forged.decided(ProposalStatus::Accepted, None).is_err());
        let json = serde_json::to_string(&rejected).unwrap();
        assert_eq!(
            serde_json::from_str::<ProposalEvent>(&json).unwrap(),
            rejected
        );
    }
}
