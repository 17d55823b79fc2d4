//! Item priorities: controller-runtime's priority queue
//! (pkg/controller/priorityqueue), on top of client-go's queue rules.
//!
//! # Why
//!
//! A controller that starts (or restarts, or resyncs) lists every object it watches,
//! and each one becomes a key in the queue. With a plain FIFO the one object a user
//! just changed waits behind thousands of keys that need nothing: after a restart of a
//! controller for 5,000 objects, a `kubectl apply` can take minutes to be reconciled.
//! controller-runtime fixed this with a priority queue: its event handlers add keys
//! from the initial list and from resyncs at [`LOW`] priority (`handler.LowPriority`,
//! -100), everything else at [`DEFAULT`] (0), and workers always take the highest
//! priority first. It made that queue the default in v0.23.
//!
//! # The rules
//!
//! Every queued item has a priority, an `i32`; higher is handed out first.
//!
//! * Among the items in line, the highest priority goes first, and items of one
//!   priority go in the order they got in line (FIFO).
//! * A priority is given with [`RateLimitingQueue::add_with_opts`]
//!   (`AddOpts { priority, .. }`), controller-runtime's `AddWithOpts`; client-go's
//!   verbs ([`Queue::add`], `add_after`, `add_rate_limited`) add at [`DEFAULT`], so a
//!   queue where nobody passes a priority behaves exactly like client-go's. Only the
//!   rate-limiting queue takes a priority, as in controller-runtime, whose
//!   `PriorityQueue` is a rate-limiting queue: it is the queue controllers use, and
//!   the plain and delaying queues keep client-go's API.
//! * Adding an item that is already in line keeps the **higher** priority. When the
//!   new one is higher, the item moves to the **end** of the line of its new priority
//!   (as in controller-runtime: it joins the items of that priority in FIFO order). An
//!   add at the same or a lower priority changes nothing.
//! * client-go's processing rules are kept: an item added while a worker holds it is
//!   only marked dirty, and goes back in line when the worker is done, at the highest
//!   priority it was added with since it was handed out.
//! * The [`WorkItem`] says which priority the item was handed out with
//!   ([`WorkItem::priority`]), so a worker can requeue a failed item at the priority
//!   it had, as controller-runtime's reconcile loop does.
//! * **Starvation is bounded.** At most [`STARVATION_BOUND`] hand-outs in a row pass
//!   over an item waiting at a lower priority; then the one among those that has
//!   waited longest is handed out (`QueueConfig::starvation_bound`; `None` restores
//!   strictly-highest-first). controller-runtime's queue has no bound: its users saw
//!   initial-list items never reconciled under a steady stream of events
//!   (kubernetes-sigs/controller-runtime issue 3496). While no higher item is in
//!   line nothing changes, so a change after a restart still overtakes the initial
//!   list: it waits for at most one listed item, the one a reserved hand-out went to.
//! * A priority combines with a delay and with backoff
//!   ([`AddOpts::after`], [`AddOpts::rate_limited`]): an item waiting for its time keeps the
//!   earliest ready time and the highest priority it was given, and is added at that
//!   priority when it is due. Items become ready in order of their ready time, so
//!   within a priority they line up by when they became ready, as controller-runtime
//!   sorts them.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use workqueue::{AddOpts, RateLimitingQueue, priority};
//!
//! let queue = RateLimitingQueue::with_default_rate_limiter("example");
//! // A restart: the initial list adds every object at low priority...
//! let low = AddOpts { priority: priority::LOW, ..AddOpts::default() };
//! for i in 0..1000 {
//!     queue.add_with_opts(format!("default/listed-{i}"), low);
//! }
//! // ...then a user changes one object: a watch event, default priority.
//! queue.add("default/changed".to_string());
//!
//! let first = queue.get().await.unwrap();
//! assert_eq!(*first, "default/changed"); // not 1,000 keys later
//! assert_eq!(first.priority(), priority::DEFAULT);
//! first.done();
//!
//! // An event for an object still waiting from the list raises it: it is handed out
//! // next, ahead of the other 999.
//! queue.add("default/listed-500".to_string());
//! assert_eq!(*queue.get().await.unwrap(), "default/listed-500");
//! assert_eq!(*queue.get().await.unwrap(), "default/listed-0");
//! # }
//! ```
//!
//! # Where this differs from controller-runtime
//!
//! * **The starvation bound** (above): controller-runtime hands out strictly by
//!   priority; `QueueConfig { starvation_bound: None, .. }` does too.
//! * **Processing rules.** controller-runtime keeps an item that is added while a
//!   worker holds it in its ready set, skips it until `Done`, and counts it in `Len`.
//!   Here it is client-go's dirty-while-processing item ([`ItemState::ProcessingDirty`]),
//!   not counted by [`Queue::len`]. Both hand it out again only after `done`, at the
//!   highest priority it was added with. [`Queue::len`] counts the items in line,
//!   whatever their priority, and never those waiting for a delay, like both.
//! * **Delays are client-go's.** controller-runtime merges a delayed add into the
//!   item's one entry: a ready item stays ready (and takes the higher priority at
//!   once), and a plain add of a waiting item makes it ready. Here the delaying set is
//!   separate from the line, as in client-go: an item in line stays there at its
//!   priority while a delayed add of it waits, and is added (deduplicated, or raised
//!   if the waiting add's priority is higher) when due; a plain add of a waiting item
//!   queues it and its delayed add still happens later.
//! * **Draining.** [`Queue::shut_down_with_drain`] waits for the items being
//!   processed, as in client-go; controller-runtime's only shuts down.
//! * **Adds are synchronous.** controller-runtime buffers adds and sorts them in a
//!   background goroutine; here an add is in line (and counted by `len`) when the
//!   call returns.
//! * **Metrics.** The plain `workqueue_depth` gauge keeps its client-go meaning, and
//!   the depth per priority is a separate gauge,
//!   [`workqueue_depth_with_priority`](crate::names::DEPTH_WITH_PRIORITY), reported
//!   when the [`MetricsProvider`](crate::MetricsProvider) offers one.
//!
//! # Cost
//!
//! The line is one FIFO per priority in use, with the one for priority 0 always
//! there: a queue that only ever sees priority 0 does what it did before priorities
//! existed, plus a ticket per entry (see the queue's `lanes` module): measured with
//! `examples/cycle_cost.rs` under callgrind, a single-worker add + get + done cycle
//! went from 509 to 517 instructions, a rate-limited one from 571 to 579. Raising a
//! queued item's priority is O(1): it gets a new place in line, and its old place is
//! skipped when reached.
//!
//! [`Queue::add`]: crate::Queue::add
//! [`Queue::len`]: crate::Queue::len
//! [`Queue::shut_down_with_drain`]: crate::Queue::shut_down_with_drain
//! [`WorkItem`]: crate::WorkItem
//! [`WorkItem::priority`]: crate::WorkItem::priority
//! [`ItemState::ProcessingDirty`]: crate::ItemState::ProcessingDirty
//! [`RateLimitingQueue::add_with_opts`]: crate::RateLimitingQueue::add_with_opts
//! [`AddOpts::after`]: crate::AddOpts::after
//! [`AddOpts::rate_limited`]: crate::AddOpts::rate_limited

/// The priority of [`Queue::add`](crate::Queue::add), `add_after`,
/// `add_rate_limited`, and of [`AddOpts::default`](crate::AddOpts).
pub const DEFAULT: i32 = 0;

/// The default [`QueueConfig::starvation_bound`](crate::QueueConfig::starvation_bound):
/// at most 10 hand-outs in a row pass over a waiting lower-priority item, so lower
/// priorities keep at least one hand-out in 11 (about 9 %) when higher ones never
/// let up, and a user's change after a restart still waits for at most one item of
/// the initial list (docs/benchmarks.md, "Starvation").
pub const STARVATION_BOUND: u32 = 10;

/// The priority controller-runtime gives to events from the initial list and from
/// resyncs (`handler.LowPriority`): below [`DEFAULT`], with room in between for
/// priorities of your own.
pub const LOW: i32 = -100;
