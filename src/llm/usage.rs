//! Running totals of an LLM client and its circuit breaker, shared by its clones (metrics and
//! reports read them).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::breaker::{Breaker, BreakerSettings, BreakerState};

#[derive(Debug)]
pub struct Usage {
    pub calls: AtomicU64,
    pub attempts: AtomicU64,
    pub retries: AtomicU64,
    pub failures: AtomicU64,
    pub cache_hits: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    /// Calls whose response passed `llm.max_response_bytes`.
    pub oversized: AtomicU64,
    /// Calls not sent because the circuit breaker was open (or a probe was out).
    pub breaker_skipped: AtomicU64,
    /// Times the circuit breaker opened.
    pub breaker_openings: AtomicU64,
    pub(super) breaker: Breaker,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UsageSnapshot {
    pub calls: u64,
    pub attempts: u64,
    pub retries: u64,
    pub failures: u64,
    pub cache_hits: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub oversized: u64,
    pub breaker_skipped: u64,
    pub breaker_openings: u64,
    /// The circuit breaker's state when the snapshot was taken.
    pub breaker: BreakerState,
}

impl Usage {
    pub(super) fn new(breaker: BreakerSettings) -> Self {
        let zero = AtomicU64::default;
        Self {
            calls: zero(),
            attempts: zero(),
            retries: zero(),
            failures: zero(),
            cache_hits: zero(),
            prompt_tokens: zero(),
            completion_tokens: zero(),
            oversized: zero(),
            breaker_skipped: zero(),
            breaker_openings: zero(),
            breaker: Breaker::new(breaker),
        }
    }

    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state(Instant::now())
    }

    pub fn snapshot(&self) -> UsageSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        UsageSnapshot {
            calls: get(&self.calls),
            attempts: get(&self.attempts),
            retries: get(&self.retries),
            failures: get(&self.failures),
            cache_hits: get(&self.cache_hits),
            prompt_tokens: get(&self.prompt_tokens),
            completion_tokens: get(&self.completion_tokens),
            oversized: get(&self.oversized),
            breaker_skipped: get(&self.breaker_skipped),
            breaker_openings: get(&self.breaker_openings),
            breaker: self.breaker_state(),
        }
    }

    pub(super) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl UsageSnapshot {
    /// The counts as the metrics take them.
    pub fn counts(&self) -> crate::telemetry::metrics::LlmCounts {
        crate::telemetry::metrics::LlmCounts {
            calls: self.calls,
            retries: self.retries,
            failures: self.failures,
            oversized: self.oversized,
            breaker_skipped: self.breaker_skipped,
            breaker_openings: self.breaker_openings,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            breaker: self.breaker.as_str(),
        }
    }
}
