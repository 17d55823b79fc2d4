//! A delaying queue with per-item retry backoff: client-go's
//! `TypedRateLimitingInterface` (util/workqueue/rate_limiting_queue.go).
//!
//! This is the queue a controller uses. Event handlers call `add(key)`; a worker that
//! fails to process a key calls [`add_rate_limited`](RateLimitingQueue::add_rate_limited),
//! which asks the [`RateLimiter`] how long the key should wait and parks it with
//! [`add_after`](crate::DelayingQueue::add_after); a worker that succeeds calls
//! [`forget`](RateLimitingQueue::forget) so the key's next failure starts from the
//! base delay again. Forgetting only resets the backoff: the worker must still call
//! `done` (or drop its [`WorkItem`](crate::WorkItem)).
//!
//! With [priorities](crate::priority), [`AddOpts`] and
//! [`add_with_opts`](RateLimitingQueue::add_with_opts) are controller-runtime's
//! `AddWithOpts`: one call for "add, after a delay and/or with backoff, at this
//! priority", what a reconcile loop needs to requeue a key the way it got it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::delaying_queue::DelayingQueue;
use crate::forward::forward_queue_methods;
use crate::queue::{Item, QueueConfig};
use crate::rate_limiter::{RateLimiter, default_controller_rate_limiter};

/// A [`DelayingQueue`] plus a [`RateLimiter`]: client-go's rate-limiting queue.
///
/// Has every method of the [`DelayingQueue`] and the plain [`Queue`](crate::Queue)
/// (`add`, `get`, `done`, `add_after`, `shut_down`, ..., forwarded to them). See the
/// [crate docs](crate) for the worker loop.
pub struct RateLimitingQueue<T: Item> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T: Item> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<T: Item> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl<T: Item> RateLimitingQueue<T> {
    /// A new, unnamed queue using `limiter`: client-go's
    /// `NewTypedRateLimitingQueue`.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime (the delaying queue spawns its timer).
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::with_config(limiter, QueueConfig::default())
    }

    /// A new queue using [`default_controller_rate_limiter`], named `name` (so it
    /// reports metrics when a global provider is set).
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime (the delaying queue spawns its timer).
    pub fn with_default_rate_limiter(name: impl Into<String>) -> Self {
        Self::with_config(default_controller_rate_limiter(), QueueConfig::named(name))
    }

    /// A new queue using `limiter`, with a name and metrics provider: client-go's
    /// `NewTypedRateLimitingQueueWithConfig`.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime (the delaying queue spawns its timer).
    pub fn with_config(limiter: impl RateLimiter<T> + 'static, config: QueueConfig) -> Self {
        Self {
            queue: DelayingQueue::with_config(config),
            limiter: Arc::new(limiter),
        }
    }

    /// Adds `item` after the delay the rate limiter decides: client-go's
    /// `AddRateLimited`. Call it when processing `item` failed.
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// [`add_rate_limited`](Self::add_rate_limited) for an item held by reference
    /// (a worker's [`WorkItem`](crate::WorkItem)): the item is cloned only if it is
    /// stored, not when it is already waiting to be retried earlier.
    pub fn add_rate_limited_ref(&self, item: &T) {
        let delay = self.limiter.when(item);
        self.queue.add_after_ref(item, delay);
    }

    /// [`add_rate_limited`](Self::add_rate_limited) at `priority`: the item waits
    /// out its backoff, then is added at `priority` (or higher, if it is waiting
    /// already with a higher one).
    pub fn add_rate_limited_with_priority(&self, item: T, priority: i32) {
        let delay = self.limiter.when(&item);
        self.queue.add_after_with_priority(item, delay, priority);
    }

    /// [`add_rate_limited_with_priority`](Self::add_rate_limited_with_priority) for
    /// an item held by reference (cloned only if it is stored).
    pub fn add_rate_limited_with_priority_ref(&self, item: &T, priority: i32) {
        let delay = self.limiter.when(item);
        self.queue
            .add_after_with_priority_ref(item, delay, priority);
    }

    /// Adds `item` as `opts` say: controller-runtime's `AddWithOpts`.
    ///
    /// The delay is [`opts.after`](AddOpts::after), or with
    /// [`opts.rate_limited`](AddOpts::rate_limited) the rate limiter's delay if that
    /// is shorter (or `after` is zero); the item is added at
    /// [`opts.priority`](AddOpts::priority) once it has passed. A zero delay without
    /// `rate_limited` is a plain [`add_with_priority`](crate::Queue::add_with_priority)
    /// (no retry counted); anything else goes through
    /// [`add_after_with_priority`](DelayingQueue::add_after_with_priority).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use workqueue::{AddOpts, RateLimitingQueue, priority};
    ///
    /// let queue = RateLimitingQueue::with_default_rate_limiter("example");
    /// let key = "default/foo".to_string();
    /// // A requeue after 30 s, at low priority (e.g. a periodic refresh).
    /// let opts = AddOpts { after: Duration::from_secs(30), priority: priority::LOW, ..AddOpts::default() };
    /// queue.add_with_opts(&key, opts);
    /// assert_eq!(queue.waiting_len(), 1);
    /// let item = queue.get().await.unwrap();
    /// assert_eq!(item.priority(), priority::LOW);
    /// # }
    /// ```
    pub fn add_with_opts(&self, item: &T, opts: AddOpts) {
        let mut delay = opts.after;
        if opts.rate_limited {
            let backoff = self.limiter.when(item);
            if delay.is_zero() || backoff < delay {
                delay = backoff;
            }
        } else if delay.is_zero() {
            self.queue.add_with_priority_ref(item, opts.priority);
            return;
        }
        self.queue
            .add_after_with_priority_ref(item, delay, opts.priority);
    }

    /// Resets `item`'s backoff: client-go's `Forget`. Call it when processing
    /// succeeded (or when giving up on the item). It does not replace `done`.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many times `item` has been rate-limited since it was last forgotten:
    /// client-go's `NumRequeues`. Controllers use it to give up after N retries.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    /// The underlying delaying queue.
    pub fn delaying_queue(&self) -> &DelayingQueue<T> {
        &self.queue
    }

    /// The plain [`Queue`](crate::Queue) underneath both.
    pub fn queue(&self) -> &crate::Queue<T> {
        self.queue.queue()
    }

    /// Adds `item` once `delay` has passed: client-go's `AddAfter`, see
    /// [`DelayingQueue::add_after`].
    #[inline]
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay)
    }

    /// [`add_after`](Self::add_after) for an item held by reference: see
    /// [`DelayingQueue::add_after_ref`].
    #[inline]
    pub fn add_after_ref(&self, item: &T, delay: Duration) {
        self.queue.add_after_ref(item, delay)
    }

    /// [`add_after`](Self::add_after) at `priority`: see
    /// [`DelayingQueue::add_after_with_priority`].
    #[inline]
    pub fn add_after_with_priority(&self, item: T, delay: Duration, priority: i32) {
        self.queue.add_after_with_priority(item, delay, priority)
    }

    /// [`add_after_with_priority`](Self::add_after_with_priority) for an item held by
    /// reference: see [`DelayingQueue::add_after_with_priority_ref`].
    #[inline]
    pub fn add_after_with_priority_ref(&self, item: &T, delay: Duration, priority: i32) {
        self.queue
            .add_after_with_priority_ref(item, delay, priority)
    }

    /// The number of items waiting for their ready time: see
    /// [`DelayingQueue::waiting_len`].
    #[inline]
    pub fn waiting_len(&self) -> usize {
        self.queue.waiting_len()
    }

    forward_queue_methods!(queue);
}

/// How [`RateLimitingQueue::add_with_opts`] adds an item: controller-runtime's
/// `priorityqueue.AddOpts`. The default is a plain add at priority 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddOpts {
    /// Add only once this has passed (`Duration::ZERO`: now). An item already
    /// waiting keeps the earlier of its two ready times.
    pub after: Duration,
    /// Wait at least as long as the rate limiter says (and count a requeue, as
    /// [`add_rate_limited`](RateLimitingQueue::add_rate_limited) does); with a
    /// non-zero `after`, the shorter of the two delays is used, like controller-runtime.
    pub rate_limited: bool,
    /// The item's [priority](crate::priority); higher is handed out first. An item
    /// already dirty or waiting keeps the higher of its two priorities.
    /// controller-runtime's `*int`, where `nil` means 0: here `0` is the default.
    pub priority: i32,
}
