//! Ending a processing: client-go's `Done`, by item ([`Queue::done`]) or by the
//! [`WorkItem`](crate::WorkItem) guard that was handed out with the item.
//!
//! A guard finishes only its own handout: the slot counts handouts, and a guard
//! whose processing was already ended by `Queue::done` (the item may be queued or
//! held by another worker by then) only gives back its pointer to the stored item.

use std::hash::BuildHasher;

use super::{Item, ItemState, Meta, Queue, State};
use crate::slots::SlotRef;
use crate::spin_lock::MutexGuard;
use crate::work_item::Handout;

impl<T: Item> Queue<T> {
    /// Marks `item` as done processing: client-go's `Done`.
    ///
    /// If the item was added while it was being processed it goes back in line now.
    /// [`WorkItem`](crate::WorkItem) calls this for you when dropped; call it
    /// yourself only for items taken out of their guard with
    /// [`WorkItem::into_inner`](crate::WorkItem::into_inner). Calling it for an item
    /// that is not being processed does nothing.
    pub fn done(&self, item: &T) {
        let hash = self.shared.hasher.hash_one(item);
        let mut guard = self.shared.state.lock();
        let Some(slot) = guard.items.find(hash, item) else {
            return;
        };
        if guard.items.get(slot).meta.state.get() == ItemState::Queued {
            return;
        }
        let wake = Self::done_locked(&mut guard, slot);
        self.finish_slot(guard, slot, wake);
    }

    /// Ends the processing a [`WorkItem`](crate::WorkItem) was handed out for (if
    /// nothing ended it yet) and lets go of the guard's pointer to the stored item.
    pub(crate) fn finish(&self, h: &Handout<T>) {
        let mut guard = self.shared.state.lock();
        let meta = &guard.items.get(h.slot).meta;
        meta.guards.set(meta.guards.get() - 1);
        let ours = meta.handout.get() == h.handout
            && !meta.finished.get()
            && meta.state.get() != ItemState::Queued;
        let wake = if ours {
            Self::done_locked(&mut guard, h.slot)
        } else {
            Wake::default()
        };
        self.finish_slot(guard, h.slot, wake);
    }

    /// Lets go of a guard's pointer without ending the processing
    /// ([`WorkItem::into_inner`](crate::WorkItem::into_inner)); returns a clone of
    /// the item.
    pub(crate) fn release_guard(&self, h: &Handout<T>) -> T {
        let guard = self.shared.state.lock();
        let slot = guard.items.get(h.slot);
        let item = slot.key().clone();
        slot.meta.guards.set(slot.meta.guards.get() - 1);
        self.finish_slot(guard, h.slot, Wake::default());
        item
    }

    /// client-go's `Done` for the item in `slot`, which is processing: back in
    /// line if it was added meanwhile, else out of the index.
    fn done_locked(st: &mut State<T>, slot_ref: SlotRef<T, Meta>) -> Wake {
        st.processing -= 1;
        let slot = st.items.get(slot_ref);
        if let Some(m) = st.metrics.as_mut() {
            m.done(slot.key());
        }
        let meta = &slot.meta;
        let requeued = meta.state.get() == ItemState::ProcessingDirty;
        if requeued {
            // Back in line at the highest priority it was added with meanwhile.
            meta.state.set(ItemState::Queued);
            meta.ticket
                .set(st.lanes.push(slot_ref, meta.priority.get()));
        } else {
            meta.finished.set(true);
            st.items.unindex(slot_ref);
        }
        // Wake a getter or a pending `shut_down_with_drain` only if there is one.
        Wake {
            getter: requeued && st.wake_a_getter(),
            drained: st.processing == 0 && st.drain,
        }
    }

    /// Frees `slot` if it is finished and no guard points at it, unlocks, then wakes
    /// whoever `wake` says and drops the item.
    #[allow(unsafe_code)]
    fn finish_slot(&self, mut guard: MutexGuard<'_, State<T>>, slot: SlotRef<T, Meta>, wake: Wake) {
        let meta = &guard.items.get(slot).meta;
        let freed = (meta.finished.get() && meta.guards.get() == 0).then(|| {
            // SAFETY: no guard points at the slot (`guards == 0`): every `WorkItem`
            // made for it has given its pointer back through `finish` or
            // `release_guard`, which is where the count is decremented. The loom model
            // `worker_reads_its_item_while_another_ends_and_re_adds_it` checks that this
            // is enough (it fails if the count is ignored: a worker's read of its item is
            // then not ordered before the release); `a_guard_finishes_only_its_own_handout`
            // (tests/queue.rs) runs it single-threaded.
            unsafe { guard.items.release(slot) }
        });
        drop(guard);
        if wake.getter {
            self.shared.item_ready.notify_one();
        }
        if wake.drained {
            self.shared.drained.notify_waiters();
        }
        drop(freed);
    }
}

/// Who to wake once the lock is released.
#[derive(Default)]
struct Wake {
    getter: bool,
    drained: bool,
}
