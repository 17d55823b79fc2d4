//! A limiter that does not escalate while a backoff is still pending. Not in
//! client-go: it addresses a known open client-go problem (kubernetes/kubernetes
//! issue 132805).
//!
//! # The problem
//!
//! client-go's per-item limiters count a failure on *every* `when` call. If an item is
//! rate-limited again while its earlier backoff is still running (several event
//! handlers call `add_rate_limited` for the same key, or a worker requeues a key that
//! an event already re-added), each extra call doubles the delay although nothing was
//! retried. Ten re-triggers inside one 5 ms backoff turn the next delay into
//! 5 ms x 2^10 = 5 s; a busy object can be pushed to the 1000 s cap within seconds,
//! "super-exponentially" in the number of real attempts.
//!
//! # The fix
//!
//! [`CoalescingRateLimiter`] wraps any limiter and remembers, per item, when its
//! current backoff ends. A `when` call before that moment is *coalesced* into the
//! pending backoff: it returns the time that is left and does not consult (and so
//! does not escalate) the inner limiter. Only a call after the backoff has run out
//! counts as a new failure. The delaying queue keeps an item's earlier ready time, so
//! the coalesced answer never moves the pending retry.
//!
//! # When to use it
//!
//! Opt in when the same key can be rate-limited from more than one place, or when
//! events for a failing object keep arriving while it backs off (status-heavy
//! objects, fan-in controllers). Keep the plain client-go behaviour when you port a Go
//! controller and need identical timings, or when every `add_rate_limited` really is
//! one failed attempt (the sample-controller pattern).

use std::time::Duration;

use tokio::time::Instant;

use crate::item_map::ItemMap;
use crate::queue::Item;
use crate::rate_limiter::RateLimiter;

/// Wraps a limiter so that re-triggers during a pending backoff do not count as
/// failures. See the [module docs](self) for why and when.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use workqueue::{CoalescingRateLimiter, ItemExponentialFailureRateLimiter, RateLimiter};
///
/// let limiter = CoalescingRateLimiter::new(ItemExponentialFailureRateLimiter::new(
///     Duration::from_millis(5),
///     Duration::from_secs(1000),
/// ));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// // Re-triggered 1 ms later: the pending backoff is reused, not doubled.
/// tokio::time::advance(Duration::from_millis(1)).await;
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(4));
/// assert_eq!(limiter.num_requeues(&"a"), 1);
/// // After the backoff ran out, the next call is a real new failure.
/// tokio::time::advance(Duration::from_millis(4)).await;
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// # }
/// ```
pub struct CoalescingRateLimiter<T, L> {
    inner: L,
    /// When each item's current backoff ends.
    pending_until: ItemMap<T, Instant>,
}

impl<T: Item, L: RateLimiter<T>> CoalescingRateLimiter<T, L> {
    /// Wraps `inner`.
    pub fn new(inner: L) -> Self {
        Self {
            inner,
            pending_until: ItemMap::new(),
        }
    }

    /// The wrapped limiter.
    pub fn inner(&self) -> &L {
        &self.inner
    }
}

impl<T: Item, L: RateLimiter<T>> RateLimiter<T> for CoalescingRateLimiter<T, L> {
    fn when(&self, item: &T) -> Duration {
        let now = Instant::now();
        // The inner limiter is asked under the map's lock, so two concurrent calls
        // for one item cannot both count a failure.
        self.pending_until.update(item, |until| match until {
            Some(until) if until > now => (Some(until), until - now),
            _ => {
                let delay = self.inner.when(item);
                // A "never" (Duration::MAX) cannot be represented as an instant;
                // such an item is not coalesced, which only means the inner limiter
                // decides again.
                (now.checked_add(delay), delay)
            }
        })
    }

    fn forget(&self, item: &T) {
        self.pending_until.remove(item);
        self.inner.forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.inner.num_requeues(item)
    }
}
