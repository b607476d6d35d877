//! The bounded pool of poorly explained texts a community pass works on.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::Unexplained;
use crate::engine::prompt::clip;
use crate::engine::terms::TermCounts;
use crate::engine::Analysis;

/// Characters of a pooled text kept as its excerpt (a proposal's example material).
pub const EXCERPT_CHARS: usize = 1200;

/// What the pool keeps of a text: enough to compare it with others and to show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledText {
    pub id: String,
    /// The retrieval index's terms of the text (similarity between pooled texts).
    pub terms: TermCounts,
    /// Its keywords, best first (a community's name and keywords come from them).
    pub keywords: Vec<String>,
    pub excerpt: String,
    pub why: Unexplained,
    /// The label it was given all the same.
    pub label: String,
    /// Its best retrieval score when it was classified, descriptions left out (see
    /// [`super::arrival_score`]; scores written by builds before 2026-11-25 included them);
    /// None for strategies without scores and for texts pooled before builds kept it. Stored
    /// beside the text, not in it ([`Pool`]'s and the update log's layouts predate it).
    #[serde(skip)]
    pub arrival_score: Option<f64>,
}

impl PooledText {
    pub fn new(
        id: &str,
        text: &str,
        analysis: &Analysis,
        label: &str,
        why: Unexplained,
        arrival_score: Option<f64>,
    ) -> Self {
        Self {
            id: id.to_string(),
            terms: analysis.terms.clone(),
            keywords: analysis.keywords.iter().map(|k| k.phrase.clone()).collect(),
            excerpt: excerpt(text, EXCERPT_CHARS),
            why,
            label: label.to_string(),
            arrival_score,
        }
    }
}

impl PooledText {
    /// The bytes this text holds, approximately: its fields and what its strings and lists
    /// allocate (by capacity; the allocator's own overhead not counted).
    pub fn approximate_bytes(&self) -> usize {
        use std::mem::size_of;
        let keywords: usize = self.keywords.iter().map(String::capacity).sum();
        let terms: usize = self.terms.counts.iter().map(|(t, _)| t.capacity()).sum();
        size_of::<Self>()
            + self.id.capacity()
            + self.excerpt.capacity()
            + self.label.capacity()
            + self.keywords.capacity() * size_of::<String>()
            + keywords
            + self.terms.counts.capacity() * size_of::<(String, u32)>()
            + terms
    }
}

/// What the instance that classified a poorly explained text tells every replica (in the text's
/// learn record) so all of them pool it identically; the rest comes from the learned analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolNote {
    pub id: String,
    pub why: Unexplained,
    pub excerpt: String,
    /// The text's terms, all of them up to `POOL_TERMS` (else its heaviest; see
    /// [`crate::engine::Analyzer::poolable`]):
    /// the learn step keeps only its hundred heaviest (what the text graph needs), and the
    /// pool's similarities need more (communities over the heaviest terms alone were measured
    /// worse: docs/design/emerging-classes.md, "Emerging classes").
    pub terms: TermCounts,
    /// The writer's retrieval score for the text (see [`super::arrival_score`]): replicas
    /// cannot recompute it, their state having moved on since.
    pub arrival_score: Option<f64>,
}

impl PoolNote {
    pub fn new(
        id: &str,
        text: &str,
        terms: &TermCounts,
        why: Unexplained,
        arrival_score: Option<f64>,
    ) -> Self {
        Self {
            id: id.to_string(),
            why,
            excerpt: excerpt(text, EXCERPT_CHARS),
            terms: terms.clone(),
            arrival_score,
        }
    }

    /// The pooled text, from the note and the learn record's keywords and label.
    pub fn pooled(self, analysis: &Analysis, label: &str) -> PooledText {
        PooledText {
            id: self.id,
            terms: self.terms,
            keywords: analysis.keywords.iter().map(|k| k.phrase.clone()).collect(),
            excerpt: self.excerpt,
            why: self.why,
            label: label.to_string(),
            arrival_score: self.arrival_score,
        }
    }
}

/// The first `chars` characters of `text`, cut at a word boundary when there is one.
pub fn excerpt(text: &str, chars: usize) -> String {
    let text = text.trim();
    let cut = clip(text, chars);
    if cut.len() == text.len() {
        return text.to_string();
    }
    let cut = cut.rfind(char::is_whitespace).map_or(cut, |i| &cut[..i]);
    format!("{}…", cut.trim_end())
}

/// Pooled texts, oldest first; past the capacity the oldest go.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(from = "PoolLayout<VecDeque<PooledText>>")]
pub struct Pool {
    texts: VecDeque<PooledText>,
    capacity: usize,
    /// Texts ever pushed: the same on every replica that applied the same log, so it can say
    /// when a community pass is due.
    pushed: u64,
    /// What the texts hold ([`PooledText::approximate_bytes`]), kept as texts come and go: the
    /// service reports it every tick, and summing a full pool each time would cost.
    bytes: usize,
}

/// Two pools are equal by their texts, capacity and count: the byte count depends on how the
/// strings were allocated (a restored text's capacity is its length), not on what they hold.
impl PartialEq for Pool {
    fn eq(&self, other: &Self) -> bool {
        self.texts == other.texts && self.capacity == other.capacity && self.pushed == other.pushed
    }
}

impl Pool {
    pub fn new(capacity: usize) -> Self {
        Self {
            texts: VecDeque::new(),
            capacity: capacity.max(1),
            pushed: 0,
            bytes: 0,
        }
    }

    /// A pool holding `texts`, its byte count summed once.
    fn holding(texts: VecDeque<PooledText>, capacity: usize, pushed: u64) -> Self {
        let bytes = texts.iter().map(PooledText::approximate_bytes).sum();
        Self {
            texts,
            capacity,
            pushed,
            bytes,
        }
    }

    /// Pool `text`, unless a text of the same id is pooled already (a producer that delivers
    /// at least once may send a text twice: counted twice, it would weigh twice in its
    /// community). Replicas skip the same copies, applying the same log.
    pub fn push(&mut self, text: PooledText) {
        if self.texts.iter().any(|pooled| pooled.id == text.id) {
            return;
        }
        self.bytes += text.approximate_bytes();
        self.texts.push_back(text);
        self.pushed += 1;
        self.trim();
    }

    /// A restored pool takes the configured capacity (dropping its oldest texts if lower).
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
        self.trim();
    }

    fn trim(&mut self) {
        while self.texts.len() > self.capacity {
            if let Some(gone) = self.texts.pop_front() {
                self.bytes = self.bytes.saturating_sub(gone.approximate_bytes());
            }
        }
    }

    /// The bytes the pooled texts hold, approximately ([`PooledText::approximate_bytes`]).
    pub fn approximate_bytes(&self) -> usize {
        self.bytes
    }

    /// Texts ever pushed (including those since dropped).
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Oldest first.
    pub fn texts(&self) -> &VecDeque<PooledText> {
        &self.texts
    }

    /// Drop the texts `keep` refuses (e.g. those a new label now explains).
    pub fn retain(&mut self, keep: impl FnMut(&PooledText) -> bool) {
        self.texts.retain(keep);
    }
}

/// A pool's fields, for the state's wire types (`state::codec::wire`), which mirror them: a
/// field added to [`Pool`] must be added here, and then fails to compile there until the
/// snapshot's layout says how it is stored.
#[derive(Debug)]
pub(crate) struct PoolParts {
    pub texts: VecDeque<PooledText>,
    pub capacity: usize,
    pub pushed: u64,
}

impl Pool {
    pub(crate) fn into_parts(self) -> PoolParts {
        let Pool {
            texts,
            capacity,
            pushed,
            bytes: _,
        } = self;
        PoolParts {
            texts,
            capacity,
            pushed,
        }
    }

    pub(crate) fn from_parts(parts: PoolParts) -> Self {
        let PoolParts {
            texts,
            capacity,
            pushed,
        } = parts;
        Self::holding(texts, capacity, pushed)
    }
}

/// How a pool is stored: the texts' arrival scores last, in text order (where they were added).
/// Written over borrowed texts (a snapshot need not copy them again), read into owned ones.
#[derive(Serialize, Deserialize)]
struct PoolLayout<Texts> {
    texts: Texts,
    capacity: usize,
    pushed: u64,
    arrival_scores: Vec<Option<f64>>,
}

impl Serialize for Pool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        PoolLayout {
            texts: &self.texts,
            capacity: self.capacity,
            pushed: self.pushed,
            arrival_scores: self.texts.iter().map(|t| t.arrival_score).collect(),
        }
        .serialize(serializer)
    }
}

impl From<PoolLayout<VecDeque<PooledText>>> for Pool {
    fn from(layout: PoolLayout<VecDeque<PooledText>>) -> Self {
        let mut texts = layout.texts;
        for (text, score) in texts.iter_mut().zip(layout.arrival_scores) {
            text.arrival_score = score;
        }
        Self::holding(texts, layout.capacity, layout.pushed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_s_bytes_grow_with_its_texts_and_stop_at_its_capacity() {
        let text = |id: &str, body: &str| PooledText {
            id: id.into(),
            terms: TermCounts::of(body),
            keywords: vec!["lava".into()],
            excerpt: body.into(),
            why: Unexplained::WeakScore,
            label: String::new(),
            arrival_score: None,
        };
        let mut pool = Pool::new(2);
        assert_eq!(pool.approximate_bytes(), 0);
        let one = text("a", "lava flows from the volcano");
        let bytes = one.approximate_bytes();
        assert!(bytes > std::mem::size_of::<PooledText>() + "lava flows from the volcano".len());
        pool.push(one);
        assert_eq!(pool.approximate_bytes(), bytes);
        pool.push(text("b", "lava flows from the volcano"));
        pool.push(text("c", "lava flows from the volcano"));
        assert_eq!(pool.len(), 2);
        assert_eq!(pool.approximate_bytes(), 2 * bytes);
        let summed: usize = pool.texts().iter().map(PooledText::approximate_bytes).sum();
        assert_eq!(pool.approximate_bytes(), summed);
        pool.set_capacity(1);
        assert_eq!(pool.approximate_bytes(), bytes);
    }

    fn pooled(id: &str) -> PooledText {
        PooledText {
            id: id.into(),
            terms: TermCounts::default(),
            keywords: Vec::new(),
            excerpt: String::new(),
            why: Unexplained::WeakScore,
            label: String::new(),
            arrival_score: None,
        }
    }

    #[test]
    fn the_oldest_texts_leave_a_full_pool() {
        let mut pool = Pool::new(2);
        for id in ["a", "b", "c"] {
            pool.push(pooled(id));
        }
        let ids: Vec<&str> = pool.texts().iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["b", "c"]);
        pool.retain(|t| t.id != "b");
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn a_text_sent_twice_is_pooled_once() {
        let mut pool = Pool::new(10);
        for id in ["a", "b", "a"] {
            pool.push(pooled(id));
        }
        let ids: Vec<&str> = pool.texts().iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(pool.pushed(), 2);
    }

    #[test]
    fn excerpts_end_at_a_word() {
        assert_eq!(excerpt("short text", 100), "short text");
        assert_eq!(excerpt("alpha beta gamma", 8), "alpha…");
        assert_eq!(excerpt("ééééé", 3), "ééé…");
    }
}
