//! [`Meta`]: what the queue records about each item it stores.

use std::cell::Cell;

use super::ItemState;

/// The queue's bookkeeping for one stored item (a slot): a `Cell` per field, so each
/// operation reads and writes only the fields it needs (copying the whole struct in
/// and out of one `Cell` cost a single-worker cycle several instructions per field).
#[derive(Debug)]
pub(crate) struct Meta {
    /// Where the item stands.
    pub(super) state: Cell<ItemState>,
    /// The item is no longer in the index (its processing is done) and waits only
    /// for the last [`WorkItem`](crate::WorkItem) pointing at it to go away.
    pub(super) finished: Cell<bool>,
    /// Counts the item's handouts; a `WorkItem` finishes only its own.
    pub(super) handout: Cell<u32>,
    /// Live `WorkItem`s pointing at the stored item: it is freed only at 0.
    pub(super) guards: Cell<u32>,
    /// `Queued`: the priority of the lane the item waits in. `ProcessingDirty`: the
    /// highest priority it was added with since it was handed out, the one it goes
    /// back in line with. `Processing`: the priority it was handed out with.
    pub(super) priority: Cell<i32>,
    /// `Queued`: the ticket of the item's live entry in line; older entries pointing
    /// at this slot are stale (see the `lanes` module). Otherwise the last one used,
    /// also after the slot is freed (0 for a slot never used).
    pub(super) ticket: Cell<u64>,
}

impl Default for Meta {
    fn default() -> Self {
        Self {
            state: Cell::new(ItemState::Queued),
            finished: Cell::new(false),
            handout: Cell::new(0),
            guards: Cell::new(0),
            priority: Cell::new(crate::priority::DEFAULT),
            ticket: Cell::new(0),
        }
    }
}

impl Meta {
    /// Sets up the meta of a newly stored item, queued at `priority` with the entry
    /// of `ticket`. `guards` is already 0 (a slot is freed only then) and `handout`
    /// carries on counting: no `WorkItem` of the slot's earlier items is left to
    /// compare with it.
    #[inline]
    pub(super) fn init_queued(&self, priority: i32, ticket: u64) {
        debug_assert_eq!(self.guards.get(), 0);
        self.state.set(ItemState::Queued);
        self.finished.set(false);
        self.priority.set(priority);
        self.ticket.set(ticket);
    }
}
