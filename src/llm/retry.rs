//! When and how long to wait before trying an LLM call again.

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
    /// Cap on a server-requested `retry-after`; a longer wait is treated as this long.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Delay before retry number `retry` (0-based). A server's `retry-after` is honoured
    /// (capped); otherwise exponential back-off with "equal jitter": half the step fixed, half
    /// random, so bursts of clients spread out but never retry immediately.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_retry_after);
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
            max_retry_after: Duration::from_secs(5),
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
    fn retry_after_is_honoured_up_to_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            policy.delay(3, Some(Duration::from_secs(600))),
            policy.max_retry_after
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
