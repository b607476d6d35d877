//! Shutdown in two steps (Garage's and mini-redis's pattern): the signal starts the drain, the
//! drain deadline ends it. Both are watched by a task of their own, so the deadline fires even
//! while the loop is inside an await; every await of the loop that could wait on the broker is
//! raced against it ([`Stop::unless_expired`]).

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Running,
    /// The signal came: finish what is in flight, take nothing new.
    Draining,
    /// The drain deadline passed: give up on whatever is still waiting.
    Expired,
}

#[derive(Debug, Clone)]
pub struct Stop {
    phase: watch::Receiver<Phase>,
}

impl Stop {
    /// Watch `shutdown`; `grace` after it resolves, the drain expires.
    pub fn spawn(shutdown: impl Future<Output = ()> + Send + 'static, grace: Duration) -> Self {
        let (set, phase) = watch::channel(Phase::Running);
        tokio::spawn(async move {
            tokio::select! {
                () = shutdown => {}
                // Everyone stopped watching: the service ended on its own.
                () = set.closed() => return,
            }
            let _ = set.send(Phase::Draining);
            tokio::select! {
                () = tokio::time::sleep(grace) => {}
                () = set.closed() => return,
            }
            let _ = set.send(Phase::Expired);
        });
        Self { phase }
    }

    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// The next phase (pending for ever once expired).
    pub async fn changed(&mut self) -> Phase {
        if self.phase.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
        *self.phase.borrow_and_update()
    }

    /// `work`'s result, or None once the drain has begun (optional work a stopping instance
    /// cuts short).
    pub async fn unless_stopping<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        let mut phase = self.phase.clone();
        tokio::select! {
            result = work => Some(result),
            _ = phase.wait_for(|p| *p != Phase::Running) => None,
        }
    }

    /// `work`'s result, or None if the drain deadline passes first.
    pub async fn unless_expired<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        let mut phase = self.phase.clone();
        tokio::select! {
            result = work => Some(result),
            _ = phase.wait_for(|p| *p == Phase::Expired) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_signal_starts_the_drain_and_the_deadline_ends_it() {
        let (signal, shutdown) = tokio::sync::oneshot::channel::<()>();
        let mut stop = Stop::spawn(
            async move {
                let _ = shutdown.await;
            },
            Duration::from_millis(50),
        );
        assert_eq!(stop.phase(), Phase::Running);
        let _ = signal.send(());
        assert_eq!(stop.changed().await, Phase::Draining);
        // Work that finishes in time gives its result.
        assert_eq!(stop.unless_expired(async { 7 }).await, Some(7));
        // Work that never finishes is given up at the deadline.
        let never = std::future::pending::<()>();
        assert_eq!(stop.unless_expired(never).await, None);
        assert_eq!(stop.phase(), Phase::Expired);
    }

    #[tokio::test]
    async fn work_left_to_the_next_start_is_given_up_when_the_drain_begins() {
        let (signal, shutdown) = tokio::sync::oneshot::channel::<()>();
        let stop = Stop::spawn(
            async move {
                let _ = shutdown.await;
            },
            Duration::from_secs(60),
        );
        assert_eq!(stop.unless_stopping(async { 7 }).await, Some(7));
        let waiting = stop.unless_stopping(std::future::pending::<()>());
        let _ = signal.send(());
        assert_eq!(waiting.await, None);
        assert_eq!(stop.phase(), Phase::Draining, "long before the deadline");
    }
}
