//! The queue between a reflector and its informer, as a choice of the three client-go
//! has had: the [`RealFifo`] with atomic events (client-go 1.36's `AtomicFIFO` and
//! `UnlockWhileProcessingFIFO`, both beta and on by default: this workspace's default
//! too), the plain [`RealFifo`] (events in arrival order, client-go's informers from
//! 1.33 to 1.35) or the classic [`DeltaFifo`] (deltas grouped per key, kept for
//! learning and comparison).
//!
//! All take the same calls from the reflector (add, update, delete, a paged replace,
//! bookmarks, resync) and hand the informer the same shape ([`Popped`], plus "is this
//! the initial list"), so [`InformerQueue`] simply forwards to the one it holds. See
//! the two modules for how they differ and why client-go switched.

use std::sync::Arc;

use kube::Resource;

use crate::delta::Delta;

use crate::delta_fifo::DeltaFifo;
use crate::error::Result;
use crate::real_fifo::{Popped, RealFifo};
use crate::replacement::Replacement;

/// Which queue an informer uses, named after the client-go feature gates that pick it.
/// See the [module docs](self).
///
/// | kind | client-go | a relist is | a resync is | bookmarks | `pop` holds the lock |
/// |---|---|---|---|---|---|
/// | [`AtomicFifo`](Self::AtomicFifo) (default) | `InOrderInformers` + `AtomicFIFO` + `UnlockWhileProcessingFIFO` (1.36+) | one `ReplacedAll` entry | one `SyncAll` entry | queued | no |
/// | [`RealFifo`](Self::RealFifo) | `InOrderInformers`, `AtomicFIFO` off (1.33-1.35) | tombstones, then a `Replaced` event per object | a `Sync` event per object | dropped | yes |
/// | [`DeltaFifo`](Self::DeltaFifo) | `InOrderInformers` off (before 1.33) | `Replaced` deltas per key, then tombstones | `Sync` deltas | dropped | yes |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueKind {
    /// [`DeltaFifo`]: deltas grouped per key, keys in first-queued order.
    DeltaFifo,
    /// [`RealFifo::new`]: every event in arrival order, a relist and a resync spelled
    /// out as events; the store has no resourceVersion (client-go answers `""` for
    /// `LastStoreSyncResourceVersion` without `AtomicFIFO`).
    RealFifo,
    /// [`RealFifo::new_atomic`] with
    /// [`with_unlock_while_processing`](RealFifo::with_unlock_while_processing): every
    /// event in arrival order, a relist applied as one unit, bookmarks queued, the
    /// queue unlocked while the informer applies. The default, as in client-go 1.36.
    #[default]
    AtomicFifo,
}

impl QueueKind {
    /// Whether the store's resourceVersion means "every change up to here is
    /// applied" with this queue, so the informer records it and hands handlers
    /// bookmarks: only with atomic events (client-go 1.36 likewise only answers
    /// `LastStoreSyncResourceVersion` under `AtomicFIFO`).
    pub fn tracks_store_version(self) -> bool {
        self == Self::AtomicFifo
    }
}

/// A [`DeltaFifo`] or a [`RealFifo`] (plain or atomic), behind one set of calls.
#[derive(Debug)]
pub enum InformerQueue<K> {
    /// Deltas grouped per key.
    Delta(DeltaFifo<K>),
    /// Events in arrival order (plain or atomic).
    Real(RealFifo<K>),
}

impl<K> From<DeltaFifo<K>> for InformerQueue<K> {
    fn from(fifo: DeltaFifo<K>) -> Self {
        Self::Delta(fifo)
    }
}

impl<K> From<RealFifo<K>> for InformerQueue<K> {
    fn from(fifo: RealFifo<K>) -> Self {
        Self::Real(fifo)
    }
}

/// Forwards a call to whichever queue is held.
macro_rules! forward {
    ($self:ident, $fifo:ident => $call:expr) => {
        match $self {
            InformerQueue::Delta($fifo) => $call,
            InformerQueue::Real($fifo) => $call,
        }
    };
}

impl<K: Resource + Send + Sync + 'static> InformerQueue<K> {
    /// Which kind this is.
    pub fn kind(&self) -> QueueKind {
        match self {
            Self::Delta(_) => QueueKind::DeltaFifo,
            Self::Real(fifo) if fifo.is_atomic() => QueueKind::AtomicFifo,
            Self::Real(_) => QueueKind::RealFifo,
        }
    }

    /// A watch `ADDED`.
    pub fn add(&self, obj: K) -> Result<()> {
        forward!(self, fifo => fifo.add(obj))
    }

    /// A watch `MODIFIED`.
    pub fn update(&self, obj: K) -> Result<()> {
        forward!(self, fifo => fifo.update(obj))
    }

    /// A watch `DELETED`.
    pub fn delete(&self, obj: K) -> Result<()> {
        forward!(self, fifo => fifo.delete(obj))
    }

    /// A whole list at once.
    pub fn replace(&self, list: Vec<K>) -> Result<()> {
        forward!(self, fifo => fifo.replace(list))
    }

    /// Starts a paged replace.
    pub fn begin_replace(&self) -> Replacement {
        forward!(self, fifo => fifo.begin_replace())
    }

    /// One page of a replace.
    pub fn replace_page(&self, replacement: &mut Replacement, page: Vec<K>) {
        forward!(self, fifo => fifo.replace_page(replacement, page))
    }

    /// Ends a paged replace (tombstones, initial population), without a
    /// resourceVersion.
    pub fn finish_replace(&self, replacement: Replacement) -> Result<()> {
        forward!(self, fifo => fifo.finish_replace(replacement))
    }

    /// Ends a paged replace of a list at `resource_version`, and records that version
    /// behind it: an atomic [`RealFifo`] keeps it in its `ReplacedAll`, so the store
    /// takes the list and its version in one step (client-go's `Replace(list, rv)`);
    /// the other queues drop it, as they drop every bookmark.
    pub fn finish_replace_at(
        &self,
        replacement: Replacement,
        resource_version: &str,
    ) -> Result<()> {
        match self {
            Self::Real(fifo) => fifo.finish_replace_at(replacement, Some(resource_version)),
            Self::Delta(fifo) => fifo.finish_replace(replacement),
        }
    }

    /// The source reached `resource_version`: queued in order by an atomic
    /// [`RealFifo`] (see [`RealFifo::bookmark`]); dropped by a plain one, as
    /// client-go's is, and by a [`DeltaFifo`], which regroups events per key and so
    /// has no point where "everything before" holds.
    pub fn bookmark(&self, resource_version: &str) {
        if let Self::Real(fifo) = self {
            fifo.bookmark(resource_version);
        }
    }

    /// Queues resyncs for known objects with nothing queued.
    pub fn resync(&self) {
        forward!(self, fifo => fifo.resync())
    }

    /// Pops the next key's deltas (one event from a [`RealFifo`]) as `(key, deltas,
    /// is_in_initial_list)`: the shape of the queues that only hold events, a
    /// [`DeltaFifo`] and a plain [`RealFifo`] (the tutorials and the reflector's tests
    /// pop them this way). An atomic FIFO's whole-queue entries do not fit it: a
    /// `ReplacedAll` comes as the `Replaced` deltas of its objects under an empty key
    /// (no tombstones: those are the consumer's to find), a `SyncAll` as no delta.
    /// Consumers of an atomic FIFO use [`pop_batch`](Self::pop_batch), which hands them
    /// over as they are. `None` once closed and empty.
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(&Arc<str>, Vec<Delta<K>>, bool) -> R,
    ) -> Option<R> {
        match self {
            Self::Delta(fifo) => fifo.pop(process).await,
            Self::Real(fifo) => {
                fifo.pop(|popped, initial| match popped {
                    Popped::Events(batch) => {
                        let key = batch
                            .first()
                            .map(|(key, _)| key.clone())
                            .unwrap_or_else(|| Arc::from(""));
                        process(
                            &key,
                            batch.into_iter().map(|(_, delta)| delta).collect(),
                            initial,
                        )
                    }
                    Popped::ReplacedAll(all) => {
                        let deltas = all
                            .objects
                            .into_iter()
                            .map(|(_, obj)| Delta::Replaced(obj))
                            .collect();
                        process(&Arc::from(""), deltas, initial)
                    }
                    Popped::SyncAll => process(&Arc::from(""), Vec::new(), initial),
                })
                .await
            }
        }
    }

    /// Pops up to `max` events and hands them over: a [`RealFifo`] batch of distinct
    /// keys, or a lone whole-queue entry ([`RealFifo::pop_batch`], client-go's
    /// `InOrderInformersBatchProcess`), or one key's deltas from a [`DeltaFifo`] as
    /// `(key, delta)` pairs. Whether the queue's lock is held meanwhile is the
    /// queue's choice (see [`QueueKind`]). `None` once closed and empty.
    pub async fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(Popped<K>, bool) -> R,
    ) -> Option<R> {
        match self {
            Self::Real(fifo) => fifo.pop_batch(max, process).await,
            Self::Delta(fifo) => {
                fifo.pop(|key, deltas, initial| {
                    let batch = deltas.into_iter().map(|d| (key.clone(), d)).collect();
                    process(Popped::Events(batch), initial)
                })
                .await
            }
        }
    }

    /// Whether the initial list has been popped.
    pub fn has_synced(&self) -> bool {
        forward!(self, fifo => fifo.has_synced())
    }

    /// Closes the queue.
    pub fn close(&self) {
        forward!(self, fifo => fifo.close())
    }

    /// Queued entries (keys for a DeltaFIFO, events for a RealFIFO).
    pub fn len(&self) -> usize {
        forward!(self, fifo => fifo.len())
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
