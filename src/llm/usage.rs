//! Running totals of an LLM client and its circuit breaker, shared by its clones (metrics and
//! reports read them).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::breaker::{Breaker, BreakerSettings, BreakerState};
use crate::telemetry::event::InternalEvent;
use crate::telemetry::metrics::{Instruments, KindLabel, StateLabel, BREAKER_STATES};

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

/// The client's counts sampled (on the service's tick): its counters move by what it counted
/// since the last sample, and the breaker's gauge shows its state. No log line: the client logs
/// its own failures as they happen.
#[derive(Debug, Clone, Copy)]
pub struct UsageSampled(pub UsageSnapshot);

impl InternalEvent for UsageSampled {
    fn emit(self, instruments: &Instruments) {
        let since = instruments.llm_usage_since_last(self.0.counts());
        instruments.llm_calls.inc_by(since.calls);
        instruments.llm_retries.inc_by(since.retries);
        instruments.llm_failures.inc_by(since.failures);
        instruments.llm_oversized.inc_by(since.oversized);
        instruments
            .llm_breaker_skipped
            .inc_by(since.breaker_skipped);
        instruments
            .llm_breaker_openings
            .inc_by(since.breaker_openings);
        for state in BREAKER_STATES {
            instruments
                .llm_breaker_state
                .get_or_create(&StateLabel {
                    state: state.into(),
                })
                .set(i64::from(state == since.breaker));
        }
        for (kind, tokens) in [
            ("prompt", since.prompt_tokens),
            ("completion", since.completion_tokens),
        ] {
            instruments
                .llm_tokens
                .get_or_create(&KindLabel { kind: kind.into() })
                .inc_by(tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::event::sample;
    use crate::telemetry::metrics::Metrics;

    #[test]
    fn a_sample_moves_the_counters_by_the_difference_and_the_breaker_gauge() {
        let metrics = Metrics::new();
        metrics.emit(UsageSampled(UsageSnapshot {
            calls: 4,
            prompt_tokens: 100,
            oversized: 2,
            breaker_skipped: 7,
            breaker_openings: 1,
            breaker: BreakerState::Open,
            ..UsageSnapshot::default()
        }));
        metrics.emit(UsageSampled(UsageSnapshot {
            calls: 5,
            prompt_tokens: 130,
            oversized: 3,
            breaker_skipped: 9,
            breaker_openings: 1,
            breaker: BreakerState::HalfOpen,
            ..UsageSnapshot::default()
        }));
        for (series, value) in [
            ("gorag_llm_calls_total", 5.0),
            ("gorag_llm_tokens_total{kind=\"prompt\"}", 130.0),
            ("gorag_llm_tokens_total{kind=\"completion\"}", 0.0),
            ("gorag_llm_oversized_responses_total", 3.0),
            ("gorag_llm_breaker_skipped_calls_total", 9.0),
            ("gorag_llm_breaker_openings_total", 1.0),
            ("gorag_llm_breaker_state{state=\"half_open\"}", 1.0),
            ("gorag_llm_breaker_state{state=\"open\"}", 0.0),
            ("gorag_llm_breaker_state{state=\"closed\"}", 0.0),
        ] {
            assert_eq!(sample(&metrics, series), Some(value), "{series}");
        }
    }
}
