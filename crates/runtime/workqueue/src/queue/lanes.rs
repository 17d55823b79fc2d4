//! The line of queued items, by priority: one FIFO lane per priority in use, the
//! highest priority first, FIFO within a lane, with a share of hand-outs kept for
//! items passed over (the starvation bound below).
//!
//! # Layout, and why
//!
//! A queue that nobody gives a priority to must cost what it did before priorities
//! existed (the single-worker cycle is benchmarked against client-go), so the lane of
//! priority 0 ([`DEFAULT`](crate::priority::DEFAULT)) is a plain field, always there,
//! and the other lanes live in a small vector sorted by priority, usually empty. With
//! no other lane, a push or pop is a `VecDeque` push or pop plus a comparison or two
//! (the lane check, the ticket below).
//! controller-runtime keeps its ready items in a B-tree ordered by (priority, add
//! counter) instead; a tree costs a search on every add and get, where a lane per
//! priority costs one only when several priorities are in use, and then a scan of a
//! handful of lanes.
//!
//! # Raising a queued item lazily
//!
//! When a queued item is added again at a higher priority it moves to the end of the
//! higher lane. Finding and removing its entry in the old lane would be O(n), so
//! instead a new entry goes into the higher lane and the old one goes *stale*: every
//! entry carries a ticket, the item's [`Meta`] records the ticket of its one live
//! entry, and [`Lanes::pop`] drops entries whose ticket no longer matches. Tickets
//! come from one 64-bit counter per queue and never repeat, which is what makes a
//! stale entry harmless even after its item was handed out, finished and its slot
//! freed and reused by another item: the reused slot's ticket is newer than any
//! entry made before. A stale entry only ever reads its slot's `Meta` (a freed slot
//! keeps its memory until the queue is dropped; see the `slots` module), never the
//! item.
//!
//! The number of stale entries is counted, so [`Lanes::len`] (entries minus stale
//! ones) is exact, and the lanes are compacted when stale entries outnumber the live
//! ones by more than [`STALE_SLACK`], so memory stays O(queued items) however often
//! priorities are raised (the delaying queue's heap uses the same scheme).
//!
//! # The starvation bound
//!
//! Strictly highest-first, an item below the top lane waits for as long as higher
//! items keep arriving faster than the workers take them: for ever, with a steady
//! stream of watch events or requeues (controller-runtime issue 3496, where initial-
//! list items at `LowPriority` were never reconciled). So the lanes count the
//! hand-outs in a row that passed over a queued lower-priority item, and once that
//! count exceeds [`QueueConfig::starvation_bound`](crate::QueueConfig) (N), the next
//! hand-out goes to the item that has waited longest among those below the top lane
//! instead, and the count starts again. Items below the top lane so get at least one
//! hand-out in N + 1, oldest first (tickets only grow, so the smallest ticket at the
//! head of a lower lane is the earliest in line), and an item with k such items
//! ahead of it is handed out within (k + 1)(N + 1) hand-outs, however busy the upper
//! lanes are. Nothing changes while no lower item waits: a user's change after a
//! restart still goes ahead of the initial list (the count is 0 while only the list
//! is being worked through), and the fast path (one lane, no stale head) only
//! resets the count.

use std::collections::VecDeque;

use super::Meta;
use crate::slots::{SlotRef, Slots};

/// Stale entries tolerated before a compaction, beyond one per live entry.
const STALE_SLACK: usize = 1024;

/// One place in line: the item's slot and the ticket this entry was made with.
struct Entry<T> {
    slot: SlotRef<T, Meta>,
    ticket: u64,
}

/// A lane other than the default one.
struct Lane<T> {
    priority: i32,
    fifo: VecDeque<Entry<T>>,
}

/// The queued items, in the order `get` hands them out; see the [module docs](self).
pub(super) struct Lanes<T> {
    /// Priority 0.
    default: VecDeque<Entry<T>>,
    /// Every other priority that has queued items (or had them since the lane was
    /// last found empty), highest first.
    others: Vec<Lane<T>>,
    /// Entries, in all lanes, whose item has moved to a higher lane since.
    stale: usize,
    /// The ticket of the next entry; 0 is never used (a fresh slot's `Meta` has 0).
    next_ticket: u64,
    /// Hand-outs in a row that passed over a queued item of a lower priority (a
    /// hand-out from the only lane breaks the row).
    passed_over: u32,
    /// The starvation bound (see the module docs); 0: none, strictly highest first.
    bound: u32,
}

/// A lane, by where it is.
#[derive(Clone, Copy)]
enum LaneId {
    Default,
    Other(usize),
}

/// Whether `entry` is its item's live entry.
fn is_live<T: Clone + Eq + 'static>(items: &Slots<T, Meta>, entry: &Entry<T>) -> bool {
    // A stale entry's slot may be free or hold another item by now: only its `Meta`
    // is read, and its ticket is never an older entry's (see the module docs).
    items.get(entry.slot).meta.ticket.get() == entry.ticket
}

impl<T: Clone + Eq + 'static> Lanes<T> {
    /// Empty lanes handing out with the starvation `bound` (0: none).
    pub(super) fn new(bound: u32) -> Self {
        Self {
            default: VecDeque::new(),
            others: Vec::new(),
            stale: 0,
            next_ticket: 1,
            passed_over: 0,
            bound,
        }
    }

    /// Number of queued items (live entries).
    pub(super) fn len(&self) -> usize {
        let others: usize = self.others.iter().map(|lane| lane.fifo.len()).sum();
        self.default.len() + others - self.stale
    }

    /// Puts `slot` at the end of the lane for `priority`; returns the entry's ticket,
    /// which the caller stores as the item's `Meta::ticket` (and `priority` as its
    /// `Meta::priority`).
    #[inline]
    pub(super) fn push(&mut self, slot: SlotRef<T, Meta>, priority: i32) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let entry = Entry { slot, ticket };
        if priority == crate::priority::DEFAULT {
            self.default.push_back(entry);
        } else {
            self.other_lane(priority).push_back(entry);
        }
        ticket
    }

    /// The lane for `priority` (not the default one), made if missing.
    fn other_lane(&mut self, priority: i32) -> &mut VecDeque<Entry<T>> {
        // Sorted highest first: compare the other way round.
        let i = match self
            .others
            .binary_search_by(|lane| priority.cmp(&lane.priority))
        {
            Ok(i) => i,
            Err(i) => {
                let fifo = VecDeque::new();
                self.others.insert(i, Lane { priority, fifo });
                i
            }
        };
        &mut self.others[i].fifo
    }

    /// Moves the queued item in `slot` to the end of the lane for `priority`, higher
    /// than its current one (updating its `Meta`); its old entry goes stale.
    pub(super) fn raise(&mut self, items: &Slots<T, Meta>, slot: SlotRef<T, Meta>, priority: i32) {
        let meta = &items.get(slot).meta;
        debug_assert!(priority > meta.priority.get());
        meta.ticket.set(self.push(slot, priority));
        meta.priority.set(priority);
        self.stale += 1;
        if self.stale > self.len() + STALE_SLACK {
            self.compact(items);
        }
    }

    /// Drops every stale entry and every empty lane but the default one.
    fn compact(&mut self, items: &Slots<T, Meta>) {
        self.default.retain(|e| is_live(items, e));
        for lane in &mut self.others {
            lane.fifo.retain(|e| is_live(items, e));
        }
        self.others.retain(|lane| !lane.fifo.is_empty());
        self.stale = 0;
    }

    /// Takes the first live entry of the highest non-empty lane, and returns its slot.
    #[inline]
    pub(super) fn pop(&mut self, items: &Slots<T, Meta>) -> Option<SlotRef<T, Meta>> {
        // The fast path: only the default lane, and its first entry is live.
        if self.others.is_empty() {
            let entry = self.default.pop_front()?;
            if is_live(items, &entry) {
                // One lane: nothing passed over, the row is broken.
                self.passed_over = 0;
                return Some(entry.slot);
            }
            self.stale -= 1;
        }
        self.pop_by_priority(items)
    }

    /// [`pop`](Self::pop) past stale entries, or with other lanes than the default
    /// one: the head of the highest lane with items (the lanes above priority 0, the
    /// default lane, then the lanes below), or, once the starvation bound is reached,
    /// the oldest head of the lanes below it. Other lanes found empty are dropped
    /// (the default lane stays).
    #[cold]
    fn pop_by_priority(&mut self, items: &Slots<T, Meta>) -> Option<SlotRef<T, Meta>> {
        // Every head live, every other lane non-empty: the choice below is then only
        // about heads.
        Self::drop_stale_heads(&mut self.default, &mut self.stale, items);
        for lane in &mut self.others {
            Self::drop_stale_heads(&mut lane.fifo, &mut self.stale, items);
        }
        self.others.retain(|lane| !lane.fifo.is_empty());
        // The lanes with items, highest first.
        let above = self.others.partition_point(|lane| lane.priority > 0);
        let default = (!self.default.is_empty()).then_some(LaneId::Default);
        let mut order = (0..above)
            .map(LaneId::Other)
            .chain(default)
            .chain((above..self.others.len()).map(LaneId::Other));
        let top = order.next()?;
        let mut chosen = top;
        if order.clone().next().is_none() {
            self.passed_over = 0;
        } else {
            self.passed_over += 1;
            if self.bound > 0 && self.passed_over > self.bound {
                // The longest waiting of the items passed over: the smallest ticket.
                chosen = order.min_by_key(|&id| self.head_ticket(id)).unwrap_or(top);
                self.passed_over = 0;
            }
        }
        let entry = self.lane(chosen).pop_front()?;
        if let LaneId::Other(i) = chosen
            && self.others[i].fifo.is_empty()
        {
            self.others.remove(i);
        }
        Some(entry.slot)
    }

    /// The ticket of the head of lane `id` (which must exist).
    fn head_ticket(&self, id: LaneId) -> u64 {
        let lane = match id {
            LaneId::Default => &self.default,
            LaneId::Other(i) => &self.others[i].fifo,
        };
        lane.front().map_or(u64::MAX, |entry| entry.ticket)
    }

    /// The lane `id` names (which must exist).
    fn lane(&mut self, id: LaneId) -> &mut VecDeque<Entry<T>> {
        match id {
            LaneId::Default => &mut self.default,
            LaneId::Other(i) => &mut self.others[i].fifo,
        }
    }

    /// Drops the stale entries at the front of `fifo`.
    fn drop_stale_heads(fifo: &mut VecDeque<Entry<T>>, stale: &mut usize, items: &Slots<T, Meta>) {
        while fifo.front().is_some_and(|entry| !is_live(items, entry)) {
            fifo.pop_front();
            *stale -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::Queue;
    use crate::priority::{DEFAULT, LOW};

    impl<T> Lanes<T> {
        /// Entries in all lanes, stale ones included.
        fn entries(&self) -> usize {
            self.default.len() + self.others.iter().map(|l| l.fifo.len()).sum::<usize>()
        }
    }

    #[test]
    fn stale_entries_in_a_starved_lane_stay_bounded() {
        // No starvation bound: the low lane is never reached.
        let q: Queue<u32> =
            Queue::with_config(crate::QueueConfig::default().with_starvation_bound(None));
        // A low-priority item keeps the low lane from ever being reached while the
        // default lane has items, so its stale entries are never popped.
        q.add_at(Cow::Owned(0), LOW);
        for _ in 0..10_000 {
            // Each cycle: in line low, raised (a stale entry left in the low lane),
            // handed out, done and freed.
            q.add_at(Cow::Owned(1), LOW);
            q.add_at(Cow::Owned(1), DEFAULT);
            let item = q.try_get().unwrap();
            assert_eq!((*item, item.priority()), (1, DEFAULT));
            drop(item);
            let st = q.shared.state.lock();
            assert_eq!(st.lanes.len(), 1);
            // One live entry, and at most as many stale ones as items were queued
            // at a raise (2), plus the slack.
            assert!(
                st.lanes.entries() <= 1 + 2 + STALE_SLACK,
                "{}",
                st.lanes.entries()
            );
        }
        let item = q.try_get().unwrap();
        assert_eq!((*item, item.priority()), (0, LOW));
        drop(item);
        assert!(q.try_get().is_none());
        assert_eq!(q.shared.state.lock().lanes.entries(), 0);
    }

    #[test]
    fn empty_lanes_other_than_the_default_are_dropped() {
        let q: Queue<i32> = Queue::new();
        for p in [5, -5, 10, 0, -100] {
            q.add_at(Cow::Owned(p), p);
        }
        assert_eq!(q.shared.state.lock().lanes.others.len(), 4);
        let order: Vec<i32> = std::iter::from_fn(|| q.try_get().map(|i| i.into_inner())).collect();
        assert_eq!(order, [10, 5, 0, -5, -100]);
        let st = q.shared.state.lock();
        assert!(st.lanes.others.is_empty());
        assert_eq!(st.lanes.len(), 0);
    }
}
