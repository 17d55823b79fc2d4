//! Rate limiters: client-go's `TypedRateLimiter` and its implementations
//! (util/workqueue/default_rate_limiters.go).
//!
//! A rate limiter answers one question for the [`RateLimitingQueue`]: *how long
//! should this item wait before it is retried?* Per-item limiters
//! ([`ItemExponentialFailureRateLimiter`], [`ItemFastSlowRateLimiter`]) count each
//! item's failures since its last [`forget`](RateLimiter::forget) and back off that
//! item alone; the overall [`BucketRateLimiter`] caps the retry rate of the whole
//! queue; [`MaxOfRateLimiter`] combines them by taking the longest delay, which is
//! what [`default_controller_rate_limiter`] does.
//!
//! The contract a worker follows (sample-controller's `processNextWorkItem`):
//! on success call `forget(item)` so the next failure starts again from the base
//! delay; on failure call `add_rate_limited(item)`, which asks `when(item)`, and
//! `when` counts a failure.
//!
//! [`RateLimitingQueue`]: crate::RateLimitingQueue

use std::sync::Arc;
use std::time::Duration;

use crate::bucket_rate_limiter::BucketRateLimiter;
use crate::item_map::ItemMap;
use crate::queue::Item;

/// Decides how long an item waits before a retry: client-go's `TypedRateLimiter`.
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now. Per-item limiters count this as a failure.
    fn when(&self, item: &T) -> Duration;
    /// Stops tracking `item`: its next failure starts from scratch. Call it when the
    /// item was processed successfully (or given up on).
    fn forget(&self, item: &T);
    /// How many failures `item` has had since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// Adds one failure for `item` and returns its new count. Clones the item only the
/// first time it fails, so repeated failures do not allocate; hashes it once.
pub(crate) fn count_failure<T: Item>(failures: &ItemMap<T, u32>, item: &T) -> u32 {
    failures.update(item, |count| {
        let count = count.map_or(1, |c| c.saturating_add(1));
        (Some(count), count)
    })
}

/// `base * 2^failures`, capped at `max`, without overflowing for any failure count.
pub(crate) fn exponential_backoff(base: Duration, failures: u32, max: Duration) -> Duration {
    if base.is_zero() {
        return Duration::ZERO;
    }
    if failures >= 128 {
        return max;
    }
    match base.as_nanos().checked_mul(1u128 << failures) {
        Some(nanos) if nanos < max.as_nanos() => {
            // nanos < max.as_nanos() <= u64::MAX secs in nanos, so this fits.
            Duration::new(
                (nanos / 1_000_000_000) as u64,
                (nanos % 1_000_000_000) as u32,
            )
        }
        _ => max,
    }
}

/// Per-item exponential backoff: `base * 2^failures`, capped at `max`:
/// client-go's `ItemExponentialFailureRateLimiter`.
///
/// With base 5 ms the delays are 5 ms, 10 ms, 20 ms, 40 ms, ... until the cap.
/// Never overflows, whatever the failure count.
pub struct ItemExponentialFailureRateLimiter<T> {
    base_delay: Duration,
    max_delay: Duration,
    failures: ItemMap<T, u32>,
}

impl<T: Item> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base_delay` and capped at `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        Self {
            base_delay,
            max_delay,
            failures: ItemMap::new(),
        }
    }
}

impl<T: Item> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = count_failure(&self.failures, item) - 1;
        exponential_backoff(self.base_delay, exp, self.max_delay)
    }

    fn forget(&self, item: &T) {
        self.failures.remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item).unwrap_or(0)
    }
}

/// `fast_delay` for the first `max_fast_attempts` failures of an item, then
/// `slow_delay`: client-go's `ItemFastSlowRateLimiter`.
///
/// Good for "retry quickly a few times, then settle into a slow poll".
pub struct ItemFastSlowRateLimiter<T> {
    fast_delay: Duration,
    slow_delay: Duration,
    max_fast_attempts: u32,
    failures: ItemMap<T, u32>,
}

impl<T: Item> ItemFastSlowRateLimiter<T> {
    /// A limiter with the given delays and number of fast attempts.
    pub fn new(fast_delay: Duration, slow_delay: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast_delay,
            slow_delay,
            max_fast_attempts,
            failures: ItemMap::new(),
        }
    }
}

impl<T: Item> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        if count_failure(&self.failures, item) <= self.max_fast_attempts {
            self.fast_delay
        } else {
            self.slow_delay
        }
    }

    fn forget(&self, item: &T) {
        self.failures.remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item).unwrap_or(0)
    }
}

/// Asks every limiter and returns the longest delay: client-go's `MaxOfRateLimiter`.
///
/// Every limiter sees every call (so each keeps its own count); `num_requeues` is the
/// largest count; `forget` forgets in all of them.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps another limiter's delay at `max_delay`: client-go's `WithMaxWaitRateLimiter`.
pub struct WithMaxWaitRateLimiter<T> {
    limiter: Box<dyn RateLimiter<T>>,
    max_delay: Duration,
}

impl<T> WithMaxWaitRateLimiter<T> {
    /// Wraps `limiter`, never returning more than `max_delay`.
    pub fn new(limiter: Box<dyn RateLimiter<T>>, max_delay: Duration) -> Self {
        Self { limiter, max_delay }
    }
}

impl<T> RateLimiter<T> for WithMaxWaitRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_delay)
    }

    fn forget(&self, item: &T) {
        self.limiter.forget(item)
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }
}

/// The limiter controllers use unless they have a reason not to: client-go's
/// `DefaultTypedControllerRateLimiter`.
///
/// The longer of a per-item exponential backoff (5 ms doubling up to 1000 s) and an
/// overall token bucket (10 retries per second, bursts of 100): one failing item
/// backs off on its own, and a storm of failures cannot retry faster than 10/s.
pub fn default_controller_rate_limiter<T: Item>() -> MaxOfRateLimiter<T> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

/// Per-item exponential backoff from 1 ms to 1000 s: client-go's
/// `DefaultItemBasedRateLimiter`.
pub fn default_item_based_rate_limiter<T: Item>() -> ItemExponentialFailureRateLimiter<T> {
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_backoff_values() {
        let max = Duration::from_secs(1000);
        assert_eq!(exponential_backoff(5 * MS, 0, max), 5 * MS);
        assert_eq!(exponential_backoff(5 * MS, 1, max), 10 * MS);
        assert_eq!(exponential_backoff(5 * MS, 17, max), 655_360 * MS);
        assert_eq!(exponential_backoff(5 * MS, 18, max), max, "1310.72 s > cap");
        for failures in [63, 64, 127, 128, u32::MAX] {
            assert_eq!(exponential_backoff(5 * MS, failures, max), max);
        }
        assert_eq!(
            exponential_backoff(Duration::ZERO, 200, max),
            Duration::ZERO
        );
        assert_eq!(exponential_backoff(Duration::ZERO, 5, max), Duration::ZERO);
    }

    #[test]
    fn count_failure_counts_and_saturates() {
        let failures = ItemMap::new();
        assert_eq!(count_failure(&failures, &"a"), 1);
        assert_eq!(count_failure(&failures, &"a"), 2);
        assert_eq!(failures.get(&"b"), None);
        failures.update(&"b", |_| (Some(u32::MAX), ()));
        assert_eq!(count_failure(&failures, &"b"), u32::MAX, "saturates");
    }
}
