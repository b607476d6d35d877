//! The replicated state: what every replica holds the same — the engine (labels, keyword graph,
//! retrieval index) and the discovery pool — the [`Update`]s that change it, its [`Snapshot`]
//! and its digest. The store persists it, replicas apply the changelog to it, and `gorag eval`
//! and `gorag classify` drive it in process. The engine knows nothing of discovery; this layer
//! joins them.

pub mod codec;
pub mod from_event;
mod restore;
#[cfg(test)]
mod tests;
mod update;

use sha2::{Digest, Sha256};

pub use codec::Snapshot;
pub use restore::RestoreError;
pub use update::Update;

use crate::discovery::{Pool, PooledText, Unexplained};
use crate::engine::correct::{CorrectionKind, CorrectionReport};
use crate::engine::saved::EngineState;
use crate::engine::saved::{hash_str, StateError};
use crate::engine::{Engine, EngineConfig, EngineError, IndexReport};

/// The engine and the discovery pool, changed together by [`Update`]s.
#[derive(Debug)]
pub struct State {
    engine: Engine,
    pool: Pool,
}

impl State {
    /// `engine` with an empty pool of `pool_capacity` texts.
    pub fn new(engine: Engine, pool_capacity: usize) -> Self {
        Self {
            engine,
            pool: Pool::new(pool_capacity),
        }
    }

    pub fn from_parts(engine: Engine, pool: Pool) -> Self {
        Self { engine, pool }
    }

    pub fn into_parts(self) -> (Engine, Pool) {
        (self.engine, self.pool)
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine, for what is not replicated state (its encoder, its confidence refit).
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// The texts the active labels explain poorly, oldest first.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Apply one update: the one path every change to the state takes, in `serve`, `classify`
    /// and `eval` alike. On error the state is unchanged.
    pub fn apply(&mut self, update: &Update) -> Result<IndexReport, EngineError> {
        match update {
            Update::Round { round, labels } => self.engine.apply_round(Some(round), labels),
            Update::AddExamples { label, examples } => self.engine.add_examples(label, examples),
            Update::RetireLabel { label } => {
                self.engine.retire_label(label)?;
                Ok(IndexReport::default())
            }
            Update::Learn {
                analysis,
                label,
                confident,
            } => Ok(IndexReport {
                texts_indexed: 1,
                keywords_added: self.engine.learn(analysis, label, *confident),
                ..IndexReport::default()
            }),
            Update::Pooled {
                text,
                arrival_score,
            } => {
                self.pool.push(PooledText {
                    arrival_score: *arrival_score,
                    ..text.clone()
                });
                Ok(IndexReport::default())
            }
            Update::Correct {
                text_id,
                label,
                text,
            } => self.correct(text_id, label, text, CorrectionKind::Review),
            Update::Audit {
                text_id,
                label,
                text,
            } => self.correct(text_id, label, text, CorrectionKind::Audit),
            Update::CorrectNone { text_id, text } => {
                self.correct_to_none(text_id, text, CorrectionKind::Review)
            }
            Update::AuditNone { text_id, text } => {
                self.correct_to_none(text_id, text, CorrectionKind::Audit)
            }
        }
    }

    /// An operator's label for a text: the engine learns it, and a pooled copy goes (it would
    /// keep proposing a class for a text now labelled).
    fn correct(
        &mut self,
        text_id: &str,
        label: &str,
        text: &str,
        kind: CorrectionKind,
    ) -> Result<IndexReport, EngineError> {
        let (report, correction) = self.engine.correct(Some(label), text, kind)?;
        self.pool.retain(|pooled| pooled.id != text_id);
        Ok(with_correction(report, correction))
    }

    /// An operator's "none of these": the engine takes back what it learned of the text, which
    /// joins the pool as a text no label explains.
    fn correct_to_none(
        &mut self,
        text_id: &str,
        text: &str,
        kind: CorrectionKind,
    ) -> Result<IndexReport, EngineError> {
        let (report, correction) = self.engine.correct(None, text, kind)?;
        self.pool_unmatched(text_id, text, correction.arrival_score);
        Ok(with_correction(report, correction))
    }

    /// Pool a text an operator said no label fits (a pooled copy stays as it is).
    fn pool_unmatched(&mut self, text_id: &str, text: &str, arrival_score: Option<f64>) {
        let analysis = self.engine.analyzer().analyze(text);
        let poolable = self.engine.analyzer().poolable(&analysis);
        self.pool.push(PooledText::new(
            text_id,
            text,
            &poolable,
            crate::engine::NO_LABEL,
            Unexplained::NoMatch,
            arrival_score,
        ));
    }

    /// What the store persists.
    pub fn to_snapshot(&self) -> Snapshot {
        Snapshot::new(EngineState::of(&self.engine), self.pool.clone())
    }

    /// The state a snapshot describes, with this instance's engine configuration and pool
    /// capacity.
    pub fn from_snapshot(
        config: EngineConfig,
        pool_capacity: usize,
        snapshot: Snapshot,
    ) -> Result<Self, StateError> {
        let (engine, mut pool) = snapshot.into_parts();
        pool.set_capacity(pool_capacity);
        Ok(Self {
            engine: Engine::from_state(config, engine)?,
            pool,
        })
    }

    /// SHA-256 over the engine's digest and the pool's texts: equal digests mean replicas or
    /// restarts hold the same replicated state.
    pub fn digest(&self) -> String {
        let mut hash = Sha256::new();
        hash_str(&mut hash, &self.engine.digest());
        hash.update((self.pool.texts().len() as u64).to_le_bytes());
        for text in self.pool.texts() {
            hash_pooled(&mut hash, text);
        }
        let bytes = hash.finalize();
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn hash_pooled(hash: &mut Sha256, text: &PooledText) {
    hash_str(hash, &text.id);
    hash_str(hash, &text.label);
    hash_str(hash, &text.excerpt);
    hash.update([text.why as u8]);
    hash.update((text.keywords.len() as u64).to_le_bytes());
    for keyword in &text.keywords {
        hash_str(hash, keyword);
    }
    hash.update((text.terms.counts.len() as u64).to_le_bytes());
    for (term, count) in &text.terms.counts {
        hash_str(hash, term);
        hash.update(count.to_le_bytes());
    }
    match text.arrival_score {
        Some(score) => {
            hash.update([1]);
            hash.update(score.to_bits().to_le_bytes());
        }
        None => hash.update([0]),
    }
}

/// A correction's index report, with what the correction found.
fn with_correction(report: IndexReport, correction: CorrectionReport) -> IndexReport {
    IndexReport {
        correction: Some(correction),
        ..report
    }
}
