//! How the loop treats staleness, fairness and backoff: three choices where the
//! textbook client-go loop misbehaves at scale, each with the fix on by default and a
//! switch back to client-go's exact behaviour.
//!
//! | choice | default | client-go's behaviour (the switch) |
//! |---|---|---|
//! | staleness guard | a key is synced again only once the informers have seen its last write (parked meanwhile, requeued with backoff after 2 s), see [`crate::freshness`] | acts on whatever the cache holds (`--freshness-timeout 0`) |
//! | queue order | a priority queue: initial-list and resync events go behind real changes (controller-runtime v0.23's default) | one FIFO (`--fifo-queue`) |
//! | backoff | re-triggers during a pending backoff do not escalate it ([`CoalescingRateLimiter`], kubernetes/kubernetes issue 132805) | every `add_rate_limited` doubles the delay (`--client-go-backoff`) |
//!
//! One more applies only to a replica of a shard group ([`LoopOptions::in_shard_group`]):
//! a failed key is retried within [`SHARD_GROUP_MAX_RETRY_DELAY`] (client-go's
//! `WithMaxWaitRateLimiter` around the limiter), not after up to 1,000 s. Unsharded, the
//! event that ends a failure usually wakes the key: the garbage collector deleting the
//! Deployment of a deleted Foo that blocked a new Foo of the same name is seen by the
//! Deployment informer, which queues the new Foo by its owner's name. In a shard group
//! that Deployment follows its *old* owner's hash: its deletion reaches the replica that
//! held the old Foo, and the new Foo's replica, which only saw "409 AlreadyExists" for an
//! object it does not cache, learns that the name is free only by trying again
//! (docs/reliability.md, what the soak found, 10). So the retry itself must come soon.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use controller::{Backoff, LoopOptions};
//!
//! let options = LoopOptions::default();
//! assert_eq!(options.backoff, Backoff::Coalescing);
//! let queue = options.new_queue("my-controller"); // priorities on, coalescing limiter
//! assert!(options.freshness().is_some());
//!
//! let exact = LoopOptions::client_go();
//! assert!(exact.freshness().is_none());
//! # drop((queue, exact.new_queue("go")));
//! # }
//! ```

use std::time::Duration;

use workqueue::{
    CoalescingRateLimiter, QueueConfig, RateLimiter, RateLimitingQueue, WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
};

use crate::freshness::{DEFAULT_FRESHNESS_TIMEOUT, Freshness};

/// Which backoff a failed key gets (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backoff {
    /// client-go's default controller limiter (per-key 5 ms doubling to 1000 s, and a
    /// 10 qps / 100 burst bucket over all keys), wrapped in a
    /// [`CoalescingRateLimiter`]: a key rate-limited again while its backoff is still
    /// pending gets the time that is left, not a doubled delay.
    #[default]
    Coalescing,
    /// client-go's default controller limiter as it is: every call counts as a
    /// failure, even during a pending backoff (kubernetes/kubernetes issue 132805).
    ClientGo,
}

/// The loop's choices (see the [module docs](self)); the binaries fill it from
/// `manager::RunArgs` (`--freshness-timeout`, `--fifo-queue`, `--client-go-backoff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopOptions {
    /// How long a parked key waits for the informers to catch up with its last write
    /// before it is requeued with backoff; zero turns the guard off.
    pub freshness_timeout: Duration,
    /// Whether the queue orders by priority (`true`) or is client-go's plain FIFO.
    pub priority_queue: bool,
    /// The backoff for failed keys.
    pub backoff: Backoff,
    /// The longest a failed key waits for its retry; `None`: the limiter's own cap
    /// (1,000 s). Set by [`in_shard_group`](Self::in_shard_group).
    pub max_retry_delay: Option<Duration>,
    /// A sync running longer is cancelled and its key retried with backoff
    /// (controller-runtime's `ReconciliationTimeout`, `--reconcile-timeout`; see
    /// [`Controller::with_reconcile_timeout`](crate::Controller::with_reconcile_timeout)).
    /// `None`, the default: no limit, as in client-go and controller-runtime.
    pub reconcile_timeout: Option<Duration>,
}

/// The longest a failed key of a shard group's replica waits for its retry (see the
/// [module docs](self) for why): a name freed by the garbage collector is used within
/// this time, and a key failing forever costs one try per 30 s, far from a hot loop.
pub const SHARD_GROUP_MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

impl Default for LoopOptions {
    /// Every fix on: guard with [`DEFAULT_FRESHNESS_TIMEOUT`], priority queue,
    /// coalescing backoff.
    fn default() -> Self {
        Self {
            freshness_timeout: DEFAULT_FRESHNESS_TIMEOUT,
            priority_queue: true,
            backoff: Backoff::Coalescing,
            max_retry_delay: None,
            reconcile_timeout: None,
        }
    }
}

impl LoopOptions {
    /// client-go's exact behaviour: no guard, one FIFO, escalating backoff.
    pub fn client_go() -> Self {
        Self {
            freshness_timeout: Duration::ZERO,
            priority_queue: false,
            backoff: Backoff::ClientGo,
            max_retry_delay: None,
            reconcile_timeout: None,
        }
    }

    /// These options for a replica of a shard group when `sharded` (a controller with
    /// a shard): failed keys are retried within [`SHARD_GROUP_MAX_RETRY_DELAY`] unless
    /// a cap is set already. Unchanged when not `sharded`.
    ///
    /// ```
    /// use controller::{LoopOptions, SHARD_GROUP_MAX_RETRY_DELAY};
    ///
    /// let sharded = LoopOptions::default().in_shard_group(true);
    /// assert_eq!(sharded.max_retry_delay, Some(SHARD_GROUP_MAX_RETRY_DELAY));
    /// assert_eq!(LoopOptions::default().in_shard_group(false), LoopOptions::default());
    /// ```
    pub fn in_shard_group(mut self, sharded: bool) -> Self {
        if sharded && self.max_retry_delay.is_none() {
            self.max_retry_delay = Some(SHARD_GROUP_MAX_RETRY_DELAY);
        }
        self
    }

    /// The rate limiter for [`backoff`](Self::backoff), capped at
    /// [`max_retry_delay`](Self::max_retry_delay). The cap sits inside the coalescing
    /// wrapper, so the backoff it remembers as pending is the capped one.
    pub fn rate_limiter(&self) -> Box<dyn RateLimiter<String>> {
        let limiter: Box<dyn RateLimiter<String>> = Box::new(default_controller_rate_limiter());
        let limiter = match self.max_retry_delay {
            Some(max) => Box::new(WithMaxWaitRateLimiter::new(limiter, max)),
            None => limiter,
        };
        match self.backoff {
            Backoff::Coalescing => Box::new(CoalescingRateLimiter::new(limiter)),
            Backoff::ClientGo => limiter,
        }
    }

    /// A queue named `name` (its metrics carry the name) with these options' order
    /// and backoff.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime (the delaying queue spawns its timer).
    pub fn new_queue(&self, name: &str) -> RateLimitingQueue<String> {
        let config = QueueConfig::named(name).with_fifo(!self.priority_queue);
        RateLimitingQueue::with_config(self.rate_limiter(), config)
    }

    /// A staleness guard with these options' bound, or `None` when it is off. Track
    /// the controller's informers on it ([`Freshness::track`]).
    pub fn freshness(&self) -> Option<Freshness> {
        (!self.freshness_timeout.is_zero()).then(|| Freshness::new(self.freshness_timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_default_backoff_does_not_escalate_on_re_triggers_and_client_go_does() {
        let key = "default/failing".to_string();
        let ms = Duration::from_millis;

        let coalescing = LoopOptions::default().rate_limiter();
        assert_eq!(coalescing.when(&key), ms(5));
        // Re-triggered twice while the 5 ms backoff is pending: the time left, no new failure.
        tokio::time::advance(ms(2)).await;
        assert_eq!(coalescing.when(&key), ms(3));
        assert_eq!(coalescing.when(&key), ms(3));
        assert_eq!(coalescing.num_requeues(&key), 1);
        // After it ran out, a failure counts again.
        tokio::time::advance(ms(3)).await;
        assert_eq!(coalescing.when(&key), ms(10));

        let client_go = LoopOptions::client_go().rate_limiter();
        assert_eq!(client_go.when(&key), ms(5));
        assert_eq!(client_go.when(&key), ms(10));
        assert_eq!(client_go.when(&key), ms(20));
        assert_eq!(client_go.num_requeues(&key), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn in_a_shard_group_a_failing_key_is_retried_within_the_cap() {
        let key = "default/blocked".to_string();
        for options in [LoopOptions::default(), LoopOptions::client_go()] {
            let unsharded = options.rate_limiter();
            let sharded = options.in_shard_group(true).rate_limiter();
            let (mut longest_unsharded, mut longest_sharded) = (Duration::ZERO, Duration::ZERO);
            // 20 failures in a row, each after the previous backoff ran out.
            for _ in 0..20 {
                let (a, b) = (unsharded.when(&key), sharded.when(&key));
                longest_unsharded = longest_unsharded.max(a);
                longest_sharded = longest_sharded.max(b);
                tokio::time::advance(a.max(b)).await;
            }
            assert_eq!(longest_sharded, SHARD_GROUP_MAX_RETRY_DELAY, "{options:?}");
            // 5 ms * 2^19 is 43 minutes: client-go's own cap of 1,000 s applies.
            assert_eq!(longest_unsharded, Duration::from_secs(1000), "{options:?}");
            // The count of failures goes on (the metrics and logs report it).
            assert_eq!(sharded.num_requeues(&key), 20, "{options:?}");
        }
    }
}
