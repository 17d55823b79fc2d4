//! Adding an item: client-go's `Add`, and the priority controller-runtime's
//! `AddWithOpts` gives it (see the [`priority`](crate::priority) module for the rules).

use std::borrow::Cow;
use std::hash::BuildHasher;

use super::{Item, ItemState, Meta, Queue, Shared, State};
use crate::into_item::IntoItem;
use crate::observer::AddOutcome;
use crate::priority;
use crate::slots::{Found, SlotRef};
use crate::spin_lock::MutexGuard;

impl<T: Item> Queue<T> {
    /// Marks `item` as needing processing: client-go's `Add`.
    ///
    /// * Ignored after [`shut_down`](Self::shut_down).
    /// * Ignored if the item is already waiting (deduplication).
    /// * If a worker holds the item, it is only marked dirty and goes back in line
    ///   when that worker calls [`done`](Self::done).
    ///
    /// Takes the item by value or by reference ([`IntoItem`]): a key you keep (a
    /// worker's [`WorkItem`](crate::WorkItem), a key list) is cloned only if the queue
    /// stores it, so re-adding an item that is already waiting costs no clone at all
    /// (for `Arc<str>` keys, no reference-count traffic; for `String` keys, no
    /// allocation).
    ///
    /// Adds at priority [`DEFAULT`](priority::DEFAULT) (0). To add at another
    /// [priority], use controller-runtime's `AddWithOpts`,
    /// [`RateLimitingQueue::add_with_opts`](crate::RateLimitingQueue::add_with_opts):
    /// the one add method with options.
    pub fn add(&self, item: impl IntoItem<T>) {
        self.add_at(item.into_item(), priority::DEFAULT);
    }

    /// `add` at `priority` (higher is handed out first), for
    /// [`RateLimitingQueue::add_with_opts`](crate::RateLimitingQueue::add_with_opts):
    ///
    /// * Waiting in line already: keeps the higher of the two priorities; when this
    ///   one is higher, the item moves to the end of the line of its new priority.
    ///   A re-add at the same or a lower priority changes nothing.
    /// * Held by a worker: marked dirty as by `add`, and goes back in line on `done`
    ///   at the highest priority it was added with since it was handed out.
    ///
    /// See the [`priority`] module for why and when.
    pub(crate) fn add_at(&self, item: Cow<'_, T>, priority: i32) {
        // Hash before locking: the lock is held for the shortest possible time.
        self.add_hashed(self.shared.hasher.hash_one(&*item), item, priority);
    }

    /// `add` of an item whose hash (by `Shared::hasher`) is already known.
    pub(crate) fn add_hashed(&self, hash: u64, item: Cow<'_, T>, priority: i32) {
        // A FIFO-only queue (`QueueConfig::fifo`) hears every priority as 0.
        let priority = if self.shared.fifo {
            priority::DEFAULT
        } else {
            priority
        };
        let mut guard = self.shared.state.lock();
        let st = &mut *guard;
        if st.shutting_down {
            return;
        }
        match st.items.find_or_insert(hash, item) {
            Found::Inserted(slot_ref) => {
                let ticket = st.lanes.push(slot_ref, priority);
                let slot = st.items.get(slot_ref);
                slot.meta.init_queued(priority, ticket);
                if let Some(m) = st.metrics.as_mut() {
                    m.add(slot.key(), priority);
                }
                if let Some(observer) = self.shared.observer.get() {
                    observer.added(slot.key(), priority, AddOutcome::Queued);
                }
                let wake = st.wake_a_getter();
                drop(guard);
                if wake {
                    self.shared.item_ready.notify_one();
                }
            }
            Found::Existing(slot_ref, duplicate) => {
                let meta = &st.items.get(slot_ref).meta;
                // The common re-add (an event for a key already in line) changes
                // nothing: it leaves at once, and the rarer cases below are kept out
                // of this path (`re_add`) so that it stays short.
                if matches!(
                    meta.state.get(),
                    ItemState::Queued | ItemState::ProcessingDirty
                ) && priority <= meta.priority.get()
                    && self.shared.observer.get().is_none()
                {
                    drop(guard);
                    drop(duplicate);
                    return;
                }
                Self::re_add(&self.shared, guard, slot_ref, duplicate, priority);
            }
        }
    }

    /// The add of an item already stored that is not simply deduplicated: held by a
    /// worker (marked dirty), raised to a higher priority, or told to an observer.
    #[inline(never)]
    fn re_add(
        shared: &Shared<T>,
        mut guard: MutexGuard<'_, State<T>>,
        slot_ref: SlotRef<T, Meta>,
        duplicate: Cow<'_, T>,
        priority: i32,
    ) {
        let st = &mut *guard;
        let slot = st.items.get(slot_ref);
        let meta = &slot.meta;
        let outcome = match meta.state.get() {
            ItemState::Processing => {
                meta.state.set(ItemState::ProcessingDirty);
                meta.priority.set(priority);
                if let Some(m) = st.metrics.as_mut() {
                    m.add(slot.key(), priority);
                }
                AddOutcome::Dirty
            }
            ItemState::ProcessingDirty if priority > meta.priority.get() => {
                if let Some(m) = st.metrics.as_ref() {
                    m.raise(meta.priority.get(), priority);
                }
                meta.priority.set(priority);
                AddOutcome::Raised
            }
            ItemState::Queued if priority > meta.priority.get() => {
                if let Some(m) = st.metrics.as_ref() {
                    m.raise(meta.priority.get(), priority);
                }
                st.lanes.raise(&st.items, slot_ref, priority);
                AddOutcome::Raised
            }
            // Already dirty at the same or a higher priority: deduplicated.
            ItemState::Queued | ItemState::ProcessingDirty => AddOutcome::Deduplicated,
        };
        if let Some(observer) = shared.observer.get() {
            observer.added(&duplicate, priority, outcome);
        }
        // The caller's copy is dropped after unlocking.
        drop(guard);
        drop(duplicate);
    }
}
