//! client-go's `util/workqueue` in Rust: the deduplicating, delaying, rate-limited
//! work queue at the heart of every Kubernetes controller.
//!
//! Informer event handlers turn every change into a key (`"namespace/name"`) and
//! [`add`](Queue::add) it; N workers [`get`](Queue::get) keys, reconcile them, and
//! either [`forget`](RateLimitingQueue::forget) them (success) or
//! [`add_rate_limited`](RateLimitingQueue::add_rate_limited) them (failure, retry
//! later with backoff). The queue guarantees that:
//!
//! * a key waiting in line is never queued twice (a burst of 50 events for one
//!   object costs one reconcile);
//! * two workers never hold the same key at once;
//! * a key added while a worker holds it is processed again after that worker is
//!   done, so the last change is never missed.
//!
//! Keys can carry a [priority] (controller-runtime's priority queue), so that
//! the object a user just changed is not stuck behind thousands of keys from a
//! controller's initial list: [`RateLimitingQueue::add_with_opts`] with an
//! [`AddOpts`], [`WorkItem::priority`]. Without them the queue is exactly client-go's.
//!
//! # Adding
//!
//! Each Go add call is one method: client-go's `Add`, `AddAfter` and `AddRateLimited`
//! are [`add`](Queue::add), [`add_after`](DelayingQueue::add_after) and
//! [`add_rate_limited`](RateLimitingQueue::add_rate_limited), and controller-runtime's
//! `AddWithOpts(AddOpts{After, RateLimited, Priority}, item)` is
//! [`add_with_opts`](RateLimitingQueue::add_with_opts)`(item, AddOpts { after,
//! rate_limited, priority })`. There is one options method, not one method per
//! combination of options: see the [`rate_limiting_queue`] module. Every add takes
//! the item by value or by reference ([`IntoItem`]).
//!
//! # Performance notes
//!
//! * [`Queue::get`] returns a [`WorkItem`] that borrows the queue and lends out the
//!   stored item: a `get` + `done` clones nothing. [`Queue::get_owned`] (or
//!   [`WorkItem::into_owned`]) gives an [`OwnedWorkItem`] for a spawned task.
//! * Pass keys you keep by reference (`queue.add(&key)`,
//!   `queue.add_rate_limited(&item)`): the key is cloned only when the queue stores
//!   it, never for a duplicate. A key built for the add is moved in instead.
//! * Each item is hashed once per add + get + done cycle and stored once; the locks
//!   are short spin locks (see the `spin_lock` module) with one atomic
//!   read-modify-write per critical section.
//!
//! The crate has no Kubernetes dependency: items are any `Clone + Eq + Hash + Send +
//! Sync + 'static` type, and it can be used and tested on its own. All timing goes
//! through [`tokio::time`], so tests run with paused time and are deterministic.
//!
//! | client-go                              | here                                  |
//! |----------------------------------------|---------------------------------------|
//! | `workqueue.Typed` / `New`              | [`Queue`]                             |
//! | `TypedDelayingInterface`               | [`DelayingQueue`]                     |
//! | `TypedRateLimitingInterface`           | [`RateLimitingQueue`]                 |
//! | `TypedRateLimiter`                     | [`RateLimiter`]                       |
//! | `ItemExponentialFailureRateLimiter`    | [`ItemExponentialFailureRateLimiter`] |
//! | `ItemFastSlowRateLimiter`              | [`ItemFastSlowRateLimiter`]           |
//! | `BucketRateLimiter`                    | [`BucketRateLimiter`]                 |
//! | `MaxOfRateLimiter`                     | [`MaxOfRateLimiter`]                  |
//! | `WithMaxWaitRateLimiter`               | [`WithMaxWaitRateLimiter`]            |
//! | `DefaultTypedControllerRateLimiter`    | [`default_controller_rate_limiter`]   |
//! | (none; kubernetes issue 132805)        | [`CoalescingRateLimiter`]             |
//! | `MetricsProvider`, `SetProvider`       | [`MetricsProvider`], [`set_global_metrics_provider`] |
//! | controller-runtime `priorityqueue.AddWithOpts` / `GetWithPriority` / `handler.LowPriority` | [`RateLimitingQueue::add_with_opts`] ([`AddOpts`]) / [`WorkItem::priority`] / [`priority::LOW`] |
//!
//! # A worker loop
//!
//! The shape of sample-controller's `runWorker` / `processNextWorkItem`:
//!
//! ```
//! use std::time::Duration;
//! use workqueue::RateLimitingQueue;
//!
//! /// Reconciles one key. Here: fails twice for "default/flaky", then succeeds.
//! async fn sync_handler(key: &str, attempts: u32) -> Result<(), String> {
//!     if key == "default/flaky" && attempts < 2 {
//!         return Err(format!("{key} is not ready yet"));
//!     }
//!     Ok(())
//! }
//!
//! /// Runs until the queue shuts down and is empty.
//! async fn run_worker(queue: RateLimitingQueue<String>) -> u32 {
//!     let mut reconciles = 0;
//!     // `get` waits for a key; `None` means "shut down: exit the worker".
//!     while let Some(key) = queue.get().await {
//!         reconciles += 1;
//!         match sync_handler(&key, queue.num_requeues(&key)).await {
//!             // Success: reset the key's backoff.
//!             Ok(()) => queue.forget(&key),
//!             // Failure: retry later, 5 ms, 10 ms, 20 ms, ... (give up after 5).
//!             Err(_) if queue.num_requeues(&key) < 5 => queue.add_rate_limited(&key),
//!             Err(_) => queue.forget(&key),
//!         }
//!         // Dropping `key` (a WorkItem) calls `done`, which lets the key be queued
//!         // again; `key.done()` says the same thing explicitly.
//!         key.done();
//!     }
//!     reconciles
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let queue = RateLimitingQueue::with_default_rate_limiter("example");
//! let worker = tokio::spawn(run_worker(queue.clone()));
//!
//! // What an informer's event handlers do: add keys, duplicates and all.
//! queue.add("default/ok".to_string());
//! queue.add("default/flaky".to_string());
//! queue.add("default/ok".to_string());
//!
//! tokio::time::sleep(Duration::from_secs(1)).await;
//! queue.shut_down_with_drain().await;
//! // "default/ok" once (deduplicated), "default/flaky" three times (two retries).
//! assert_eq!(worker.await.unwrap(), 4);
//! # }
//! ```

// `unsafe` only in the items that allow it, each `unsafe` block with a `// SAFETY:`
// comment naming the tests that run it: the spin lock, the slot arena, the guards'
// pointers to stored items, and the two places that free a slot (queue/done.rs,
// waiting.rs). The concurrent ones are model-checked with loom (src/loom_models.rs,
// docs/testing.md "Loom").
#![deny(unsafe_code)]

pub mod bucket_rate_limiter;
pub mod coalescing_rate_limiter;
mod config;
pub mod delaying_queue;
mod forward;
pub mod into_item;
mod item_map;
#[cfg(all(test, loom))]
mod loom_models;
pub mod metrics;
pub mod observer;
pub mod priority;
pub mod queue;
pub mod rate_limiter;
pub mod rate_limiting_queue;
#[allow(unsafe_code)]
mod slots;
#[allow(unsafe_code)]
mod spin_lock;
mod sync;
mod waiting;
#[allow(unsafe_code)]
pub mod work_item;

pub use bucket_rate_limiter::BucketRateLimiter;
pub use coalescing_rate_limiter::CoalescingRateLimiter;
pub use delaying_queue::DelayingQueue;
pub use into_item::IntoItem;
pub use metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, PriorityGaugeMetric,
    SettableGaugeMetric, names, set_global_metrics_provider,
};
pub use observer::{AddOutcome, QueueObserver};
pub use queue::{Item, ItemState, Queue, QueueConfig};
pub use rate_limiter::{
    ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
    WithMaxWaitRateLimiter, default_controller_rate_limiter, default_item_based_rate_limiter,
};
pub use rate_limiting_queue::{AddOpts, RateLimitingQueue};
pub use work_item::{OwnedWorkItem, WorkItem};
