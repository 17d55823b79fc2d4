//! The queue's view of the indexer: client-go's `KeyListerGetter`, passed to both
//! FIFOs as their `KnownObjects` (`delta_fifo.go`).
//!
//! A queue only sees the changes that pass through it; what the informer has already
//! applied is in the indexer. Three decisions need that state, so both queues are
//! handed the indexer as their *known objects*:
//!
//! * a **replace** (a relist) tombstones every known key the new list lacks: the
//!   object was deleted while the watch was down ([`crate::replacement`]);
//! * a **resync** queues a `Sync` for every known object with nothing queued;
//! * the [`DeltaFifo`](crate::DeltaFifo) drops a watch `DELETED` for an object that
//!   is neither known nor queued (the [`RealFifo`](crate::RealFifo) delivers it anyway).
//!
//! The trait asks for no more than those need (keys, and one object by key), so tests
//! can stand in for the indexer with a few lines.

use std::sync::Arc;

use crate::store::Indexer;

/// What a FIFO asks the indexer: client-go's `KeyListerGetter`.
pub trait KeyListerGetter<K>: Send + Sync {
    /// Every key the indexer holds.
    fn list_keys(&self) -> Vec<String>;
    /// The object under `key`.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>>;
    /// Whether it holds nothing (a replace that starts from nothing need not track
    /// which keys it listed).
    fn is_empty(&self) -> bool {
        self.list_keys().is_empty()
    }
}

impl<K: Send + Sync + 'static> KeyListerGetter<K> for Indexer<K> {
    fn list_keys(&self) -> Vec<String> {
        Indexer::list_keys(self)
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        Indexer::get_by_key(self, key)
    }
    fn is_empty(&self) -> bool {
        Indexer::is_empty(self)
    }
}
