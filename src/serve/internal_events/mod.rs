//! The service's internal events (docs/design/architecture.md, "Telemetry's typed events"): one type per
//! happening it reports, whose [`InternalEvent::emit`](crate::telemetry::event::InternalEvent)
//! writes the happening's log line, if it has one, and moves its metrics — the only place
//! either is written. `texts.rs` a text's way, `replica.rs` label events and the state's size,
//! `discovery.rs` the pool and the community passes.
//!
//! Log lines keep the message, level, fields and target they had before they were events, so
//! that a `GORAG_LOG` filter or a log query written for them still finds them.

mod discovery;
mod replica;
mod texts;

pub use discovery::{CommunityPassDied, CommunityPassFailed, CommunityPassFinished, PoolMeasured};
pub use replica::{
    CorrectionApplied, Decided, LabelEventApplied, LabelEventRejected, StateMeasured,
};
pub use texts::{
    ConsumerLag, Hallucinated, HeldForProposal, InFlight, LlmFellBack, LlmRequestTimed,
    PredictionPublished, StageTimed, TextDeadLettered, TextReceived,
};

/// The target of the replica's log lines (where they were written before they were events).
const REPLICA_TARGET: &str = "gorag::serve::replica::report";

/// The target of the community passes' log lines.
const DISCOVERY_TARGET: &str = "gorag::serve::service::discover";
