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
//! # Four ways to add
//!
//! | Go call                                                  | here                                        |
//! |----------------------------------------------------------|---------------------------------------------|
//! | client-go `Add(item)`                                    | [`add`](RateLimitingQueue::add)             |
//! | client-go `AddAfter(item, d)`                            | [`add_after`](RateLimitingQueue::add_after) |
//! | client-go `AddRateLimited(item)`                         | [`add_rate_limited`](RateLimitingQueue::add_rate_limited) |
//! | controller-runtime `AddWithOpts(AddOpts{After, RateLimited, Priority}, item)` | [`add_with_opts`](RateLimitingQueue::add_with_opts)`(item, AddOpts { after, rate_limited, priority })` ([`AddOpts`]) |
//!
//! The first three are what a learner meets in every client-go controller, and all
//! of them add at the default [priority](crate::priority). Anything more (a
//! priority, a delay and backoff together) is the one options method, as in
//! controller-runtime's priority queue: one call for "add, after a delay and/or with
//! backoff, at this priority", what a reconcile loop needs to requeue a key the way
//! it got it. Every one of them takes the item by value or by reference
//! ([`IntoItem`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::delaying_queue::DelayingQueue;
use crate::forward::forward_queue_methods;
use crate::into_item::IntoItem;
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
    ///
    /// Takes the item by value or by reference ([`IntoItem`]): a worker passes its
    /// [`WorkItem`](crate::WorkItem) (`queue.add_rate_limited(&item)`), which is
    /// cloned only if it is stored, not when it is already waiting to be retried
    /// earlier. Adds at priority [`DEFAULT`](crate::priority::DEFAULT); to requeue
    /// an item at the priority it was handed out with, use
    /// [`add_with_opts`](Self::add_with_opts).
    pub fn add_rate_limited(&self, item: impl IntoItem<T>) {
        let item = item.into_item();
        let delay = self.limiter.when(&item);
        self.queue
            .add_after_at(item, delay, crate::priority::DEFAULT);
    }

    /// Adds `item` as `opts` say: controller-runtime's `AddWithOpts`, the one add
    /// method with options.
    ///
    /// client-go's three verbs are the common cases: [`add`](Self::add),
    /// [`add_after`](Self::add_after), [`add_rate_limited`](Self::add_rate_limited).
    /// Everything else (a priority, or a delay and backoff together) goes through
    /// this one method and one [`AddOpts`] struct, as in controller-runtime, rather
    /// than through a method per combination: the options can be combined freely,
    /// and a struct literal names each one at the call site.
    ///
    /// The delay is [`opts.after`](AddOpts::after), or with
    /// [`opts.rate_limited`](AddOpts::rate_limited) the rate limiter's delay if that
    /// is shorter (or `after` is zero); the item is added at
    /// [`opts.priority`](AddOpts::priority) once it has passed. A zero delay without
    /// `rate_limited` is a plain add at that priority (no retry counted); anything
    /// else goes through the delaying queue, as [`add_after`](Self::add_after) does
    /// (a retry counted). With `AddOpts::default()` it is [`add`](Self::add).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use workqueue::{AddOpts, RateLimitingQueue, priority};
    ///
    /// let queue = RateLimitingQueue::with_default_rate_limiter("example");
    /// // A requeue after 30 s, at low priority (e.g. a periodic refresh).
    /// let opts = AddOpts { after: Duration::from_secs(30), priority: priority::LOW, ..AddOpts::default() };
    /// queue.add_with_opts("default/foo".to_string(), opts);
    /// assert_eq!(queue.waiting_len(), 1);
    /// let item = queue.get().await.unwrap();
    /// assert_eq!(item.priority(), priority::LOW);
    /// // Processing failed: retry with backoff, at the priority the item had.
    /// queue.add_with_opts(&item, AddOpts { rate_limited: true, priority: item.priority(), ..AddOpts::default() });
    /// # }
    /// ```
    pub fn add_with_opts(&self, item: impl IntoItem<T>, opts: AddOpts) {
        let item = item.into_item();
        let mut delay = opts.after;
        if opts.rate_limited {
            let backoff = self.limiter.when(&item);
            if delay.is_zero() || backoff < delay {
                delay = backoff;
            }
        } else if delay.is_zero() {
            self.queue.queue().add_at(item, opts.priority);
            return;
        }
        self.queue.add_after_at(item, delay, opts.priority);
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

    /// Adds `item` once `delay` has passed (by value or by reference): client-go's
    /// `AddAfter`, see [`DelayingQueue::add_after`].
    #[inline]
    pub fn add_after(&self, item: impl IntoItem<T>, delay: Duration) {
        self.queue.add_after(item, delay)
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
/// `priorityqueue.AddOpts`. The default is a plain add at priority 0; set only the
/// fields you need (`AddOpts { priority: priority::LOW, ..AddOpts::default() }`).
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
