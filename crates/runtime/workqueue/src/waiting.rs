//! The delaying queue's waiting set: items parked until their ready time.
//!
//! Each waiting item is stored once, in a [`Slots`] slot (found by hash, like the
//! queue's own items) that records its ready time and priority; a binary min-heap
//! orders `(ready time, sequence, slot)` entries for the timer task. An item parked
//! twice keeps the earlier ready time and the higher priority (controller-runtime:
//! "the max of the passed priorities and the min of possible durations").
//!
//! Why a heap with lazy deletion rather than the `BTreeMap` used before: the common
//! operation is `add_after` of a new item at a random time among 100k+ waiting ones,
//! and a heap push is O(1) on average (a random entry sifts up about one level)
//! where a B-tree insert searches and shifts within ~5 levels of nodes. The price is
//! that "move an item earlier" cannot find and remove the old heap entry: it pushes
//! a new one and the old one goes stale (its sequence no longer matches the slot's).
//! Stale entries are skipped when they reach the top, and the heap is rebuilt if they
//! ever outnumber the live ones, so memory stays O(waiting items).

use std::borrow::Cow;
use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use tokio::time::Instant;

use crate::slots::{Found, Numbered, SlotRef, Slots};

/// What the waiting set records per item.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WaitMeta {
    /// `None` once the slot is released.
    ready_at: Option<Instant>,
    /// The sequence number of the item's live heap entry (never 0).
    seq: u64,
    /// The highest priority the item was parked with.
    priority: i32,
}

/// A heap entry. Ordered so that `BinaryHeap` (a max-heap) yields the earliest ready
/// time first, and among equal times the earliest `add_after` (FIFO).
struct Due<T> {
    ready_at: Instant,
    seq: u64,
    slot: SlotRef<T, Cell<WaitMeta>>,
}

impl<T> PartialEq for Due<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T> Eq for Due<T> {}

impl<T> PartialOrd for Due<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Due<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.ready_at, other.seq).cmp(&(self.ready_at, self.seq))
    }
}

/// Items waiting for their ready time.
pub(crate) struct Waiting<T> {
    /// Numbered index entries: this index is large and grows (see `IndexEntry`).
    items: Slots<T, Cell<WaitMeta>, Numbered>,
    heap: BinaryHeap<Due<T>>,
    /// The next heap entry's sequence number; 0 is never used.
    next_seq: u64,
}

/// Stale heap entries tolerated before a rebuild, beyond one per live item.
const STALE_SLACK: usize = 1024;

impl<T: Clone + Eq + 'static> Waiting<T> {
    pub(crate) fn new() -> Self {
        Self {
            items: Slots::new(),
            heap: BinaryHeap::new(),
            next_seq: 1,
        }
    }

    /// Number of waiting items.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    fn is_live(&self, due: &Due<T>) -> bool {
        self.items.get(due.slot).meta.get().seq == due.seq
    }

    /// Parks `item` (hashed to `hash`) until `ready_at`, to be added at `priority`;
    /// an item already waiting keeps the earlier of its two ready times and the
    /// higher of its two priorities. Returns whether the item is now the first to
    /// become ready (then the timer task must be told), and the caller's item if it
    /// was not stored (to be dropped after unlocking).
    pub(crate) fn insert<'k>(
        &mut self,
        hash: u64,
        item: Cow<'k, T>,
        ready_at: Instant,
        priority: i32,
    ) -> (bool, Option<Cow<'k, T>>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut meta = WaitMeta {
            ready_at: Some(ready_at),
            seq,
            priority,
        };
        let (slot, unused) = match self.items.find_or_insert(hash, item) {
            Found::Inserted(slot) => {
                self.items.get(slot).meta.set(meta);
                (slot, None)
            }
            Found::Existing(slot, duplicate) => {
                let stored = self.items.get(slot);
                let old = stored.meta.get();
                meta.priority = old.priority.max(priority);
                if old.ready_at.is_some_and(|at| at <= ready_at) {
                    // Already due earlier (or then): at most the priority changes.
                    if meta.priority != old.priority {
                        stored.meta.set(WaitMeta {
                            priority: meta.priority,
                            ..old
                        });
                    }
                    return (false, Some(duplicate));
                }
                // Earlier now: the old heap entry goes stale.
                stored.meta.set(meta);
                if self.heap.len() > 2 * self.items.len() + STALE_SLACK {
                    let items = &self.items;
                    self.heap
                        .retain(|due| items.get(due.slot).meta.get().seq == due.seq);
                }
                (slot, Some(duplicate))
            }
        };
        self.heap.push(Due {
            ready_at,
            seq,
            slot,
        });
        let is_head = self.heap.peek().is_some_and(|top| top.seq == seq);
        (is_head, unused)
    }

    /// Moves every item due at `now` into `due` (earliest first, with its hash and
    /// priority) and returns when the next one is due, if any is left.
    #[allow(unsafe_code)]
    pub(crate) fn pop_due(
        &mut self,
        now: Instant,
        due: &mut Vec<(u64, T, i32)>,
    ) -> Option<Instant> {
        while let Some(top) = self.heap.peek() {
            if !self.is_live(top) {
                self.heap.pop();
                continue;
            }
            if top.ready_at > now {
                return Some(top.ready_at);
            }
            let slot = self.heap.pop().expect("peeked").slot;
            self.items.unindex(slot);
            let stored = self.items.get(slot);
            let priority = stored.meta.get().priority;
            stored.meta.set(WaitMeta::default());
            let hash = stored.hash();
            // SAFETY: the waiting set never hands out `key_ptr`s. Run by the tests
            // below (`stale_entries_stay_bounded`,
            // `keeps_the_earlier_time_and_the_higher_priority`).
            due.push((hash, unsafe { self.items.release(slot) }, priority));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;
    use std::time::Duration;

    use super::*;
    use crate::queue::FastState;

    fn insert(w: &mut Waiting<u32>, hasher: &FastState, k: u32, at: Instant) -> bool {
        w.insert(hasher.hash_one(k), Cow::Owned(k), at, 0).0
    }

    #[test]
    fn stale_entries_stay_bounded() {
        // One hasher for all inserts: equal items must hash alike.
        let hasher = FastState::default();
        let mut w = Waiting::new();
        let t0 = Instant::now();
        for k in 0..10u32 {
            let hash = hasher.hash_one(k);
            w.insert(hash, Cow::Owned(k), t0 + Duration::from_secs(1_000_000), 0);
        }
        // Move item 0 earlier 100,000 times: each move leaves a stale entry.
        let hash = hasher.hash_one(0u32);
        for i in 0..100_000u64 {
            let at = t0 + Duration::from_secs(1_000_000) - Duration::from_micros(i + 1);
            w.insert(hash, Cow::Owned(0), at, 0);
            assert!(w.heap.len() <= 2 * w.len() + STALE_SLACK + 1);
        }
        assert_eq!(w.len(), 10);
        let mut due = Vec::new();
        assert!(w.pop_due(t0, &mut due).is_some());
        assert!(due.is_empty());
        assert_eq!(
            w.pop_due(t0 + Duration::from_secs(2_000_000), &mut due),
            None
        );
        let mut keys: Vec<u32> = due.into_iter().map(|(_, k, _)| k).collect();
        assert_eq!(keys[0], 0, "moved earliest");
        keys.sort_unstable();
        assert_eq!(keys, (0..10).collect::<Vec<_>>(), "each item once");
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn keeps_the_earlier_time_and_the_higher_priority() {
        let mut w = Waiting::new();
        let h = FastState::default();
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut park = |k: u32, at, p| w.insert(h.hash_one(k), Cow::Owned(k), at, p).0;
        park(1, t0 + 10 * s, 0);
        park(1, t0 + 20 * s, 5); // later: only the priority is taken
        park(2, t0 + 10 * s, 7);
        park(2, t0 + 5 * s, -100); // earlier: the time is taken, the priority kept
        let mut due = Vec::new();
        assert_eq!(w.pop_due(t0 + 30 * s, &mut due), None);
        let got: Vec<(u32, i32)> = due.into_iter().map(|(_, k, p)| (k, p)).collect();
        assert_eq!(got, [(2, 7), (1, 5)]);
    }

    #[test]
    fn new_head_is_reported() {
        let mut w = Waiting::new();
        let h = FastState::default();
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        assert!(insert(&mut w, &h, 1, t0 + 10 * s), "first item");
        assert!(!insert(&mut w, &h, 2, t0 + 20 * s), "later than the head");
        assert!(insert(&mut w, &h, 3, t0 + 5 * s), "earlier than the head");
        assert!(
            !insert(&mut w, &h, 3, t0 + 7 * s),
            "a later time is ignored"
        );
        assert_eq!(w.len(), 3);
    }
}
