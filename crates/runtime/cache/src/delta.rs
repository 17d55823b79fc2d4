//! Deltas: what the queue between the reflector and the indexer carries, and what
//! `on_delete` receives. client-go's `Delta`, `DeltaType` and `DeletedFinalStateUnknown`.
//!
//! In client-go these live in `delta_fifo.go`, because the DeltaFIFO came first, and
//! `the_real_fifo.go` uses them from the same package. Here they are a module of their
//! own: both queues ([`DeltaFifo`](crate::DeltaFifo) and [`RealFifo`](crate::RealFifo)),
//! the informer that pops them and the handlers that receive the deletions speak this
//! vocabulary, and none of them should have to reach into one particular queue for it.
//!
//! A [`Delta`] is one change to one object: its kind ([`DeltaType`]) and the object's
//! state *after* the change, or, for a deletion, its final state. A deletion the
//! reflector never saw (the object vanished while the watch was down, and a relist no
//! longer contains it) has no final state: the queue makes up a
//! [`DeletedFinalStateUnknown`] tombstone carrying the last state the cache knew.

use std::sync::Arc;

/// The kind of change a [`Delta`] records: client-go's `DeltaType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The object was created (seen by a watch).
    Added,
    /// The object was changed (seen by a watch).
    Updated,
    /// The object was deleted, or went missing in a relist (tombstone).
    Deleted,
    /// The object was in a (re)list. Handlers see it as an add or an update.
    Replaced,
    /// A periodic resync of an unchanged object.
    Sync,
    /// The watch reached a resourceVersion: everything queued before it is at least
    /// that fresh. Only the atomic [`RealFifo`](crate::RealFifo) queues it (client-go
    /// queues bookmarks only with `AtomicFIFO`, "which avoids events propagating out of
    /// RV order during Replace and Resync"; a finished list carries its version in its
    /// `ReplacedAll`): a DeltaFIFO regroups events per key, so no point in it is
    /// "everything before", and a plain RealFIFO spells a relist out event by event.
    Bookmark,
}

/// An object that was deleted, but whose final state is unknown because the deletion
/// happened while the watch was disconnected: client-go's `DeletedFinalStateUnknown`.
///
/// `obj` is the last state the cache knew, which may be stale (or absent).
#[derive(Debug)]
pub struct DeletedFinalStateUnknown<K> {
    /// The deleted object's key.
    pub key: String,
    /// The last known state of the object, if the cache had one.
    pub obj: Option<Arc<K>>,
}

impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            obj: self.obj.clone(),
        }
    }
}

/// What `on_delete` receives: the deleted object as the watch reported it, or a
/// tombstone. client-go passes `interface{}` and makes every handler type-switch on
/// `DeletedFinalStateUnknown`; here the type says it.
#[derive(Debug)]
pub enum DeletedObject<K> {
    /// The object's final state, from a watch `DELETED` event.
    Object(Arc<K>),
    /// The object vanished during a watch gap; see [`DeletedFinalStateUnknown`].
    Tombstone(DeletedFinalStateUnknown<K>),
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Object(obj) => Self::Object(obj.clone()),
            Self::Tombstone(t) => Self::Tombstone(t.clone()),
        }
    }
}

impl<K> DeletedObject<K> {
    /// The best state we have of the deleted object: its final state, or the last
    /// state the cache knew for a tombstone.
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Self::Object(obj) => Some(obj),
            Self::Tombstone(t) => t.obj.as_ref(),
        }
    }

    /// Whether this is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::Tombstone(_))
    }
}

/// One change to one object: client-go's `Delta`.
#[derive(Debug)]
pub enum Delta<K> {
    /// See [`DeltaType::Added`].
    Added(Arc<K>),
    /// See [`DeltaType::Updated`].
    Updated(Arc<K>),
    /// See [`DeltaType::Deleted`].
    Deleted(DeletedObject<K>),
    /// See [`DeltaType::Replaced`].
    Replaced(Arc<K>),
    /// See [`DeltaType::Sync`].
    Sync(Arc<K>),
    /// See [`DeltaType::Bookmark`]: the resourceVersion reached.
    Bookmark(Arc<str>),
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Added(o) => Self::Added(o.clone()),
            Self::Updated(o) => Self::Updated(o.clone()),
            Self::Deleted(d) => Self::Deleted(d.clone()),
            Self::Replaced(o) => Self::Replaced(o.clone()),
            Self::Sync(o) => Self::Sync(o.clone()),
            Self::Bookmark(rv) => Self::Bookmark(rv.clone()),
        }
    }
}

impl<K> Delta<K> {
    /// The kind of change.
    pub fn delta_type(&self) -> DeltaType {
        match self {
            Self::Added(_) => DeltaType::Added,
            Self::Updated(_) => DeltaType::Updated,
            Self::Deleted(_) => DeltaType::Deleted,
            Self::Replaced(_) => DeltaType::Replaced,
            Self::Sync(_) => DeltaType::Sync,
            Self::Bookmark(_) => DeltaType::Bookmark,
        }
    }

    /// The object the delta carries (for a tombstone, its last known state).
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Self::Added(o) | Self::Updated(o) | Self::Replaced(o) | Self::Sync(o) => Some(o),
            Self::Deleted(d) => d.object(),
            Self::Bookmark(_) => None,
        }
    }
}
