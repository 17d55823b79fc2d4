//! A queue that can add an item later: client-go's `TypedDelayingInterface`
//! (util/workqueue/delaying_queue.go).
//!
//! Controllers need "try again in 30 s" (a periodic status refresh, a backoff after
//! an error). [`DelayingQueue::add_after`] parks the item in a waiting set ordered by
//! ready time; a single background task sleeps until the earliest ready time, moves
//! every item that is due into the [`Queue`], and sleeps again. There is one task per
//! queue, never one per item, and no polling: the task sleeps on a timer for the head
//! of the waiting set and is woken only when an earlier item arrives or the queue
//! stops.
//!
//! Waiting is not queueing: the item becomes dirty only when its time comes, and the
//! plain [`Queue`] rules (deduplication, one worker at a time) apply from then on. An
//! item waiting twice keeps the **earlier** ready time, like client-go, and the
//! **higher** [priority](crate::priority), like controller-runtime; it is added at
//! that priority when due. Items due at the same time are added in the order they
//! were parked, so within a priority they line up by when they became ready.
//!
//! Unlike client-go, which hands new entries to its loop over a channel, `add_after`
//! inserts into the waiting set directly under a short lock, so it never blocks on the
//! loop, and wakes the loop only when the new item is the first one due. The set
//! stores each item once and orders them with a binary heap (see the `waiting`
//! module for why a heap).

use std::borrow::Cow;
use std::fmt;
use std::hash::BuildHasher;
use std::pin::pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::forward::forward_queue_methods;
use crate::into_item::IntoItem;
use crate::metrics::CounterMetric;
use crate::queue::{Item, Queue, QueueConfig, Shared};
use crate::spin_lock::Mutex;
use crate::waiting::Waiting;

/// About 30 years: what a delay too large to represent is clamped to.
const FAR_FUTURE: Duration = Duration::from_secs(86400 * 365 * 30);

struct DelayShared<T> {
    waiting: Mutex<Waiting<T>>,
    /// Wakes the timer task when a new earliest item arrives.
    new_head: Notify,
    /// client-go's retry metric (`workqueue_retries_total`), if metrics are on.
    retries: Option<Arc<dyn CounterMetric>>,
}

/// A [`Queue`] plus [`add_after`](Self::add_after): client-go's delaying queue.
///
/// Has every method of the plain [`Queue`] (`add`, `get`, `done`, `shut_down`, ...,
/// forwarded to it); shutting the queue down also stops the timer task, and so does
/// dropping the last handle.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use workqueue::DelayingQueue;
///
/// let queue = DelayingQueue::new();
/// queue.add_after("default/vm-1", Duration::from_secs(30));
/// assert_eq!(queue.len(), 0); // waiting, not queued
/// let item = queue.get().await.unwrap(); // paused time jumps 30 s ahead
/// assert_eq!(*item, "default/vm-1");
/// # }
/// ```
pub struct DelayingQueue<T: Item> {
    queue: Queue<T>,
    delay: Arc<DelayShared<T>>,
}

impl<T: Item> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            delay: Arc::clone(&self.delay),
        }
    }
}

impl<T: Item> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &self.waiting_len())
            .finish()
    }
}

impl<T: Item> DelayingQueue<T> {
    /// A new, unnamed delaying queue: client-go's `NewTypedDelayingQueue`.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime: the timer task is spawned here.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A new delaying queue with a name and metrics provider.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime: the timer task is spawned here.
    pub fn with_config(config: QueueConfig) -> Self {
        let queue = Queue::with_config(config);
        let retries = queue
            .shared
            .metrics_provider
            .as_ref()
            .map(|p| p.new_retries_metric(&queue.shared.name));
        let delay = Arc::new(DelayShared {
            waiting: Mutex::new(Waiting::new()),
            new_head: Notify::new(),
            retries,
        });
        tokio::spawn(waiting_loop(
            queue.downgrade(),
            Arc::clone(&queue.shared.stopped),
            Arc::clone(&delay),
        ));
        Self { queue, delay }
    }

    /// Adds `item` once `delay` has passed: client-go's `AddAfter`.
    ///
    /// A zero delay adds at once. Ignored after shutdown. If the item is already
    /// waiting, it keeps whichever ready time is earlier. Counts a retry in the
    /// `workqueue_retries_total` metric, like client-go. Adds at priority
    /// [`DEFAULT`](crate::priority::DEFAULT), unless the item is already waiting with
    /// a higher one (given by [`RateLimitingQueue::add_with_opts`](crate::RateLimitingQueue::add_with_opts)).
    ///
    /// Takes the item by value or by reference ([`IntoItem`]): by reference, it is
    /// cloned only if it is stored (not already waiting with an earlier or equal
    /// ready time).
    pub fn add_after(&self, item: impl IntoItem<T>, delay: Duration) {
        self.add_after_at(item.into_item(), delay, crate::priority::DEFAULT);
    }

    /// `add_after` at `priority`: controller-runtime's
    /// `AddWithOpts(AddOpts{After: delay, Priority: &priority}, item)`, for
    /// [`RateLimitingQueue::add_with_opts`](crate::RateLimitingQueue::add_with_opts).
    ///
    /// An item already waiting keeps the earlier ready time and the higher priority,
    /// and is added at that priority when due.
    pub(crate) fn add_after_at(&self, item: Cow<'_, T>, delay: Duration, priority: i32) {
        if self.queue.shutting_down() {
            return;
        }
        if let Some(retries) = &self.delay.retries {
            retries.inc();
        }
        let hash = self.queue.shared.hasher.hash_one(&*item);
        if delay.is_zero() {
            self.queue.add_hashed(hash, item, priority);
            return;
        }
        if let Some(observer) = self.queue.shared.observer.get() {
            observer.delayed(&item, delay, priority);
        }
        let now = Instant::now();
        let ready_at = now.checked_add(delay).unwrap_or_else(|| now + FAR_FUTURE);
        let mut w = self.delay.waiting.lock();
        let (is_new_head, unused) = w.insert(hash, item, ready_at, priority);
        drop(w);
        drop(unused);
        if is_new_head {
            self.delay.new_head.notify_one();
        }
    }

    /// The number of items waiting for their ready time (not yet in line).
    pub fn waiting_len(&self) -> usize {
        self.delay.waiting.lock().len()
    }

    /// A handle to the underlying plain [`Queue`].
    pub fn queue(&self) -> &Queue<T> {
        &self.queue
    }

    forward_queue_methods!(queue);
}

/// The one background task: moves due items into the queue, then sleeps until the
/// next one is due, a new earliest item arrives, or the queue stops.
/// client-go's `waitingLoop`.
async fn waiting_loop<T: Item>(
    queue: Weak<Shared<T>>,
    stopped: Arc<Notify>,
    delay: Arc<DelayShared<T>>,
) {
    let mut due = Vec::new();
    loop {
        // Enable both wake-ups before looking, so none can slip past.
        let mut new_head = pin!(delay.new_head.notified());
        new_head.as_mut().enable();
        let mut stop = pin!(stopped.notified());
        stop.as_mut().enable();

        let next_ready = {
            let Some(queue) = Queue::upgrade(&queue) else {
                return; // every handle is gone
            };
            if queue.shutting_down() {
                return;
            }
            let now = Instant::now();
            let next_ready = delay.waiting.lock().pop_due(now, &mut due);
            // Add outside the waiting lock: the two locks are never held together.
            for (hash, item, priority) in due.drain(..) {
                queue.add_hashed(hash, Cow::Owned(item), priority);
            }
            next_ready
        };

        match next_ready {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = &mut new_head => {}
                    _ = &mut stop => {}
                }
            }
            None => {
                tokio::select! {
                    _ = &mut new_head => {}
                    _ = &mut stop => {}
                }
            }
        }
    }
}

impl<T: Item> Default for DelayingQueue<T> {
    /// Same as [`DelayingQueue::new`]; panics outside a Tokio runtime.
    fn default() -> Self {
        Self::new()
    }
}
