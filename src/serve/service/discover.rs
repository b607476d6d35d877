//! The loop's side of emerging-class discovery: start a community pass when one of this
//! instance's records made it due (one at a time; a pass due meanwhile waits for the running
//! one), and collect its report on the tick. The pass itself runs as a task
//! (`serve::discovery_pass`), never on the loop.

use futures::FutureExt;
use tokio::task::JoinHandle;

use crate::serve::discovery_pass::{self, PassError, PassReport, PassSettings};
use crate::serve::internal_events::{
    CommunityPassDied, CommunityPassFailed, CommunityPassFinished, PoolMeasured,
};
use crate::serve::replica::Replica;
use crate::serve::stats::Stats;

/// The service's community passes (None settings: discovery is off): how to run one, the one
/// running, and whether another is due.
pub(super) struct Passes {
    settings: Option<PassSettings>,
    running: Option<JoinHandle<Result<PassReport, PassError>>>,
    waiting: bool,
}

impl Passes {
    pub fn new(settings: Option<PassSettings>) -> Self {
        Self {
            settings,
            running: None,
            waiting: false,
        }
    }

    /// After a changelog record: start a pass if it made one due and none is running.
    pub fn start_if_due(&mut self, replica: &mut Replica) {
        if replica.take_pass_due() {
            self.waiting = true;
        }
        let Some(settings) = self.settings.as_ref() else {
            return;
        };
        if !self.waiting || self.running.is_some() {
            return;
        }
        self.waiting = false;
        let texts: Vec<_> = replica.state().pool().texts().iter().cloned().collect();
        tracing::debug!(pooled = texts.len(), "community pass started");
        let material = replica
            .state()
            .engine()
            .retriever()
            .label_material(texts.iter().map(|text| &text.terms));
        // The pooled texts are encoded in the pass, off the loop, by the encoder queries go through.
        let encoder = replica.state().engine().analyzer().query_encoder();
        self.running = Some(tokio::spawn(discovery_pass::run(
            texts,
            material,
            encoder,
            settings.clone(),
        )));
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
        // Also a pass made due while catching up (startup, the tick's sync).
        self.start_if_due(replica);
    }

    /// Count and log the pass if it has finished (true then).
    fn finish(&mut self, stats: &Stats) -> bool {
        let Some(finished) = self.running.as_mut().and_then(|pass| pass.now_or_never()) else {
            return false;
        };
        self.running = None;
        match finished {
            Ok(Ok(report)) => stats.emit(CommunityPassFinished { report: &report }),
            Ok(Err(error)) => stats.emit(CommunityPassFailed { error: &error }),
            Err(error) => stats.emit(CommunityPassDied { error: &error }),
        }
        true
    }

    /// At shutdown: a finished pass is reported; one still running is dropped (the next one,
    /// here or elsewhere, redoes it; publishing is idempotent).
    pub fn abort(&mut self, stats: &Stats) {
        self.finish(stats);
        if let Some(pass) = self.running.take() {
            pass.abort();
        }
    }
}
