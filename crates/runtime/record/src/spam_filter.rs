//! The spam filter: client-go's `EventSourceObjectSpamFilter`.
//!
//! Some objects are broken for a long time, and a controller that retries them
//! reports the same problem on every retry. The aggregator and the dedupe logger
//! already keep that to *one Event object*, but each occurrence is still a PATCH
//! on the API server. The spam filter bounds that write rate per object: every
//! (source, involvedObject) pair gets a token bucket that starts full with
//! `burst` tokens (25) and refills at `qps` (1 token per 5 minutes). An event that
//! finds the bucket empty is dropped. The default lets a burst of problems through
//! at once, then at most one update every five minutes "to control the long tail
//! of events for things that are always unhealthy".
//!
//! Buckets live in an [`LruCache`], so the filter's memory is bounded too.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Event;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::lru::LruCache;

/// client-go's `defaultSpamBurst`: 25 events about one object at once.
pub const DEFAULT_SPAM_BURST: u32 = 25;
/// client-go's `defaultSpamQPS`: one more event every 300 seconds.
pub const DEFAULT_SPAM_QPS: f64 = 1.0 / 300.0;

/// A function returning the spam key of an event (client-go's `EventSpamKeyFunc`).
pub type EventSpamKeyFunc = fn(&Event) -> String;

/// A token bucket: client-go's `flowcontrol.NewTokenBucketRateLimiterWithClock`
/// (which is `golang.org/x/time/rate`). Starts full; `try_accept` takes a token
/// if one is there and never waits.
#[derive(Debug, Clone)]
struct TokenBucket {
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn full(burst: u32, now: Instant) -> Self {
        Self {
            tokens: f64::from(burst),
            last: now,
        }
    }

    fn try_accept(&mut self, burst: u32, qps: f64, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * qps).min(f64::from(burst));
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Throttles the events one source reports about one object. See the
/// [module docs](self).
#[derive(Debug)]
pub struct EventSourceObjectSpamFilter {
    cache: LruCache<TokenBucket>,
    burst: u32,
    qps: f64,
    clock: Arc<dyn Clock>,
    spam_key_func: EventSpamKeyFunc,
}

impl EventSourceObjectSpamFilter {
    /// A filter allowing `burst` events per source and object, refilled at `qps`,
    /// remembering at most `lru_cache_size` objects.
    pub fn new(
        lru_cache_size: usize,
        burst: u32,
        qps: f64,
        clock: Arc<dyn Clock>,
        spam_key_func: EventSpamKeyFunc,
    ) -> Self {
        Self {
            cache: LruCache::new(lru_cache_size),
            burst,
            qps: if qps.is_finite() && qps >= 0.0 {
                qps
            } else {
                0.0
            },
            clock,
            spam_key_func,
        }
    }

    /// Whether `event` must be **skipped** (client-go's `Filter`: true = drop).
    pub fn filter(&mut self, event: &Event) -> bool {
        let key = (self.spam_key_func)(event);
        let now = self.clock.now();
        let (burst, qps) = (self.burst, self.qps);
        if let Some(bucket) = self.cache.get_mut(&key) {
            return !bucket.try_accept(burst, qps, now);
        }
        let mut bucket = TokenBucket::full(burst, now);
        let accepted = bucket.try_accept(burst, qps, now);
        self.cache.put(key, bucket);
        !accepted
    }

    /// How many objects the filter currently tracks.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether the filter tracks no object.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}
