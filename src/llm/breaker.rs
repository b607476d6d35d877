//! A circuit breaker in front of the LLM endpoint.
//!
//! After `failures` calls in a row failed because the endpoint was not there for them (timeouts,
//! 5xx, 429 and connection errors, each after its retries), no call is sent for `cooldown`: the
//! texts meanwhile are decided by retrieval at once instead of each waiting out its own timeouts
//! and retries against an endpoint that is down or drowning. Then one call goes through as a
//! probe (half-open): its success closes the breaker, its failure opens it for another cool-down.
//! A success from any call closes it too: the endpoint answered.
//!
//! Small enough to own (no crate's breaker fits a half-open state with exactly one probe and an
//! abandoned probe released on drop without pulling in a tower layer around async-openai's own).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

/// When the breaker opens, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    /// Calls failed in a row that open the breaker (0: it never opens).
    pub failures: u32,
    /// How long it stays open before one probe call is let through.
    pub cooldown: Duration,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self {
            failures: DEFAULT_BREAKER_FAILURES,
            cooldown: Duration::from_secs_f64(DEFAULT_BREAKER_COOLDOWN_SECS),
        }
    }
}

/// Calls failed in a row that open the breaker unless configured otherwise.
pub const DEFAULT_BREAKER_FAILURES: u32 = 5;
/// Seconds it stays open unless configured otherwise.
pub const DEFAULT_BREAKER_COOLDOWN_SECS: f64 = 30.0;

/// The breaker's state as metrics and reports show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls go through.
    #[default]
    Closed,
    /// No call goes through until the cool-down is over.
    Open,
    /// The cool-down is over: the next call is a probe (and, while it runs, the only one).
    HalfOpen,
}

impl BreakerState {
    pub const ALL: [Self; 3] = [Self::Closed, Self::Open, Self::HalfOpen];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
        }
    }
}

/// Why a call was not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "circuit breaker open after {failures} failed LLM calls in a row; the next call goes \
         through in {:.1} s (llm.breaker_failures, llm.breaker_cooldown_secs)",
        remaining.as_secs_f64()
    )]
    Open { failures: u32, remaining: Duration },
    #[error("circuit breaker half-open: a probe call is testing the LLM endpoint")]
    Probing,
}

/// What the breaker says to a call about to be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead.
    Call,
    /// Go ahead as the probe: report the outcome (or drop the call, which frees the probe).
    Probe,
    /// Do not call.
    Refused(Refusal),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed { failed_in_a_row: u32 },
    Open { until: Instant },
    HalfOpen { probing: bool },
}

#[derive(Debug)]
pub struct Breaker {
    settings: BreakerSettings,
    phase: Mutex<Phase>,
}

impl Breaker {
    pub fn new(settings: BreakerSettings) -> Self {
        Self {
            settings,
            phase: Mutex::new(Phase::Closed { failed_in_a_row: 0 }),
        }
    }

    pub fn settings(&self) -> BreakerSettings {
        self.settings
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        // The phase is a plain value, valid after any panic: a poisoned lock is still usable.
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// May a call go now?
    pub fn admit(&self, now: Instant) -> Admission {
        let mut phase = self.phase();
        match *phase {
            Phase::Closed { .. } => Admission::Call,
            Phase::Open { until } if now < until => Admission::Refused(Refusal::Open {
                failures: self.settings.failures,
                remaining: until - now,
            }),
            Phase::Open { .. } | Phase::HalfOpen { probing: false } => {
                *phase = Phase::HalfOpen { probing: true };
                Admission::Probe
            }
            Phase::HalfOpen { probing: true } => Admission::Refused(Refusal::Probing),
        }
    }

    /// A call got an answer from the endpoint: closed, the count of failures reset.
    pub fn succeeded(&self) {
        *self.phase() = Phase::Closed { failed_in_a_row: 0 };
    }

    /// A call failed for want of the endpoint. Returns whether this failure opened the breaker.
    /// A failure in the open state, or in the half-open state from a call older than the
    /// probe, changes nothing: only the probe decides the half-open state.
    pub fn failed(&self, now: Instant, probe: bool) -> bool {
        let mut phase = self.phase();
        let open = Phase::Open {
            until: now + self.settings.cooldown,
        };
        match *phase {
            Phase::Closed { failed_in_a_row } => {
                let failed_in_a_row = failed_in_a_row.saturating_add(1);
                if self.settings.failures > 0 && failed_in_a_row >= self.settings.failures {
                    *phase = open;
                    true
                } else {
                    *phase = Phase::Closed { failed_in_a_row };
                    false
                }
            }
            Phase::HalfOpen { .. } if probe => {
                *phase = open;
                true
            }
            Phase::HalfOpen { .. } | Phase::Open { .. } => false,
        }
    }

    /// The probe ended without telling whether the endpoint answers (it was cancelled, or
    /// failed for a reason of its own): the next call is the probe.
    pub fn probe_abandoned(&self) {
        let mut phase = self.phase();
        if *phase == (Phase::HalfOpen { probing: true }) {
            *phase = Phase::HalfOpen { probing: false };
        }
    }

    /// The state now: open until its cool-down is over, then half-open.
    pub fn state(&self, now: Instant) -> BreakerState {
        match *self.phase() {
            Phase::Closed { .. } => BreakerState::Closed,
            Phase::Open { until } if now < until => BreakerState::Open,
            Phase::Open { .. } | Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_metrics_know_every_breaker_state() {
        let names = BreakerState::ALL.map(BreakerState::as_str);
        assert_eq!(names, crate::telemetry::metrics::BREAKER_STATES);
    }

    use super::*;

    fn breaker(failures: u32) -> Breaker {
        Breaker::new(BreakerSettings {
            failures,
            cooldown: Duration::from_secs(30),
        })
    }

    #[test]
    fn opens_after_the_configured_failures_in_a_row_only() {
        let b = breaker(3);
        let now = Instant::now();
        assert!(!b.failed(now, false));
        assert!(!b.failed(now, false));
        // A success in between starts the count again.
        b.succeeded();
        assert!(!b.failed(now, false));
        assert!(!b.failed(now, false));
        assert_eq!(b.state(now), BreakerState::Closed);
        assert_eq!(b.admit(now), Admission::Call);
        assert!(b.failed(now, false), "the third in a row opens it");
        assert_eq!(b.state(now), BreakerState::Open);
    }

    #[test]
    fn refuses_while_open_saying_how_long_is_left() {
        let b = breaker(1);
        let opened = Instant::now();
        assert!(b.failed(opened, false));
        let later = opened + Duration::from_secs(10);
        match b.admit(later) {
            Admission::Refused(Refusal::Open {
                failures,
                remaining,
            }) => {
                assert_eq!(failures, 1);
                assert_eq!(remaining, Duration::from_secs(20));
            }
            other => panic!("{other:?}"),
        }
        // Failures of calls still out when it opened do not extend the cool-down.
        assert!(!b.failed(later, false));
        assert_eq!(
            b.state(opened + Duration::from_secs(29)),
            BreakerState::Open
        );
    }

    #[test]
    fn after_the_cooldown_one_probe_goes_and_its_success_closes() {
        let b = breaker(2);
        let opened = Instant::now();
        b.failed(opened, false);
        b.failed(opened, false);
        let after = opened + Duration::from_secs(30);
        assert_eq!(b.state(after), BreakerState::HalfOpen);
        assert_eq!(b.admit(after), Admission::Probe);
        assert_eq!(b.admit(after), Admission::Refused(Refusal::Probing));
        // A failure of an older call does not decide the half-open state.
        assert!(!b.failed(after, false));
        assert_eq!(b.admit(after), Admission::Refused(Refusal::Probing));
        b.succeeded();
        assert_eq!(b.state(after), BreakerState::Closed);
        assert_eq!(b.admit(after), Admission::Call);
        // Closed again with a fresh count: one failure does not reopen it.
        assert!(!b.failed(after, false));
    }

    #[test]
    fn a_failed_probe_opens_it_for_another_cooldown() {
        let b = breaker(1);
        let opened = Instant::now();
        b.failed(opened, false);
        let after = opened + Duration::from_secs(31);
        assert_eq!(b.admit(after), Admission::Probe);
        assert!(b.failed(after, true));
        assert_eq!(b.state(after), BreakerState::Open);
        assert_eq!(b.state(after + Duration::from_secs(29)), BreakerState::Open);
        assert_eq!(b.admit(after + Duration::from_secs(30)), Admission::Probe);
    }

    #[test]
    fn an_abandoned_probe_lets_the_next_call_probe() {
        let b = breaker(1);
        let opened = Instant::now();
        b.failed(opened, false);
        let after = opened + Duration::from_secs(30);
        assert_eq!(b.admit(after), Admission::Probe);
        b.probe_abandoned();
        assert_eq!(b.state(after), BreakerState::HalfOpen);
        assert_eq!(b.admit(after), Admission::Probe);
        // Abandoning when no probe is out changes nothing.
        b.succeeded();
        b.probe_abandoned();
        assert_eq!(b.state(after), BreakerState::Closed);
    }

    #[test]
    fn a_success_while_open_closes_it() {
        let b = breaker(1);
        let now = Instant::now();
        b.failed(now, false);
        b.succeeded();
        assert_eq!(b.admit(now), Admission::Call);
    }

    #[test]
    fn zero_failures_means_never_open() {
        let b = breaker(0);
        let now = Instant::now();
        for _ in 0..1000 {
            assert!(!b.failed(now, false));
        }
        assert_eq!(b.admit(now), Admission::Call);
    }

    #[test]
    fn refusals_say_what_to_change() {
        let text = Refusal::Open {
            failures: 5,
            remaining: Duration::from_millis(12_340),
        }
        .to_string();
        assert!(text.contains("5 failed LLM calls in a row"), "{text}");
        assert!(text.contains("12.3 s"), "{text}");
        assert!(text.contains("llm.breaker_cooldown_secs"), "{text}");
    }
}
