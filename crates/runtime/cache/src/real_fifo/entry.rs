//! What a [`RealFifo`](super::RealFifo) holds and hands out: single events, and in
//! atomic mode the two entries that stand for a whole operation (client-go's
//! `ReplacedAll` and `SyncAll` delta types, with `ReplacedAllInfo` and `SyncAllInfo`).
//!
//! client-go adds these two to its `DeltaType` and carries them in the same `Delta`
//! slot as an object. Here they are entries of their own, next to [`Delta`], so the
//! DeltaFIFO and every consumer of a plain delta never have to handle a "delta" that
//! is really a whole list.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::delta::Delta;
use crate::keys::KeyMap;
use crate::replacement::Queued;

/// A whole (re)list as one queue entry: client-go's `ReplacedAllInfo`, queued by an
/// atomic [`RealFifo`](super::RealFifo) instead of one `Replaced` event per object
/// and the tombstones. The consumer compares it with its store and applies it as one
/// unit (see [`crate::real_fifo`]).
#[derive(Debug)]
pub struct ReplacedAll<K> {
    /// The list's resourceVersion (`None` when the caller gave none, as
    /// [`RealFifo::replace`](super::RealFifo::replace) does): the store's version once
    /// the list is in it.
    pub resource_version: Option<Arc<str>>,
    /// Every listed object, transformed, with its key, in list order. The objects are
    /// moved into the store from here, never copied.
    pub objects: Vec<(Arc<str>, Arc<K>)>,
}

/// What one pop hands the consumer, with whether it belongs to the initial list.
#[derive(Debug)]
pub enum Popped<K> {
    /// Consecutive events with their keys, in arrival order: one for
    /// [`pop`](super::RealFifo::pop), up to the batch size of distinct keys for
    /// [`pop_batch`](super::RealFifo::pop_batch) (client-go's `PopBatch`). A bookmark
    /// (empty key) always comes alone, as client-go never batches one.
    Events(Vec<(Arc<str>, Delta<K>)>),
    /// A whole list (atomic mode only): client-go's `ReplacedAll` delta.
    ReplacedAll(ReplacedAll<K>),
    /// Re-deliver every object in the store to the handlers due for a resync (atomic
    /// mode only): client-go's `SyncAll` delta.
    SyncAll,
}

/// One queue entry.
#[derive(Debug)]
pub(crate) enum Item<K> {
    /// An event for a key (a bookmark's key is empty).
    Event(Arc<str>, Delta<K>),
    /// See [`ReplacedAll`].
    ReplacedAll(ReplacedAll<K>),
    /// See [`Popped::SyncAll`].
    SyncAll,
}

impl<K> Item<K> {
    /// The event's key and delta, unless this is a bookmark or a whole-queue entry:
    /// what a replace's deletion detection and a resync look at, and what a batch may
    /// hold (client-go's `batchable`: every type but `Bookmark`, `ReplacedAll` and
    /// `SyncAll`).
    pub(crate) fn keyed_event(&self) -> Option<(&Arc<str>, &Delta<K>)> {
        match self {
            Self::Event(key, delta) if !matches!(delta, Delta::Bookmark(_)) => Some((key, delta)),
            _ => None,
        }
    }
}

/// The last queued event of every key, keys in first-queued order: how a replace reads
/// the queue (client-go's `lastQueuedItemForKey` and `queuedKeys`).
pub(crate) struct NewestPerKey<'a, K> {
    order: Vec<Arc<str>>,
    newest: KeyMap<&'a Delta<K>>,
}

impl<'a, K> NewestPerKey<'a, K> {
    pub(crate) fn of(items: &'a VecDeque<Item<K>>) -> Self {
        let mut order = Vec::new();
        let mut newest = KeyMap::default();
        for (key, delta) in items.iter().filter_map(Item::keyed_event) {
            if newest.insert(key.clone(), delta).is_none() {
                order.push(key.clone());
            }
        }
        Self { order, newest }
    }
}

impl<K> Queued<K> for NewestPerKey<'_, K> {
    fn newest_deltas<'a>(&'a self) -> impl Iterator<Item = (&'a Arc<str>, &'a Delta<K>)>
    where
        K: 'a,
    {
        self.order
            .iter()
            .filter_map(|key| self.newest.get(key).map(|delta| (key, *delta)))
    }

    fn is_queued(&self, key: &str) -> bool {
        self.newest.contains_key(key)
    }
}
