//! How far a queue is through its initial list, which is what `has_synced` means:
//! client-go's `populated` and `initialPopulationCount` fields and their
//! `checkSynced_locked`, which `DeltaFIFO` and `RealFIFO` each carry.
//!
//! An informer is synced once everything from its first list has been popped *and
//! applied*: only then does its cache hold every object that existed. The first
//! replace (or, if none came first, any add, update or delete) marks the queue
//! *populated* and counts the entries it queued; every pop of one of them counts down.
//! What an entry is differs between the queues: a key for the
//! [`DeltaFifo`](crate::DeltaFifo), which groups a key's deltas into one entry, and an
//! event for the [`RealFifo`](crate::RealFifo).

use tokio::sync::watch;

/// How far a queue is through its initial list: what `has_synced` means, shared by
/// [`DeltaFifo`](crate::DeltaFifo) and [`RealFifo`](crate::RealFifo).
#[derive(Debug, Default)]
pub(crate) struct Population {
    /// Whether a first replace (or any add/update/delete) happened.
    pub(crate) populated: bool,
    /// Entries of the first replace not yet popped (keys for a DeltaFIFO, events for
    /// a RealFIFO).
    pub(crate) initial_count: usize,
    /// Whether the synced signal was sent (once); saves touching the channel on every
    /// pop.
    signalled: bool,
}

impl Population {
    /// client-go's `HasSynced`: populated, and the initial list fully popped.
    pub(crate) fn has_synced(&self) -> bool {
        self.populated && self.initial_count == 0
    }

    /// Whether what is popped now belongs to the initial list.
    pub(crate) fn is_in_initial_list(&self) -> bool {
        !self.has_synced()
    }

    /// Sends `true` on `synced` the first time the queue is synced, so waiters need
    /// not poll.
    pub(crate) fn signal_if_synced(&mut self, synced: &watch::Sender<bool>) {
        if !self.signalled && self.has_synced() {
            self.signalled = true;
            synced.send_replace(true);
        }
    }
}
