//! The queue between a reflector and its informer, as a choice: client-go's
//! [`RealFifo`] (events in arrival order, what client-go's informers use since 1.33) or
//! the classic [`DeltaFifo`] (deltas grouped per key, kept for learning and comparison).
//!
//! Both take the same calls from the reflector (add, update, delete, a paged replace,
//! resync) and hand the informer the same shape (a key and its deltas, plus "is this
//! the initial list"), so [`InformerQueue`] simply forwards to the one it holds. See
//! the two modules for how they differ and why client-go switched.

use std::sync::Arc;

use kube::Resource;

use crate::delta::Delta;
use crate::delta_fifo::DeltaFifo;
use crate::error::Result;
use crate::real_fifo::RealFifo;
use crate::replacement::Replacement;

/// Which queue an informer uses. See the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueKind {
    /// [`DeltaFifo`]: deltas grouped per key, keys in first-queued order.
    DeltaFifo,
    /// [`RealFifo`]: every event in arrival order. The default, as in client-go since
    /// 1.33; it syncs as fast as the DeltaFIFO with the same peak memory
    /// (docs/benchmarks.md).
    #[default]
    RealFifo,
}

/// A [`DeltaFifo`] or a [`RealFifo`], behind one set of calls.
#[derive(Debug)]
pub enum InformerQueue<K> {
    /// Deltas grouped per key.
    Delta(DeltaFifo<K>),
    /// Events in arrival order.
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

    /// Ends a paged replace (tombstones, initial population).
    pub fn finish_replace(&self, replacement: Replacement) -> Result<()> {
        forward!(self, fifo => fifo.finish_replace(replacement))
    }

    /// The source reached `resource_version`: queued in order by a [`RealFifo`]
    /// (see [`RealFifo::bookmark`]); ignored by a [`DeltaFifo`], which regroups events
    /// per key and so has no point where "everything before" holds (client-go emits
    /// bookmarks from its in-order FIFO only).
    pub fn bookmark(&self, resource_version: &str) {
        if let Self::Real(fifo) = self {
            fifo.bookmark(resource_version);
        }
    }

    /// Queues resyncs for known objects with nothing queued.
    pub fn resync(&self) {
        forward!(self, fifo => fifo.resync())
    }

    /// Pops the next key's deltas (one delta for a [`RealFifo`]) under the queue's
    /// lock; `None` once closed and empty.
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(&Arc<str>, Vec<Delta<K>>, bool) -> R,
    ) -> Option<R> {
        forward!(self, fifo => fifo.pop(process).await)
    }

    /// Pops up to `max` entries under the queue's lock and hands them over as
    /// `(key, delta)` pairs in order: a [`RealFifo`] batch of distinct keys
    /// ([`RealFifo::pop_batch`], client-go's `InOrderInformersBatchProcess`), or one
    /// key's deltas from a [`DeltaFifo`]. `None` once closed and empty.
    pub async fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(Vec<(Arc<str>, Delta<K>)>, bool) -> R,
    ) -> Option<R> {
        match self {
            Self::Real(fifo) => fifo.pop_batch(max, process).await,
            Self::Delta(fifo) => {
                fifo.pop(|key, deltas, initial| {
                    let batch = deltas.into_iter().map(|d| (key.clone(), d)).collect();
                    process(batch, initial)
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
