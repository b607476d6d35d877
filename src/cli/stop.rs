//! The signals that stop a command: SIGTERM (Kubernetes, `kill`, a job scheduler) and SIGINT
//! (Ctrl-C) alike, so that whatever stops gorag, it stops the same way (draining and saving).

use std::fmt;

/// Which signal came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
}

impl fmt::Display for StopSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Interrupt => "Ctrl-C (SIGINT)",
            Self::Terminate => "SIGTERM",
        })
    }
}

/// Listen from now on (the handlers are installed when this is called, before the first
/// poll): the returned future resolves at the first SIGTERM or SIGINT. From the call on, the
/// signals no longer end the process by themselves.
pub fn listen() -> impl std::future::Future<Output = StopSignal> + Send {
    #[cfg(unix)]
    let terminate = {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(stream) => Some(stream),
            Err(error) => {
                tracing::warn!(%error, "no SIGTERM handler: only Ctrl-C stops gorag cleanly");
                None
            }
        }
    };
    #[cfg(unix)]
    let interrupt = {
        use tokio::signal::unix::{signal, SignalKind};
        signal(SignalKind::interrupt()).ok()
    };
    async move {
        #[cfg(unix)]
        {
            let (mut terminate, mut interrupt) = (terminate, interrupt);
            tokio::select! {
                Some(()) = recv(&mut terminate) => StopSignal::Terminate,
                Some(()) = recv(&mut interrupt) => StopSignal::Interrupt,
                else => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            StopSignal::Interrupt
        }
    }
}

#[cfg(unix)]
async fn recv(stream: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match stream {
        Some(stream) => stream.recv().await,
        None => None,
    }
}
