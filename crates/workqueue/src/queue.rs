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
//! Here `dirty` and `processing` are folded into one map from item to [`ItemState`], so
//! each operation hashes the item once or twice instead of up to four times; the
//! states map one to one onto client-go's two sets (see [`ItemState`]).
//!
//! # Deviation from client-go
//!
//! client-go's `Done` on an item that is *not* being processed but is queued appends it
//! to the queue a second time (a duplicate in line). Here `done` on an item that is not
//! being processed is a no-op, so the "never queued twice" invariant always holds.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::{self, MetricsProvider, QueueMetrics};
use crate::work_item::WorkItem;

/// What a queue can hold: anything cheap to clone, comparable and hashable.
///
/// client-go's `Typed[T comparable]`. In controllers this is almost always a
/// `"namespace/name"` key (a `String` or an `Arc<str>`), never the object itself: the
/// worker reads the latest object from the lister when it processes the key.
/// Implemented for every type that meets the bounds.
pub trait Item: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> Item for T {}

/// The hasher for the queue's item map: foldhash, randomly seeded per process. Keys
/// are short strings, and SipHash (std's default) cost more than everything else in
/// an add/get/done cycle; foldhash is several times faster and, being seeded, still
/// resists crafted collisions well enough for keys taken from API object names.
pub(crate) type FastState = foldhash::fast::RandomState;

/// Where an item stands, when the queue knows it at all.
///
/// | state               | client-go `dirty` | client-go `processing` | in the FIFO |
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

/// How a queue is named and instrumented: client-go's `TypedQueueConfig`.
///
/// A queue reports metrics only when it has a non-empty [`name`](Self::name) and a
/// metrics provider (its own, or the process-wide one set with
/// [`set_global_metrics_provider`](crate::set_global_metrics_provider)), exactly like
/// client-go, where an unnamed queue gets no metrics.
#[derive(Clone, Default)]
pub struct QueueConfig {
    /// The queue's name, the `name` label on every metric. Empty means no metrics.
    pub name: String,
    /// The provider for this queue's metrics; `None` uses the global provider.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
}

impl QueueConfig {
    /// A config with the given name and the global metrics provider.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            metrics_provider: None,
        }
    }

    /// Use `provider` for this queue's metrics instead of the global provider.
    pub fn with_metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = Some(provider);
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics_provider", &self.metrics_provider.is_some())
            .finish()
    }
}

/// How often the unfinished-work gauges are refreshed (client-go's default).
const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// Everything behind the queue's lock.
struct State<T> {
    /// FIFO of items in state `Queued` (client-go `queue`).
    queue: VecDeque<T>,
    /// Every item that is dirty, processing or both (client-go `dirty` + `processing`).
    items: HashMap<T, ItemState, FastState>,
    /// Number of items in `Processing` or `ProcessingDirty`.
    processing: usize,
    /// Number of `get` calls waiting for an item: `add` wakes one only if there is
    /// one, so the common uncontended add never touches the `Notify`.
    waiting_getters: usize,
    shutting_down: bool,
    /// Set by `shut_down_with_drain`, cleared by `shut_down`.
    drain: bool,
    /// `None` unless the queue is named and has a provider: no cost when unused.
    metrics: Option<QueueMetrics<T>>,
}

/// The part every handle of a queue shares.
pub(crate) struct Shared<T> {
    state: Mutex<State<T>>,
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
            .field("len", &st.queue.len())
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
                    queue: VecDeque::new(),
                    items: HashMap::default(),
                    processing: 0,
                    waiting_getters: 0,
                    shutting_down: false,
                    drain: false,
                    metrics: queue_metrics,
                }),
                item_ready: Notify::new(),
                drained: Notify::new(),
                stopped: Arc::new(Notify::new()),
                name: config.name,
                metrics_provider: provider,
            }),
        };
        if has_metrics && let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(update_unfinished_work_loop(
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

    /// Marks `item` as needing processing: client-go's `Add`.
    ///
    /// * Ignored after [`shut_down`](Self::shut_down).
    /// * Ignored if the item is already waiting (deduplication).
    /// * If a worker holds the item, it is only marked dirty and goes back in line
    ///   when that worker calls [`done`](Self::done).
    pub fn add(&self, item: T) {
        let mut st = self.shared.state.lock();
        if st.shutting_down {
            return;
        }
        let pushed = match st.items.get_mut(&item) {
            Some(ItemState::Queued | ItemState::ProcessingDirty) => return,
            Some(state @ ItemState::Processing) => {
                *state = ItemState::ProcessingDirty;
                false
            }
            None => true,
        };
        if let Some(m) = st.metrics.as_mut() {
            m.add(&item);
        }
        if pushed {
            st.items.insert(item.clone(), ItemState::Queued);
            st.queue.push_back(item);
            let wake = st.waiting_getters > 0;
            drop(st);
            if wake {
                self.shared.item_ready.notify_one();
            }
        }
    }

    /// Waits for an item, or returns `None` once the queue is shut down and empty:
    /// client-go's `Get`.
    ///
    /// After [`shut_down`](Self::shut_down), items already in line are still handed
    /// out; only then does `get` return `None`, which tells the worker to exit.
    ///
    /// The returned [`WorkItem`] marks the item as being processed and calls
    /// [`done`](Self::done) when dropped, so a worker cannot forget it (not even when
    /// it panics). Cancel-safe: dropping the future never loses an item.
    pub async fn get(&self) -> Option<WorkItem<T>> {
        // Fast path: an item is waiting; no wake-up registration needed.
        match self.pop() {
            Popped::Item(item) => return Some(WorkItem::new(item, self.clone())),
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
                    Popped::Item(item) => return Some(WorkItem::new(item, self.clone())),
                    Popped::ShutDown => return None,
                    Popped::Empty => st.waiting_getters += 1,
                }
            }
            // Counted as waiting until woken or cancelled (the guard undoes the count).
            let _waiting = WaitingGetter(self);
            notified.await;
        }
    }

    /// Takes the next item if one is waiting, without waiting: `None` when the queue
    /// is empty or shut down. Handy in tests and single-threaded drivers.
    pub fn try_get(&self) -> Option<WorkItem<T>> {
        match self.pop() {
            Popped::Item(item) => Some(WorkItem::new(item, self.clone())),
            Popped::ShutDown | Popped::Empty => None,
        }
    }

    fn pop(&self) -> Popped<T> {
        Self::pop_locked(&mut self.shared.state.lock())
    }

    fn pop_locked(st: &mut State<T>) -> Popped<T> {
        let Some(item) = st.queue.pop_front() else {
            return if st.shutting_down {
                Popped::ShutDown
            } else {
                Popped::Empty
            };
        };
        if let Some(state) = st.items.get_mut(&item) {
            *state = ItemState::Processing;
        }
        st.processing += 1;
        if let Some(m) = st.metrics.as_mut() {
            m.get(&item);
        }
        Popped::Item(item)
    }

    /// Marks `item` as done processing: client-go's `Done`.
    ///
    /// If the item was added while it was being processed it goes back in line now.
    /// [`WorkItem`] calls this for you when dropped; call it yourself only for items
    /// taken out of their guard with [`WorkItem::into_inner`]. Calling it for an item
    /// that is not being processed does nothing.
    pub fn done(&self, item: &T) {
        let mut st = self.shared.state.lock();
        // One lookup on the common path: the item leaves the map unless it was added
        // again meanwhile (then it goes straight back in line).
        let requeued = match st.items.get_mut(item) {
            Some(state @ ItemState::ProcessingDirty) => {
                *state = ItemState::Queued;
                true
            }
            Some(ItemState::Processing) => false,
            Some(ItemState::Queued) | None => return,
        };
        if requeued {
            st.queue.push_back(item.clone());
        } else {
            st.items.remove(item);
        }
        st.processing -= 1;
        if let Some(m) = st.metrics.as_mut() {
            m.done(item);
        }
        // Wake a getter or a pending `shut_down_with_drain` only if there is one.
        let wake = requeued && st.waiting_getters > 0;
        let drained = st.processing == 0 && st.drain;
        drop(st);
        if wake {
            self.shared.item_ready.notify_one();
        }
        if drained {
            self.shared.drained.notify_waiters();
        }
    }

    /// The number of items waiting in line (not counting those being processed).
    ///
    /// For information only: never gate `add` or `get` on it, it can change the
    /// moment it is read.
    pub fn len(&self) -> usize {
        self.shared.state.lock().queue.len()
    }

    /// Whether no item is waiting in line.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where `item` stands, or `None` if the queue does not know it.
    pub fn state_of(&self, item: &T) -> Option<ItemState> {
        self.shared.state.lock().items.get(item).copied()
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
        }
        self.shared.item_ready.notify_waiters();
        self.shared.drained.notify_waiters();
        self.shared.stopped.notify_waiters();
    }

    /// Whether [`shut_down`](Self::shut_down) (or the drain variant) has been called.
    pub fn shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }

    pub(crate) fn downgrade(&self) -> Weak<Shared<T>> {
        Arc::downgrade(&self.shared)
    }

    pub(crate) fn upgrade(weak: &Weak<Shared<T>>) -> Option<Self> {
        weak.upgrade().map(|shared| Self { shared })
    }
}

/// Undoes a `get`'s "waiting" count when it wakes up or is cancelled.
struct WaitingGetter<'a, T: Item>(&'a Queue<T>);

impl<T: Item> Drop for WaitingGetter<'_, T> {
    fn drop(&mut self) {
        self.0.shared.state.lock().waiting_getters -= 1;
    }
}

enum Popped<T> {
    Item(T),
    Empty,
    ShutDown,
}

/// Refreshes the unfinished-work gauges until the queue stops or is dropped:
/// client-go's `updateUnfinishedWorkLoop`.
async fn update_unfinished_work_loop<T: Item>(queue: Weak<Shared<T>>, stopped: Arc<Notify>) {
    let mut ticker = tokio::time::interval(UNFINISHED_WORK_UPDATE_PERIOD);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let mut stop = pin!(stopped.notified());
        stop.as_mut().enable();
        {
            let Some(shared) = queue.upgrade() else {
                return;
            };
            let st = shared.state.lock();
            if st.shutting_down {
                return;
            }
            if let Some(m) = st.metrics.as_ref() {
                m.update_unfinished_work(Instant::now());
            }
        }
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop => {}
        }
    }
}
