//! Budgets per client address: a token bucket each (`rate` a second, at most `burst` saved),
//! so one address cannot take a server's whole attention. The map of addresses is bounded: past
//! [`MOST_ADDRESSES`] the buckets that have refilled (addresses that stopped spending) are
//! forgotten first, and an address that cannot be given a bucket is refused, not tracked.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most addresses tracked at once (each a few dozen bytes).
pub const MOST_ADDRESSES: usize = 65_536;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by address.
#[derive(Debug)]
pub struct Budget {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl Budget {
    /// `rate` tokens a second, at most `burst` saved (a new address starts full).
    pub fn new(rate: f64, burst: f64) -> Self {
        Self {
            rate: rate.max(f64::MIN_POSITIVE),
            burst: burst.max(1.0),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Spend one token of `address`: `Err` with how long until one is there when none is.
    pub fn spend(&self, address: IpAddr, now: Instant) -> Result<(), Duration> {
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !buckets.contains_key(&address) && buckets.len() >= MOST_ADDRESSES {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, bucket| refilled(bucket, now, rate, burst) < burst);
            if buckets.len() >= MOST_ADDRESSES {
                return Err(Duration::from_secs(1));
            }
        }
        let bucket = buckets.entry(address).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        bucket.tokens = refilled(bucket, now, self.rate, self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / self.rate))
        }
    }

    /// Whether `address` has a token now, without spending it.
    pub fn has(&self, address: IpAddr, now: Instant) -> Result<(), Duration> {
        let buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match buckets.get(&address) {
            Some(bucket) => {
                let tokens = refilled(bucket, now, self.rate, self.burst);
                if tokens >= 1.0 {
                    Ok(())
                } else {
                    Err(Duration::from_secs_f64((1.0 - tokens) / self.rate))
                }
            }
            None => Ok(()),
        }
    }
}

fn refilled(bucket: &Bucket, now: Instant, rate: f64, burst: f64) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
    (bucket.tokens + elapsed * rate).min(burst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_spends_its_burst_then_waits_for_the_rate_and_others_are_apart() {
        let budget = Budget::new(2.0, 3.0);
        let start = Instant::now();
        let one: IpAddr = "10.0.0.1".parse().unwrap();
        let two: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert!(budget.spend(one, start).is_ok());
        }
        let wait = budget.spend(one, start).unwrap_err();
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-9, "{wait:?}");
        assert!(budget.has(one, start).is_err());
        assert!(
            budget.spend(two, start).is_ok(),
            "another address has its own"
        );
        let later = start + Duration::from_millis(500);
        assert!(budget.has(one, later).is_ok());
        assert!(budget.spend(one, later).is_ok());
        assert!(budget.spend(one, later).is_err());
        // Saved tokens never pass the burst.
        let much_later = start + Duration::from_secs(3600);
        for _ in 0..3 {
            assert!(budget.spend(one, much_later).is_ok());
        }
        assert!(budget.spend(one, much_later).is_err());
    }
}
