//! When and how long to wait before trying an LLM call again, and when to stop: after
//! `max_retries`, or when the call's retry time is spent.

use std::time::Duration;

use rand::Rng;

#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = try once).
    pub max_retries: u32,
    /// First back-off step; doubles every retry.
    pub base_delay: Duration,
    /// Cap on one computed back-off step.
    pub max_delay: Duration,
    /// The time one call may take from its first attempt on, retries and their waits included:
    /// no retry starts whose wait would end past it (a `retry-after` longer than what is left
    /// ends the call at once), and a retry's own timeout is cut to what is left.
    pub budget: Duration,
}

/// Most retries a call may be configured with: with the back-off's 8 s cap, ten retries already
/// wait about 45 s; more only hold a text longer against an endpoint that keeps failing.
pub const MAX_RETRIES: u32 = 10;

/// A call's retry time unless configured otherwise, in seconds: two full attempts at the
/// default 60 s timeout, or many short ones, and any `retry-after` up to two minutes.
pub const DEFAULT_MAX_RETRY_SECS: f64 = 120.0;

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(8),
            budget: Duration::from_secs_f64(DEFAULT_MAX_RETRY_SECS),
        }
    }
}

/// Whether (and after what wait) to retry a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Wait this long, then try again.
    Retry(Duration),
    /// Every retry is used.
    RetriesUsed,
    /// The wait would end past the call's time budget.
    OutOfTime,
}

impl RetryPolicy {
    /// What follows a failed attempt, `retry` retries made so far and `spent` since the first
    /// attempt began.
    pub fn next_step(
        &self,
        retry: u32,
        retry_after: Option<Duration>,
        spent: Duration,
    ) -> NextStep {
        if retry >= self.max_retries {
            return NextStep::RetriesUsed;
        }
        let wait = self.delay(retry, retry_after);
        if spent.saturating_add(wait) >= self.budget {
            return NextStep::OutOfTime;
        }
        NextStep::Retry(wait)
    }

    /// Delay before retry number `retry` (0-based). A server's `retry-after` is honoured (the
    /// budget decides whether it can be); otherwise exponential back-off with "equal jitter":
    /// half the step fixed, half random, so bursts of clients spread out but never retry
    /// immediately.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait;
        }
        let step = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_delay);
        let half = step / 2;
        let jitter_nanos =
            rand::rng().random_range(0..=half.as_nanos().min(u128::from(u64::MAX)) as u64);
        half + Duration::from_nanos(jitter_nanos)
    }
}

/// Parse a `retry-after` header: delay in seconds, or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Some(Duration::from_secs_f64(seconds));
        }
        return None;
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(800),
            budget: Duration::from_secs(60),
        };
        for retry in 0..8 {
            let step = Duration::from_millis(100 * 2u64.pow(retry)).min(Duration::from_millis(800));
            let d = policy.delay(retry, None);
            assert!(
                d >= step / 2 && d <= step,
                "retry {retry}: {d:?} not in [{:?}, {step:?}]",
                step / 2
            );
        }
    }

    #[test]
    fn retry_after_is_honoured_within_the_budget_only() {
        let policy = RetryPolicy::default();
        let two = Duration::from_secs(2);
        assert_eq!(
            policy.next_step(0, Some(two), Duration::ZERO),
            NextStep::Retry(two)
        );
        // Waiting 600 s would end past the 120 s budget: the call ends now instead.
        assert_eq!(
            policy.next_step(0, Some(Duration::from_secs(600)), Duration::ZERO),
            NextStep::OutOfTime
        );
        // So does a short wait once most of the budget is spent.
        assert_eq!(
            policy.next_step(1, Some(two), Duration::from_secs(119)),
            NextStep::OutOfTime
        );
    }

    #[test]
    fn retries_stop_at_the_count_before_the_budget() {
        let policy = RetryPolicy {
            max_retries: 2,
            ..RetryPolicy::default()
        };
        assert!(matches!(
            policy.next_step(1, None, Duration::ZERO),
            NextStep::Retry(_)
        ));
        assert_eq!(
            policy.next_step(2, None, Duration::ZERO),
            NextStep::RetriesUsed
        );
        let budget = RetryPolicy {
            budget: Duration::from_millis(100),
            ..policy
        };
        // The first back-off step waits at least 125 ms: past a 100 ms budget.
        assert_eq!(
            budget.next_step(0, None, Duration::ZERO),
            NextStep::OutOfTime
        );
    }

    #[test]
    fn retry_after_parses_seconds_and_dates() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("soon"), None);
    }
}
