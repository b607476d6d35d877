//! gorag without a broker: the engine driven from files by `gorag classify`, with the
//! service's configuration, decoders and LLM options, and (optionally) a state folder that
//! keeps what it learned between runs.
//!
//! Events are applied in the order they come, as the service applies its labels topic and
//! texts topic: a round takes effect for the texts after it. Each text is decoded as the texts
//! topic's records are, classified, and learned from as the service learns (online indexing,
//! confidence-gated). Emerging-class discovery is the service's alone.

mod taxonomy_sync;

use std::path::Path;
use std::time::Instant;

use thiserror::Error;

pub use taxonomy_sync::{sync_taxonomy, TaxonomySync};

use crate::bounds::Bounds;
use crate::config::ServeConfig;
use crate::engine::{Engine, IndexReport};
use crate::events::classification::{prediction_event, Classification};
use crate::events::decode::{self, Reason, Rejection};
use crate::events::{
    InputPosition, LabelEvent, Prediction, StageLatency, TextEvent, EVENT_VERSION,
    NONE_OF_THESE_VERSION,
};
use crate::llm::setup::SetupError;
use crate::llm::LlmClient;
use crate::one_text::TextSteps;
use crate::reopen::{self, KeptVectors, OpenError};
use crate::state::from_event::{engine_rejection, label_update};
use crate::state::{State, Update};
use crate::store::{Mark, SledStore, StateStore, StoreError, TextLedger};

#[derive(Debug, Error)]
pub enum SessionError {
    #[error("{0} is not a folder")]
    NotAFolder(String),
    #[error(
        "{0} is a `gorag serve` state folder (it holds Kafka offsets): classify keeps a state of \
         its own; give it another folder"
    )]
    ServiceState(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Llm(#[from] SetupError),
}

/// A reviewer's answer for one text (`gorag classify --corrections`).
#[derive(Debug, Clone, PartialEq)]
pub struct Correction {
    pub text_id: String,
    /// The right label; none: no active label fits.
    pub label: Option<String>,
    pub text: String,
    pub audit: bool,
}

impl Correction {
    /// The labels topic's `correct` event that says the same.
    pub fn event(&self) -> LabelEvent {
        LabelEvent::Correct {
            version: if self.label.is_none() {
                NONE_OF_THESE_VERSION
            } else {
                EVENT_VERSION
            },
            text_id: self.text_id.clone(),
            none_of_these: self.label.is_none(),
            label: self.label.clone(),
            text: self.text.clone(),
            audit: self.audit,
            reviewer: None,
            proposal: None,
        }
    }
}

/// What applying a label event did.
#[derive(Debug, Clone)]
pub struct Applied {
    pub report: IndexReport,
    /// LLM calls that described the round's labels.
    pub description_calls: u32,
}

/// The engine, its LLM and its state folder.
pub struct Session {
    state: State,
    classifier: TextSteps,
    describe_labels: bool,
    /// The bounds texts and label events keep, as the service's.
    bounds: Bounds,
    model: Option<String>,
    store: Option<SledStore>,
    /// Updates applied since the state folder last recorded them.
    unrecorded: Vec<Update>,
    /// What was done with each text id: nothing is learned or corrected twice.
    ledger: TextLedger,
    /// Keeps the labels' vectors in the state folder while the session lives.
    _kept_vectors: Option<KeptVectors>,
}

impl Session {
    /// The engine `state` holds (a new one without), with `config`'s engine, embedding model
    /// and LLM client.
    pub fn open(config: &ServeConfig, state: Option<&Path>) -> Result<Self, SessionError> {
        let store = state.map(open_store).transpose()?;
        let mut saved = match &store {
            Some(store) => store.load()?,
            None => Default::default(),
        };
        if let (Some(dir), false) = (state, saved.offsets.is_empty()) {
            return Err(SessionError::ServiceState(dir.display().to_string()));
        }
        let (state, kept_vectors) =
            reopen::restore(&mut saved, config.restoring(), store.as_ref())?;
        let llm = config.llm.settings().client()?;
        let model = llm.as_ref().map(|_| config.llm.model.clone());
        let ledger = match &store {
            Some(store) => store.text_ledger()?,
            None => TextLedger::in_memory(),
        };
        Ok(Self {
            state,
            classifier: TextSteps::new(llm, config.engine.keywords),
            describe_labels: config.llm.describe_labels,
            bounds: config.bounds(),
            model,
            store,
            unrecorded: Vec::new(),
            ledger,
            _kept_vectors: kept_vectors,
        })
    }

    pub fn engine(&self) -> &Engine {
        self.state.engine()
    }

    /// The bounds texts and label events keep.
    pub fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    pub fn llm(&self) -> Option<&LlmClient> {
        self.classifier.llm()
    }

    /// Whether applying `events` would ask the LLM to describe labels.
    pub fn would_describe(&self, events: &[LabelEvent]) -> bool {
        self.describe_labels
            && events.iter().any(|event| match event {
                LabelEvent::Round { labels, .. } => labels
                    .iter()
                    .any(|l| l.name.is_some() && l.description.is_none()),
                _ => false,
            })
    }

    /// Whether classifying a text asks the LLM (to choose, or for its keywords).
    pub fn asks_per_text(&self) -> bool {
        self.llm().is_some()
            && (self.engine().config().ask_below > 0.0 || self.classifier.asks_for_keywords())
    }

    /// Apply a label event (a labels-topic record's bytes or its decoded event), describing a
    /// round's named labels first when the LLM is to.
    pub async fn apply(&mut self, event: LabelEvent) -> Result<Applied, Rejection> {
        let mut update = label_update(self.state.engine(), event, &self.bounds)?;
        let mut description_calls = 0;
        if let Update::Round { labels, .. } = &mut update {
            if self.describe_labels {
                description_calls = self.classifier.describe_labels(labels, usize::MAX).await;
            }
        }
        let report = self
            .state
            .apply(&update)
            .map_err(|e| engine_rejection(&e))?;
        self.unrecorded.push(update);
        Ok(Applied {
            report,
            description_calls,
        })
    }

    /// Decode a label event as the labels topic's records are.
    pub fn decode_label(bytes: &[u8]) -> Result<LabelEvent, Rejection> {
        decode::label_event(bytes)
    }

    /// Decode a text event as the texts topic's records are.
    pub fn decode_text(&self, bytes: &[u8]) -> Result<TextEvent, Rejection> {
        decode::text_event(bytes, &self.bounds)
    }

    /// Classify `event` and learn from the decision as the service does; its prediction is the
    /// predictions topic's.
    pub async fn classify(
        &mut self,
        event: &TextEvent,
        position: InputPosition,
    ) -> Result<Prediction, Rejection> {
        let started = Instant::now();
        let engine = self.state.engine();
        let classified = self
            .classifier
            .classify(engine, &event.text)
            .await
            .map_err(|e| engine_rejection(&e))?;
        let index_started = Instant::now();
        // A text id this state learned or was told about already teaches nothing again (a
        // rerun of the same file).
        let seen = self
            .ledger
            .get(&event.id)
            .map_err(|e| Rejection::new(Reason::InvalidEvent, e.to_string()))?
            .is_some();
        if engine.config().online_indexing && !seen {
            let update = Update::learned(engine, &classified);
            // A label retired meanwhile is not learned; nothing else can refuse it.
            if self.state.apply(&update).is_ok() {
                self.unrecorded.push(update);
                self.ledger.set(&event.id, Mark::Learned);
            }
        }
        let times = &classified.times;
        let latency = StageLatency {
            decode_ms: 0.0,
            keywords_ms: times.keywords.as_secs_f64() * 1000.0,
            retrieve_ms: times.retrieve.as_secs_f64() * 1000.0,
            llm_ms: times.llm.as_secs_f64() * 1000.0,
            index_ms: index_started.elapsed().as_secs_f64() * 1000.0,
            total_ms: started.elapsed().as_secs_f64() * 1000.0,
        };
        let classification = Classification {
            event,
            analysis: &classified.analysis,
            retrieval: &classified.retrieval,
            decision: &classified.decision,
            verdict: &classified.verdict,
            llm_asked: classified.llm_asked,
            llm_changed: classified.llm_changed,
            raw_answer: classified.raw_answer.as_deref(),
            llm_error: classified.llm_error.as_deref(),
            model: self.model.as_deref(),
            latency,
            position: &position,
            held: None,
        };
        Ok(prediction_event(self.state.engine(), &classification))
    }

    /// A reviewer's label for the text `text_id` (none: no label fits), applied as the labels
    /// topic's `correct` event is; `false` when this state was given the same answer before.
    pub async fn correct(&mut self, answer: Correction) -> Result<bool, Rejection> {
        let mark = Mark::Corrected {
            label: answer.label.clone(),
            audit: answer.audit,
        };
        let known = self
            .ledger
            .get(&answer.text_id)
            .map_err(|e| Rejection::new(Reason::InvalidEvent, e.to_string()))?;
        if known.as_ref() == Some(&mark) {
            return Ok(false);
        }
        self.apply(answer.event()).await?;
        self.ledger.set(&answer.text_id, mark);
        Ok(true)
    }

    /// Write what was applied since the last call to the state folder (if any).
    pub fn record(&mut self) -> Result<(), SessionError> {
        if let Some(store) = &mut self.store {
            if !self.unrecorded.is_empty() {
                store.record(&self.unrecorded, &Default::default())?;
            }
        }
        self.unrecorded.clear();
        self.ledger.write()?;
        Ok(())
    }

    /// Record, then snapshot the engine and make the state folder durable.
    pub fn save(&mut self) -> Result<(), SessionError> {
        self.record()?;
        if let Some(store) = &mut self.store {
            store.snapshot(&self.state.to_snapshot())?;
            store.flush()?;
        }
        Ok(())
    }
}

fn open_store(dir: &Path) -> Result<SledStore, SessionError> {
    if dir.exists() && !dir.is_dir() {
        return Err(SessionError::NotAFolder(dir.display().to_string()));
    }
    Ok(SledStore::open(dir)?)
}
