//! `gorag review`: the review desk (docs/design/review-desk.md, docs/guide/review.md). People
//! answer what gorag is unsure of — predictions that need review, a share of decided ones as
//! audits, proposals of new classes — from a web page, while the stream runs.
//!
//! - [`queue`]: what waits, what is answered, who holds what (pure, synchronous);
//! - [`desk`]: the topics' events in, the page's items ([`view`]) and the answers' events out
//!   (pure), its texts and predictions kept in bounded memories;
//! - [`tally`], [`exposition`]: what it counts, and `/metrics`;
//! - [`logins`]: who may log in;
//! - [`feed`] and [`web`]: the async shell (the topics, the page).

pub mod access;
pub mod answer;
mod catalogue;
pub mod desk;
pub mod exposition;
pub mod feed;
pub mod guard;
pub mod item;
pub mod logins;
mod memory;
mod proposals;
pub mod queue;
pub mod session;
pub mod tally;
pub mod undo;
pub mod view;
pub mod web;

use std::future::Future;
use std::sync::Arc;

use crate::broker::commands::{self, CommandConsumer, CommandError, CommandProducer};
use crate::config::ServeConfig;

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(
        "review.tokens_file is not set: the desk shows texts (personal data, perhaps) only to \
         reviewers who log in; give a file of `name:token` lines"
    )]
    NoLogins,
    #[error(transparent)]
    Logins(#[from] logins::LoginsError),
    #[error(transparent)]
    Kafka(#[from] CommandError),
    #[error("the desk's address {listen}: {source}")]
    Listen {
        listen: String,
        source: std::io::Error,
    },
}

/// A desk bound to its address, ready to run.
pub struct Bound {
    listener: tokio::net::TcpListener,
    shared: Arc<web::Shared>,
    consumer: CommandConsumer,
    ends: Vec<commands::PartitionEnd>,
    topics: feed::FeedTopics,
    config: ServeConfig,
}

impl Bound {
    /// Check the logins, reach the broker, bind the address.
    pub async fn new(config: ServeConfig) -> Result<Self, ReviewError> {
        let review = &config.review;
        let path = review.tokens_file.as_ref().ok_or(ReviewError::NoLogins)?;
        let logins = logins::LiveLogins::load(path)?;
        let topics = feed::FeedTopics::from(&config.topics);
        if config.kafka.create_topics {
            commands::ensure_topics(&config.broker()).await?;
        }
        let producer = CommandProducer::new(&config.broker())?;
        let consumer = CommandConsumer::new(&config.broker(), "gorag-review")?;
        let ends = consumer.read_from_start(&topics.names())?;
        let listener = tokio::net::TcpListener::bind(&review.listen)
            .await
            .map_err(|source| ReviewError::Listen {
                listen: review.listen.clone(),
                source,
            })?;
        let settings = desk::DeskSettings {
            audit_share: review.audit_share,
            max_items: review.max_items,
            claim_ms: (review.claim_seconds * 1000.0) as u64,
            max_text_bytes: review.max_text_mb.saturating_mul(1024 * 1024),
            bounds: config.bounds(),
        };
        let outlet = web::Outlet {
            producer,
            labels_topic: topics.labels.clone(),
            proposals_topic: topics.proposals.clone(),
        };
        let mut shared = web::Shared::new(
            desk::Desk::new(settings),
            logins,
            outlet,
            review.secure_cookie,
        );
        shared.client_address_header = review
            .client_address_header
            .as_deref()
            .and_then(|name| axum::http::HeaderName::from_bytes(name.trim().as_bytes()).ok());
        let shared = Arc::new(shared);
        Ok(Self {
            listener,
            shared,
            consumer,
            ends,
            topics,
            config,
        })
    }

    /// The address it listens on (port 0 picks one).
    pub fn address(&self) -> Option<std::net::SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serve the page and read the topics until `stop` resolves (or the broker fails).
    pub async fn run(self, stop: impl Future<Output = ()>) -> Result<(), ReviewError> {
        let limits = self.config.admin.limits();
        let app = web::router(self.shared.clone());
        let gate = Arc::new(guard::DeskGate(self.shared.clone()));
        let server = crate::telemetry::connections::serve_gated(self.listener, app, limits, gate);
        let bounds = self.config.bounds();
        let reader = feed::run(
            self.consumer,
            self.ends,
            self.topics,
            bounds,
            self.shared.clone(),
            stop,
        );
        let shared = self.shared;
        let ended = tokio::select! {
            () = server => Ok(()),
            read = reader => read,
        };
        // Answers still in their undo window are published rather than lost (a restart would
        // offer their items again).
        web::answers::publish_held(shared).await;
        Ok(ended?)
    }
}

#[cfg(test)]
mod desk_tests;
