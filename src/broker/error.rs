//! What a broker said went wrong, in gorag's terms: the kinds the service acts on, and the
//! broker's own words.

use thiserror::Error;

/// The kinds of broker error the service tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerErrorKind {
    /// The topic or partition does not exist.
    UnknownTopic,
    /// The record is larger than the broker (or the producer) takes: it never will be.
    TooLarge,
    /// The producer's local queue is full: try again shortly.
    QueueFull,
    /// A client property is wrong (`kafka.client`).
    ClientConfig,
    /// Anything else (a broker away, a timeout, refused authentication, …).
    Other,
}

/// A broker error: its kind and the client's own message.
#[derive(Debug, Clone, Error)]
#[error("{message}")]
pub struct BrokerError {
    kind: BrokerErrorKind,
    message: String,
}

impl BrokerError {
    pub fn new(kind: BrokerErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> BrokerErrorKind {
        self.kind
    }
}

/// Why a broker client could not be made or used: the seam's own error, which the service
/// turns into its own (`ClientError`) and a command into its message.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("kafka, {0}: {1}")]
    Kafka(&'static str, BrokerError),
    #[error("{0}")]
    Topic(String),
    #[error("starting the texts poll thread: {0}")]
    PollThread(std::io::Error),
    #[error("a broker query on the blocking pool died: {0}")]
    BlockingTask(#[from] tokio::task::JoinError),
}
