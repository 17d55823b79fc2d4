//! The guard `get` returns: client-go's `defer queue.Done(key)`, made impossible to
//! forget.
//!
//! In client-go every worker must call `Done(key)` when it is finished with a key,
//! whatever happened; forgetting it (an early return, a panic) leaves the key in the
//! processing set forever, and it is never processed again. [`WorkItem`] calls
//! [`Queue::done`] when it is dropped, so the compiler and the unwinder take care of
//! it. Learners who want to see the explicit call can still write `item.done()`, or
//! take the key out with [`WorkItem::into_inner`] and call `queue.done(&key)`.
//!
//! # Why the guard borrows the queue
//!
//! A worker's cycle is `get`, process, `done`. The guard [`Queue::get`] returns
//! borrows the queue and points at the item the queue stores, so that cycle clones
//! neither the queue handle nor the item: on a shared machine each reference-count
//! increment or decrement is an atomic read-modify-write costing about as much as a
//! lock acquisition, and the guard used to do four of them. When the item must move
//! to another task, [`WorkItem::into_owned`] (or [`Queue::get_owned`]) gives an
//! [`OwnedWorkItem`] that holds its own queue handle.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;

use crate::queue::{Item, Meta, Queue};
use crate::slots::SlotRef;

/// What the queue handed out: which slot, which handout of it, and the item there.
pub(crate) struct Handout<T> {
    /// The item stored in the slot; valid while this handout is counted among the
    /// slot's guards (the queue frees the slot only when that count is 0).
    pub(crate) key: NonNull<T>,
    pub(crate) slot: SlotRef<T, Meta>,
    pub(crate) handout: u32,
    /// The priority the item was handed out with.
    pub(crate) priority: i32,
}

impl<T> Clone for Handout<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Handout<T> {}

impl<T> Handout<T> {
    fn item(&self) -> &T {
        // Under loom, the read below (a plain pointer) is recorded on the slot's cell.
        // SAFETY: a handout's slot is in a chunk of its queue's `Slots`, which lives as
        // long as the queue, and the guard holding the handout borrows or owns the queue.
        #[cfg(loom)]
        unsafe {
            self.slot.loom_read_key()
        };
        // SAFETY: the queue keeps the slot's item in place and unmodified while this
        // handout is counted as a guard (see `Handout::key`); every guard type gives
        // the count back exactly once, in `Drop` or `into_inner`. Model-checked with
        // loom: `worker_reads_its_item_while_another_ends_and_re_adds_it`,
        // `owned_work_item_read_on_another_thread` (src/loom_models.rs); the unit
        // tests in tests/queue.rs (`a_guard_finishes_only_its_own_handout`) and
        // tests/model.rs run it single-threaded.
        unsafe { self.key.as_ref() }
    }
}

/// An item handed out by [`Queue::get`], held until processing ends.
///
/// Dereferences to the item. Dropping it calls [`Queue::done`], so the item can never
/// be left in the processing set by a forgotten `done`, an early `return` or a panic.
/// Call [`done`](Self::done) to make the end of processing explicit, as client-go
/// code does with `defer queue.Done(key)`.
///
/// It borrows the queue; [`into_owned`](Self::into_owned) turns it into a `'static`
/// [`OwnedWorkItem`].
#[must_use = "dropping a WorkItem at once marks it done without processing it"]
pub struct WorkItem<'q, T: Item> {
    handout: Handout<T>,
    queue: &'q Queue<T>,
}

// SAFETY: a `WorkItem` is a `&T` into the queue's storage plus a `&Queue<T>`; both are
// `Send` and `Sync` because `T: Send + Sync` (the `Item` bounds). Workers on several
// threads: tests/stress.rs; a guard read on one thread while another ends and re-adds
// its item: the loom model `worker_reads_its_item_while_another_ends_and_re_adds_it`.
unsafe impl<T: Item> Send for WorkItem<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Item> Sync for WorkItem<'_, T> {}

impl<'q, T: Item> WorkItem<'q, T> {
    pub(crate) fn new(handout: Handout<T>, queue: &'q Queue<T>) -> Self {
        Self { handout, queue }
    }

    /// The item.
    pub fn item(&self) -> &T {
        self.handout.item()
    }

    /// The [priority](crate::priority) the item was handed out with: the highest it
    /// was added with while it waited (controller-runtime's `GetWithPriority`). A
    /// worker that fails can requeue the item at the priority it had, as
    /// controller-runtime's reconcile loop does:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use workqueue::{AddOpts, RateLimitingQueue, priority};
    ///
    /// let queue = RateLimitingQueue::with_default_rate_limiter("example");
    /// let low = AddOpts { priority: priority::LOW, ..AddOpts::default() };
    /// queue.add_with_opts("default/listed".to_string(), low);
    /// let item = queue.get().await.unwrap();
    /// assert_eq!(item.priority(), priority::LOW);
    /// // Processing failed: retry later, still behind the objects users change.
    /// let retry = AddOpts { rate_limited: true, priority: item.priority(), ..AddOpts::default() };
    /// queue.add_with_opts(&item, retry);
    /// item.done();
    /// let retry = queue.get().await.unwrap();
    /// assert_eq!((retry.as_str(), retry.priority()), ("default/listed", priority::LOW));
    /// # }
    /// ```
    pub fn priority(&self) -> i32 {
        self.handout.priority
    }

    /// Marks the item done now (the same as dropping the guard, but says so).
    pub fn done(self) {
        drop(self);
    }

    /// Takes the item out of the guard **without** marking it done: the caller must
    /// call [`Queue::done`] for it, exactly like client-go code.
    pub fn into_inner(self) -> T {
        let this = ManuallyDrop::new(self);
        this.queue.release_guard(&this.handout)
    }

    /// The same guard with its own handle to the queue, so that it can be moved into
    /// a spawned task (costs one reference-count increment).
    pub fn into_owned(self) -> OwnedWorkItem<T> {
        let this = ManuallyDrop::new(self);
        OwnedWorkItem {
            handout: this.handout,
            queue: this.queue.clone(),
        }
    }
}

impl<T: Item> Deref for WorkItem<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.item()
    }
}

impl<T: Item + fmt::Debug> fmt::Debug for WorkItem<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WorkItem").field(self.item()).finish()
    }
}

impl<T: Item> Drop for WorkItem<'_, T> {
    fn drop(&mut self) {
        self.queue.finish(&self.handout);
    }
}

/// A [`WorkItem`] that owns a handle to its queue, so it is `'static` and can be
/// moved into a spawned task. From [`Queue::get_owned`] or [`WorkItem::into_owned`];
/// otherwise the same guard: dropping it marks the item done.
#[must_use = "dropping an OwnedWorkItem at once marks it done without processing it"]
pub struct OwnedWorkItem<T: Item> {
    handout: Handout<T>,
    queue: Queue<T>,
}

// SAFETY: as for `WorkItem`: a `&T` into the queue's storage plus a queue handle.
// Moved to another thread and read there: the loom model
// `owned_work_item_read_on_another_thread`; to a spawned task:
// `owned_work_item_moves_into_a_spawned_task` (tests/queue.rs).
unsafe impl<T: Item> Send for OwnedWorkItem<T> {}
// SAFETY: as above.
unsafe impl<T: Item> Sync for OwnedWorkItem<T> {}

impl<T: Item> OwnedWorkItem<T> {
    /// The item.
    pub fn item(&self) -> &T {
        self.handout.item()
    }

    /// The [priority](crate::priority) the item was handed out with; see
    /// [`WorkItem::priority`].
    pub fn priority(&self) -> i32 {
        self.handout.priority
    }

    /// Marks the item done now (the same as dropping the guard, but says so).
    pub fn done(self) {
        drop(self);
    }

    /// Takes the item out of the guard **without** marking it done: the caller must
    /// call [`Queue::done`] for it, exactly like client-go code.
    pub fn into_inner(self) -> T {
        let mut this = ManuallyDrop::new(self);
        let item = this.queue.release_guard(&this.handout);
        // SAFETY: `this` is never used or dropped again, so its queue handle is
        // dropped exactly once, here (the guard's own `Drop` must not run). Run by
        // tests/model.rs (`queue_matches_the_sequential_model`, owned guards taken out
        // with `into_inner`) and the loom model `owned_work_item_read_on_another_thread`.
        unsafe { std::ptr::drop_in_place(&mut this.queue) };
        item
    }
}

impl<T: Item> Deref for OwnedWorkItem<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.item()
    }
}

impl<T: Item + fmt::Debug> fmt::Debug for OwnedWorkItem<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OwnedWorkItem").field(self.item()).finish()
    }
}

impl<T: Item> Drop for OwnedWorkItem<T> {
    fn drop(&mut self) {
        self.queue.finish(&self.handout);
    }
}
