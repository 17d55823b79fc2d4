//! The overall token bucket: client-go's `TypedBucketRateLimiter`, which wraps
//! `golang.org/x/time/rate.Limiter` and returns `Reserve().Delay()`.
//!
//! A bucket holds up to `burst` tokens and refills at `qps` tokens per second; it
//! starts full. Each [`when`](RateLimiter::when) takes one token. When the bucket is
//! empty the token is *borrowed from the future*: the count goes negative and the
//! caller is told to wait until the refill covers it. So a burst beyond the bucket is
//! spread out evenly instead of being refused: with 10 qps and burst 100, the first
//! 100 immediate calls wait 0, the 101st waits 100 ms, the 102nd 200 ms, and so on.
//! That reservation semantics is what x/time/rate does and what client-go
//! controllers rely on.
//!
//! Why not `governor`? Governor's GCRA answers "allowed now, or not until T" without
//! consuming anything when the answer is no; it has no notion of reserving a future
//! slot, so a burst would get the *same* delay for every caller instead of
//! increasing ones. A dozen lines of arithmetic reproduce x/time/rate exactly, and
//! reading [`tokio::time::Instant`] keeps the limiter testable with paused time.

use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::rate_limiter::RateLimiter;

/// A token bucket shared by all items: client-go's `BucketRateLimiter`.
///
/// Per-item methods are no-ops: `forget` does nothing and `num_requeues` is 0,
/// exactly as in client-go.
#[derive(Debug)]
pub struct BucketRateLimiter {
    /// Tokens added per second (x/time/rate's `Limit`).
    qps: f64,
    /// Bucket size.
    burst: u32,
    state: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    /// Tokens available; negative when future tokens have been reserved.
    tokens: f64,
    /// When `tokens` was last brought up to date; `None` before the first call
    /// (the bucket is then full).
    last: Option<Instant>,
}

impl BucketRateLimiter {
    /// A bucket refilling at `qps` tokens per second, holding at most `burst`.
    ///
    /// `qps` may be `f64::INFINITY` (never waits). A `burst` of 0 can never grant a
    /// token, so every call answers [`Duration::MAX`] ("never"), like x/time/rate's
    /// `InfDuration`; so does a `qps` of 0 (or less) once the bucket is empty.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            state: Mutex::new(Bucket {
                tokens: 0.0,
                last: None,
            }),
        }
    }

    /// Reserves one token and returns how long to wait until it may be used:
    /// x/time/rate's `Reserve().Delay()`.
    pub fn reserve(&self) -> Duration {
        if self.qps == f64::INFINITY {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let mut bucket = self.state.lock();
        let burst = f64::from(self.burst);
        // Advance: refill for the time since `last`, never above the burst.
        let tokens = match bucket.last {
            None => burst,
            Some(last) => {
                let elapsed = now.saturating_duration_since(last);
                (bucket.tokens + self.tokens_from_duration(elapsed)).min(burst)
            }
        };
        let tokens = tokens - 1.0;
        let wait = if tokens < 0.0 {
            self.duration_from_tokens(-tokens)
        } else {
            Duration::ZERO
        };
        if self.burst < 1 || wait == Duration::MAX {
            // Not granted: nothing is consumed, the caller is told "never".
            return Duration::MAX;
        }
        bucket.tokens = tokens;
        bucket.last = Some(now);
        wait
    }

    fn tokens_from_duration(&self, d: Duration) -> f64 {
        if self.qps <= 0.0 {
            0.0
        } else {
            d.as_secs_f64() * self.qps
        }
    }

    fn duration_from_tokens(&self, tokens: f64) -> Duration {
        if self.qps <= 0.0 {
            return Duration::MAX;
        }
        let nanos = (tokens / self.qps) * 1e9;
        if nanos >= u64::MAX as f64 {
            return Duration::MAX;
        }
        // Truncation to whole nanoseconds, as Go's time.Duration(float) does.
        Duration::from_nanos(nanos as u64)
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}
