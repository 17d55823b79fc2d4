//! The basic work queue: client-go's `workqueue.Typed` (util/workqueue/queue.go).
//!
//! # What problem does it solve?
//!
//! Informer event handlers fire for every change of every object, often many times
//! per second for the same object. A controller does not want to reconcile an object
//! once per event: it wants to reconcile it *at least once after the last event*, and
//! never from two workers at the same time. The queue gives exactly that, with three
//! pieces of state (client-go names in brackets):
//!
//! * the FIFO order of items waiting for a worker (`queue`);
//! * the set of items that need processing (`dirty`): adding an item that is already
//!   dirty is a no-op, which is the deduplication;
//! * the set of items a worker currently holds (`processing`): an item added while it
//!   is being processed is only marked dirty, and is put back in line when the worker
//!   calls [`Queue::done`]. That is what stops two workers from ever holding the same
//!   item, while still guaranteeing that the change that arrived mid-processing is
//!   seen by a later processing.
//!
//! Here `dirty` and `processing` are folded into one state per item (see
//! [`ItemState`]), and each item is stored once, in a slot found by hash: an add +
//! get + done cycle hashes the item once (in `add`), and `get` and `done` reach the
//! slot by its number (the `slots` module explains the layout and why).
//!
//! Items can also be added with a [priority](crate::priority) (controller-runtime's
//! priority queue): the line is then ordered by priority, FIFO within a priority, and
//! the rules above stay as they are. [`add`](Queue::add) adds at priority 0, so a
//! queue nobody gives a priority to is exactly client-go's.
//!
//! # Deviation from client-go
//!
//! client-go's `Done` on an item that is *not* being processed but is queued appends it
//! to the queue a second time (a duplicate in line). Here `done` on an item that is not
//! being processed is a no-op, so the "never queued twice" invariant always holds.
//! Likewise a [`WorkItem`] finishes only the processing it was handed out for: if that
//! processing was already ended with [`Queue::done`], dropping the guard does nothing.

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use crate::spin_lock::Mutex;
use tokio::sync::Notify;

use crate::metrics::{self, MetricsProvider, QueueMetrics};
use crate::observer::QueueObserver;
use crate::slots::Slots;
use crate::work_item::{Handout, OwnedWorkItem, WorkItem};

mod add;
mod done;
mod lanes;
mod meta;
#[cfg(test)]
mod starvation_tests;

use lanes::Lanes;
pub(crate) use meta::Meta;

pub use crate::config::QueueConfig;

/// What a queue can hold: anything cheap to clone, comparable and hashable.
///
/// client-go's `Typed[T comparable]`. In controllers this is almost always a
/// `"namespace/name"` key (a `String` or an `Arc<str>`), never the object itself: the
/// worker reads the latest object from the lister when it processes the key.
/// Implemented for every type that meets the bounds.
pub trait Item: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> Item for T {}

/// The hasher for the queue's item index: foldhash, randomly seeded per process. Keys
/// are short strings, and SipHash (std's default) cost more than everything else in
/// an add/get/done cycle; foldhash is several times faster and, being seeded, still
/// resists crafted collisions well enough for keys taken from API object names.
pub(crate) type FastState = foldhash::fast::RandomState;

/// Where an item stands, when the queue knows it at all.
///
/// | state               | client-go `dirty` | client-go `processing` | in line     |
/// |---------------------|-------------------|------------------------|-------------|
/// | `Queued`            | yes               | no                     | yes         |
/// | `Processing`        | no                | yes                    | no          |
/// | `ProcessingDirty`   | yes               | yes                    | no          |
///
/// An item the queue does not know is in neither set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemState {
    /// Waiting in line for a worker.
    Queued,
    /// Held by a worker; not added again since it was handed out.
    Processing,
    /// Held by a worker and added again meanwhile: goes back in line on `done`.
    ProcessingDirty,
}

/// Everything behind the queue's lock.
struct State<T> {
    /// Every item that is dirty, processing or both (client-go `dirty` + `processing`),
    /// plus finished items that a `WorkItem` still points at.
    items: Slots<T, Meta>,
    /// Slots of the items in state `Queued`, in order: by priority, then FIFO
    /// (client-go `queue`).
    lanes: Lanes<T>,
    /// Number of items in `Processing` or `ProcessingDirty`.
    processing: usize,
    /// Number of `get` calls waiting for an item: `add` wakes one only if there is
    /// one, so the common uncontended add never touches the `Notify`.
    waiting_getters: usize,
    /// Wake-ups sent to waiting getters that no getter has acted on yet: an `add`
    /// wakes a getter only if more getters wait than wake-ups are on their way.
    /// Without it, every add between a wake-up and the woken getter's next run
    /// (often a whole burst, the woken task waits for a thread) sent another one:
    /// measured with two producers and two workers, one `notify_one` per item.
    /// Every getter leaving the waiting path takes one off (saturating), whether or
    /// not its wake-up was the reason: the count may fall short, which costs at most
    /// a spare wake-up, but never exceeds the wake-ups really under way, so a waiting
    /// getter is never left asleep next to a queued item.
    wakes_in_flight: usize,
    shutting_down: bool,
    /// Set by `shut_down_with_drain`, cleared by `shut_down`.
    drain: bool,
    /// `None` unless the queue is named and has a provider: no cost when unused.
    metrics: Option<QueueMetrics<T>>,
}

impl<T> State<T> {
    /// Whether an item just queued must wake a getter (one more wake-up is then
    /// counted as under way): only if more getters wait than wake-ups are under way.
    fn wake_a_getter(&mut self) -> bool {
        let wake = self.waiting_getters > self.wakes_in_flight;
        if wake {
            self.wakes_in_flight += 1;
        }
        wake
    }
}

/// The part every handle of a queue shares.
pub(crate) struct Shared<T> {
    state: Mutex<State<T>>,
    /// Hashes items before the lock is taken (the delaying queue's waiting set uses
    /// it too).
    pub(crate) hasher: FastState,
    /// Mirrors `State::shutting_down` for lock-free checks (`add_after`); written
    /// under the lock.
    stopping: AtomicBool,
    /// Wakes `get` callers: one per added item, all on shutdown.
    item_ready: Notify,
    /// Wakes `shut_down_with_drain` when processing becomes empty or drain is cancelled.
    drained: Notify,
    /// Wakes background tasks (the delaying queue's timer, the metrics updater) on
    /// shutdown and when the last handle goes away. They hold a clone of this `Arc`
    /// and only a `Weak` to the queue, so dropping every handle ends them.
    pub(crate) stopped: Arc<Notify>,
    pub(crate) name: String,
    pub(crate) metrics_provider: Option<Arc<dyn MetricsProvider>>,
    /// Told what each add did ([`Queue::set_observer`]); unset by default.
    pub(crate) observer: OnceLock<Arc<dyn QueueObserver<T>>>,
    /// [`QueueConfig::fifo`]: every add counts as priority 0.
    fifo: bool,
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        self.stopped.notify_waiters();
    }
}

/// A deduplicating FIFO work queue: client-go's `workqueue.Typed`.
///
/// Cloning a `Queue` gives another handle to the same queue (an `Arc` clone): hand one
/// to each event handler and worker. See the [module docs](self) for the rules, and
/// the [crate docs](crate) for a complete worker loop.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use workqueue::Queue;
///
/// let queue = Queue::new();
/// queue.add("default/foo".to_string());
/// queue.add("default/foo".to_string()); // already waiting: deduplicated
/// assert_eq!(queue.len(), 1);
///
/// let item = queue.get().await.expect("not shut down");
/// assert_eq!(*item, "default/foo");
/// queue.add("default/foo".to_string()); // being processed: marked dirty only
/// assert_eq!(queue.len(), 0);
/// item.done(); // ...and now it is back in line
/// assert_eq!(queue.len(), 1);
/// # }
/// ```
pub struct Queue<T: Item> {
    pub(crate) shared: Arc<Shared<T>>,
}

impl<T: Item> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: Item> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Item> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.state.lock();
        f.debug_struct("Queue")
            .field("name", &self.shared.name)
            .field("len", &st.lanes.len())
            .field("processing", &st.processing)
            .field("shutting_down", &st.shutting_down)
            .finish()
    }
}

impl<T: Item> Queue<T> {
    /// A new, unnamed queue (no metrics): client-go's `New`.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A new queue with a name and metrics provider: client-go's `NewTypedWithConfig`.
    ///
    /// When the config enables metrics and a Tokio runtime is running, a small task
    /// refreshes the unfinished-work gauges every 500 ms until the queue shuts down.
    pub fn with_config(config: QueueConfig) -> Self {
        let provider = metrics::resolve_provider(&config);
        let queue_metrics = provider
            .as_ref()
            .map(|p| QueueMetrics::new(&config.name, p.as_ref()));
        let has_metrics = queue_metrics.is_some();
        let queue = Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    items: Slots::new(),
                    lanes: Lanes::new(config.starvation_bound.map_or(0, |n| n.get())),
                    processing: 0,
                    waiting_getters: 0,
                    wakes_in_flight: 0,
                    shutting_down: false,
                    drain: false,
                    metrics: queue_metrics,
                }),
                hasher: FastState::default(),
                stopping: AtomicBool::new(false),
                item_ready: Notify::new(),
                drained: Notify::new(),
                stopped: Arc::new(Notify::new()),
                name: config.name,
                metrics_provider: provider,
                observer: OnceLock::new(),
                fifo: config.fifo,
            }),
        };
        if has_metrics && let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(metrics::update_unfinished_work_loop(
                Arc::downgrade(&queue.shared),
                Arc::clone(&queue.shared.stopped),
            ));
        }
        queue
    }

    /// The queue's name (empty when unnamed).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Sets the queue's [observer](crate::observer), told what every add does.
    /// Once per queue: returns `false` (and keeps the first) if one is already set.
    pub fn set_observer(&self, observer: Arc<dyn QueueObserver<T>>) -> bool {
        self.shared.observer.set(observer).is_ok()
    }

    /// Waits for an item, or returns `None` once the queue is shut down and empty:
    /// client-go's `Get`.
    ///
    /// Hands out the item that has waited longest among those of the highest
    /// [priority](crate::priority); [`WorkItem::priority`] tells which
    /// (controller-runtime's `GetWithPriority`).
    ///
    /// After [`shut_down`](Self::shut_down), items already in line are still handed
    /// out; only then does `get` return `None`, which tells the worker to exit.
    ///
    /// The returned [`WorkItem`] marks the item as being processed and calls
    /// [`done`](Self::done) when dropped, so a worker cannot forget it (not even when
    /// it panics). It borrows the queue, which keeps a `get` + `done` free of
    /// reference-count traffic; use [`get_owned`](Self::get_owned) to hand the item to
    /// another task. Cancel-safe: dropping the future never loses an item.
    pub async fn get(&self) -> Option<WorkItem<'_, T>> {
        // Fast path: an item is waiting; no wake-up registration needed.
        match self.pop() {
            Popped::Item(h) => return Some(WorkItem::new(h, self)),
            Popped::ShutDown => return None,
            Popped::Empty => {}
        }
        loop {
            // Register for a wake-up *before* looking at the state, so an `add` or a
            // shutdown between the look and the wait cannot be missed.
            let mut notified = pin!(self.shared.item_ready.notified());
            notified.as_mut().enable();
            {
                let mut st = self.shared.state.lock();
                match Self::pop_locked(&mut st) {
                    Popped::Item(h) => {
                        // This getter may have taken a wake-up meant for a waiter.
                        st.wakes_in_flight = st.wakes_in_flight.saturating_sub(1);
                        return Some(WorkItem::new(h, self));
                    }
                    Popped::ShutDown => return None,
                    Popped::Empty => st.waiting_getters += 1,
                }
            }
            // Counted as waiting until woken or cancelled (the guard undoes the count).
            let _waiting = WaitingGetter(self);
            notified.await;
        }
    }

    /// [`get`](Self::get), returning a guard that owns a handle to the queue
    /// (`'static`), for workers that pass the item on to a spawned task.
    pub async fn get_owned(&self) -> Option<OwnedWorkItem<T>> {
        self.get().await.map(WorkItem::into_owned)
    }

    /// Takes the next item if one is waiting, without waiting: `None` when the queue
    /// is empty or shut down. Handy in tests and single-threaded drivers.
    pub fn try_get(&self) -> Option<WorkItem<'_, T>> {
        match self.pop() {
            Popped::Item(h) => Some(WorkItem::new(h, self)),
            Popped::ShutDown | Popped::Empty => None,
        }
    }

    // Inlined into `get` and `try_get`: returned through memory, the handout cost a
    // store-forwarding stall per cycle (a 16-byte load of what was written as 4- and
    // 8-byte stores; `perf annotate`): the single-worker cycle went from 52.7 to
    // 48.3 ns (`examples/cycle_cost.rs single`, fastest of 2,000 runs, 6 interleaved
    // runs each).
    #[inline(always)]
    fn pop(&self) -> Popped<T> {
        Self::pop_locked(&mut self.shared.state.lock())
    }

    #[inline(always)]
    fn pop_locked(st: &mut State<T>) -> Popped<T> {
        let Some(slot_ref) = st.lanes.pop(&st.items) else {
            return if st.shutting_down {
                Popped::ShutDown
            } else {
                Popped::Empty
            };
        };
        let slot = st.items.get(slot_ref);
        let meta = &slot.meta;
        meta.state.set(ItemState::Processing);
        let handout = meta.handout.get().wrapping_add(1);
        meta.handout.set(handout);
        meta.guards.set(meta.guards.get() + 1);
        let priority = meta.priority.get();
        st.processing += 1;
        if let Some(m) = st.metrics.as_mut() {
            m.get(slot.key(), priority);
        }
        Popped::Item(Handout {
            key: st.items.key_ptr(slot_ref),
            slot: slot_ref,
            handout,
            priority,
        })
    }

    /// The number of items waiting in line, whatever their priority (not counting
    /// those being processed, nor those waiting for an `add_after` delay).
    ///
    /// For information only: never gate `add` or `get` on it, it can change the
    /// moment it is read.
    pub fn len(&self) -> usize {
        self.shared.state.lock().lanes.len()
    }

    /// Whether no item is waiting in line.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where `item` stands, or `None` if the queue does not know it.
    pub fn state_of(&self, item: &T) -> Option<ItemState> {
        let hash = self.shared.hasher.hash_one(item);
        let st = self.shared.state.lock();
        st.items
            .find(hash, item)
            .map(|slot| st.items.get(slot).meta.state.get())
    }

    /// Stops the queue: client-go's `ShutDown`.
    ///
    /// New adds are ignored, waiting `get` calls wake up, and workers exit once the
    /// items still in line are handed out. Cancels a pending
    /// [`shut_down_with_drain`](Self::shut_down_with_drain), which then returns at
    /// once. Idempotent.
    pub fn shut_down(&self) {
        self.stop(false);
    }

    /// Stops the queue like [`shut_down`](Self::shut_down), then waits until every
    /// item being processed is done: client-go's `ShutDownWithDrain`.
    ///
    /// Workers must keep calling `done` (dropping their [`WorkItem`]s) after the
    /// shutdown starts, or this waits forever; a concurrent `shut_down` ends the wait.
    pub async fn shut_down_with_drain(&self) {
        self.stop(true);
        loop {
            let mut drained = pin!(self.shared.drained.notified());
            drained.as_mut().enable();
            {
                let st = self.shared.state.lock();
                if st.processing == 0 || !st.drain {
                    return;
                }
            }
            drained.await;
        }
    }

    fn stop(&self, drain: bool) {
        {
            let mut st = self.shared.state.lock();
            st.drain = drain;
            st.shutting_down = true;
            self.shared.stopping.store(true, Ordering::Release);
        }
        self.shared.item_ready.notify_waiters();
        self.shared.drained.notify_waiters();
        self.shared.stopped.notify_waiters();
    }

    /// Whether [`shut_down`](Self::shut_down) (or the drain variant) has been called.
    pub fn shutting_down(&self) -> bool {
        self.shared.stopping.load(Ordering::Acquire)
    }

    pub(crate) fn downgrade(&self) -> Weak<Shared<T>> {
        Arc::downgrade(&self.shared)
    }

    pub(crate) fn upgrade(weak: &Weak<Shared<T>>) -> Option<Self> {
        weak.upgrade().map(|shared| Self { shared })
    }
}

impl<T: Item> Shared<T> {
    /// Runs `f` on the metrics bookkeeping, if the queue has metrics and is not
    /// shut down (for the unfinished-work updater).
    pub(crate) fn with_metrics(&self, f: impl FnOnce(&QueueMetrics<T>)) -> bool {
        let st = self.state.lock();
        if st.shutting_down {
            return false;
        }
        if let Some(m) = st.metrics.as_ref() {
            f(m);
        }
        true
    }
}

/// Undoes a `get`'s "waiting" count when it wakes up or is cancelled.
struct WaitingGetter<'a, T: Item>(&'a Queue<T>);

impl<T: Item> Drop for WaitingGetter<'_, T> {
    fn drop(&mut self) {
        let mut st = self.0.shared.state.lock();
        st.waiting_getters -= 1;
        st.wakes_in_flight = st.wakes_in_flight.saturating_sub(1);
    }
}

enum Popped<T> {
    Item(Handout<T>),
    Empty,
    ShutDown,
}
