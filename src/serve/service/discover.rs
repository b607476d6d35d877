//! The loop's side of emerging-class discovery: start a community pass when one of this
//! instance's records made it due (one at a time; a pass due meanwhile waits for the running
//! one), and collect its report on the tick. The pass itself runs as a task
//! (`serve::discovery_pass`), never on the loop. Each pass also says which proposals are open,
//! to hold texts that read like them for review; an instance whose pass ran elsewhere reads
//! them from the proposals topic.

use futures::FutureExt;
use tokio::task::JoinHandle;

use crate::discovery::Holding;
use crate::serve::discovery_pass::{self, PassError, PassReport, PassSettings};
use crate::serve::internal_events::{
    CommunityPassDied, CommunityPassFailed, CommunityPassFinished, PoolMeasured,
};
use crate::serve::replica::Replica;
use crate::serve::stats::Stats;

/// What a pass task ends with: its report, and the open proposals to hold texts for.
type PassOutcome = Result<(PassReport, Holding), PassError>;

/// The service's community passes (None settings: discovery is off): how to run one, the one
/// running, and whether another is due.
pub(super) struct Passes {
    settings: Option<PassSettings>,
    /// The pass running, and the label version it started at.
    running: Option<(JoinHandle<PassOutcome>, u64)>,
    waiting: bool,
    /// Reading the open proposals another instance's pass published, and the label version
    /// it started at.
    refreshing: Option<(JoinHandle<Result<Holding, PassError>>, u64)>,
    /// The open proposals texts are held for, and the label version they were read at: a
    /// round since (an accepted proposal's among them) ends the holding until the next pass.
    holding: Option<(Holding, u64)>,
}

impl Passes {
    pub fn new(settings: Option<PassSettings>) -> Self {
        Self {
            settings,
            running: None,
            waiting: false,
            refreshing: None,
            holding: None,
        }
    }

    /// The open proposals texts are held for at label version `version` (None when there are
    /// none, or the labels changed since their pass started).
    pub fn holding(&self, version: u64) -> Option<&Holding> {
        self.holding
            .as_ref()
            .filter(|(holding, read)| *read == version && !holding.is_empty())
            .map(|(holding, _)| holding)
    }

    /// After a changelog record: start a pass if it made one due and none is running.
    pub fn start_if_due(&mut self, replica: &mut Replica) {
        if replica.pass_marks().take_due() {
            self.waiting = true;
        }
        let elsewhere = replica.pass_marks().take_elsewhere();
        let Some(settings) = self.settings.as_ref() else {
            return;
        };
        let holds = settings.config.hold_open
            && replica
                .state()
                .engine()
                .analyzer()
                .query_encoder()
                .is_some();
        if elsewhere && holds && self.refreshing.is_none() && self.running.is_none() {
            let version = replica.state().engine().labels().version();
            let (texts, material, encoder) = pass_inputs(replica);
            let refresh = discovery_pass::refresh(texts, material, encoder, settings.clone());
            self.refreshing = Some((tokio::spawn(refresh), version));
        }
        if !self.waiting || self.running.is_some() {
            return;
        }
        self.waiting = false;
        // The pass says what is open as of its own end: a refresh still running would say it
        // as of the pass before.
        if let Some((refresh, _)) = self.refreshing.take() {
            refresh.abort();
        }
        let version = replica.state().engine().labels().version();
        let (texts, material, encoder) = pass_inputs(replica);
        tracing::debug!(pooled = texts.len(), "community pass started");
        let pass = discovery_pass::run(texts, material, encoder, settings.clone());
        self.running = Some((tokio::spawn(pass), version));
    }

    /// On the tick: the finished pass's report, counted and logged, and the next pass if one
    /// is due; the pool's size.
    pub fn collect(&mut self, replica: &mut Replica, stats: &Stats) {
        let pool = replica.state().pool();
        stats.emit(PoolMeasured {
            texts: pool.len(),
            bytes: pool.approximate_bytes(),
        });
        self.finish(stats);
        let version = replica.state().engine().labels().version();
        if self
            .holding
            .as_ref()
            .is_some_and(|(_, read)| *read != version)
        {
            self.holding = None;
        }
        // Also a pass made due while catching up (startup, the tick's sync).
        self.start_if_due(replica);
    }

    /// Count and log the pass if it has finished, and keep what it (or a refresh) says is
    /// open, with the label version it started at.
    fn finish(&mut self, stats: &Stats) {
        if let Some((refreshed, version)) = self
            .refreshing
            .as_mut()
            .and_then(|(r, version)| Some((r.now_or_never()?, *version)))
        {
            self.refreshing = None;
            match refreshed {
                Ok(Ok(holding)) => self.holding = Some((holding, version)),
                // Only what texts are held for is lost; the next pass reads it again.
                Ok(Err(error)) => tracing::warn!(%error, "reading the open proposals failed"),
                Err(error) => tracing::warn!(%error, "reading the open proposals died"),
            }
        }
        let Some((finished, version)) = self
            .running
            .as_mut()
            .and_then(|(pass, version)| Some((pass.now_or_never()?, *version)))
        else {
            return;
        };
        self.running = None;
        match finished {
            Ok(Ok((report, holding))) => {
                stats.emit(CommunityPassFinished { report: &report });
                self.holding = Some((holding, version));
            }
            Ok(Err(error)) => stats.emit(CommunityPassFailed { error: &error }),
            Err(error) => stats.emit(CommunityPassDied { error: &error }),
        }
    }

    /// At shutdown: a finished pass is reported; one still running is dropped (the next one,
    /// here or elsewhere, redoes it; publishing is idempotent).
    pub fn abort(&mut self, stats: &Stats) {
        self.finish(stats);
        if let Some((pass, _)) = self.running.take() {
            pass.abort();
        }
        if let Some((refresh, _)) = self.refreshing.take() {
            refresh.abort();
        }
    }
}

/// What a pass (or a refresh) reads: a copy of the pool, the active labels' own material, and
/// the encoder queries go through (the pooled texts are encoded in the task, off the loop).
fn pass_inputs(
    replica: &Replica,
) -> (
    Vec<crate::discovery::PooledText>,
    crate::engine::LabelMaterial,
    Option<std::sync::Arc<dyn crate::engine::embedding::TextEncoder>>,
) {
    let texts: Vec<_> = replica.state().pool().texts().iter().cloned().collect();
    let engine = replica.state().engine();
    let material = engine
        .retriever()
        .label_material(texts.iter().map(|text| &text.terms));
    (texts, material, engine.analyzer().query_encoder())
}
