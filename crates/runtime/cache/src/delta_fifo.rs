//! The DeltaFIFO: client-go's `tools/cache/delta_fifo.go`.
//!
//! # Why a FIFO of *deltas*?
//!
//! The reflector produces a stream of changes (from a list, then a watch); the informer
//! applies them to the indexer and tells event handlers. Between the two sits this
//! queue, and it differs from a plain FIFO in three ways that client-go's guarantees
//! depend on:
//!
//! 1. **Per-key history.** It keeps, for each object key, the ordered list of what
//!    happened to it ([`Delta`]s) since it was last popped. A consumer that falls
//!    behind still sees every change of an object in order, and sees it once per key
//!    (the key is in line once, however many deltas pile up behind it).
//! 2. **No missed deletions.** When the reflector has to relist (its watch broke, or
//!    the server said 410 Gone), objects deleted during the gap are simply absent
//!    from the new list. [`DeltaFifo::replace`] compares the list with what the
//!    indexer knows (the `known_objects`) and queues a `Deleted` delta carrying a
//!    [`DeletedFinalStateUnknown`] tombstone for every known key that is missing.
//!    Handlers therefore always learn about the deletion, even if they never saw the
//!    final state of the object.
//! 3. **Resync.** [`DeltaFifo::resync`] queues a `Sync` delta for every known object
//!    that has nothing queued, which makes handlers see every object again
//!    periodically (level-triggered controllers use it as a safety net).
//!
//! Consecutive `Deleted` deltas collapse into one (keeping the one with the most
//! information), so a tombstone never follows a real deletion.
//!
//! [`DeltaFifo::pop`] calls its processing function *while holding the queue's lock*,
//! as client-go does: a `replace` or `resync` can then never look at the indexer
//! between "popped from the queue" and "applied to the indexer", the window in which a
//! deletion could otherwise be missed or a stale object resynced.
//!
//! [`has_synced`](DeltaFifo::has_synced) becomes true once everything from the first
//! `replace` (the initial list) has been popped.
//!
//! One departure from client-go: a replace can arrive page by page
//! ([`DeltaFifo::begin_replace`], [`replace_page`](DeltaFifo::replace_page),
//! [`finish_replace`](DeltaFifo::finish_replace)), each page queued as soon as it is
//! listed instead of after the last one. The [`replace`] module explains why that
//! is safe and what it saves.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::pin::pin;
use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use crate::error::Result;
use crate::keys::meta_namespace_key;
use crate::steps;

pub mod replace;
pub use replace::Replacement;

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
    /// The watch (or a finished list) reached a resourceVersion: everything queued
    /// before it is at least that fresh. Only the [`RealFifo`](crate::RealFifo)
    /// queues it (client-go's `Bookmark` delta, emitted by its in-order FIFO only): a
    /// DeltaFIFO regroups events per key, so no point in it is "everything before".
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

/// What the FIFO asks the indexer: client-go's `KeyListerGetter`.
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

impl<K: Send + Sync + 'static> KeyListerGetter<K> for crate::store::Indexer<K> {
    fn list_keys(&self) -> Vec<String> {
        crate::store::Indexer::list_keys(self)
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        crate::store::Indexer::get_by_key(self, key)
    }
    fn is_empty(&self) -> bool {
        crate::store::Indexer::is_empty(self)
    }
}

/// A function applied to every object before it is queued (and so before it is
/// stored): client-go's `TransformFunc`. Typically strips `managedFields` to save
/// memory.
pub type TransformFunc<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

struct State<K> {
    /// Deltas per key, oldest first. A key is here iff it is in `queue`. Keys are
    /// `Arc<str>` shared with `queue` (and with the key set of a `replace`), so a
    /// 50k-object initial list holds each key once, not three or four times.
    items: HashMap<Arc<str>, Vec<Delta<K>>>,
    /// Keys in FIFO order, each once.
    queue: VecDeque<Arc<str>>,
    /// How far through the initial list the queue is.
    population: Population,
    closed: bool,
}

/// A queue of per-key deltas between the reflector and the indexer: client-go's
/// `DeltaFIFO` (with `EmitDeltaTypeReplaced: true`, as shared informers use it).
/// See the [module docs](self).
pub struct DeltaFifo<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    /// Flips to `true` once, when [`has_synced`](Self::has_synced) becomes true, so
    /// waiters need not poll.
    synced: watch::Sender<bool>,
    known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    transform: Option<TransformFunc<K>>,
    /// `K`'s name in the pipeline trace.
    component: Arc<str>,
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("DeltaFifo")
            .field("queued_keys", &st.queue.len())
            .field("population", &st.population)
            .field("closed", &st.closed)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// A FIFO that checks deletions and resyncs against `known_objects` (the
    /// informer's indexer). Without known objects there is no tombstone detection
    /// for keys that are not queued, and no resync.
    pub fn new(
        known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
        transform: Option<TransformFunc<K>>,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                items: HashMap::new(),
                queue: VecDeque::new(),
                population: Population::default(),
                closed: false,
            }),
            ready: Notify::new(),
            synced: watch::Sender::new(false),
            known_objects,
            transform,
            component: steps::component::<K>(),
        }
    }

    /// Sets `synced` to `true` when [`has_synced`](Self::has_synced) becomes true, so
    /// waiters can subscribe to it instead of polling (the informer passes its own,
    /// which exists before the FIFO does).
    pub fn with_synced_signal(mut self, synced: watch::Sender<bool>) -> Self {
        self.synced = synced;
        self
    }

    /// Publishes the synced state after a change that may have completed it: the
    /// first queued event (`populated`), a pop, or the end of a replace.
    fn signal_if_synced(&self, st: &mut State<K>) {
        st.population.signal_if_synced(&self.synced);
    }

    /// Applies the transform (if any) and wraps the object for storing. Every object
    /// goes through it exactly once on its way into the queue; a list is transformed
    /// page by page as it arrives ([`replace_page`](Self::replace_page)), so a large
    /// initial list is never held untransformed all at once.
    ///
    /// Without a transform it trims `metadata.managedFields` to its length: JSON
    /// decoding grows that vector by doubling (one entry usually sits in room for
    /// four), and every cached object would keep the slack for its lifetime.
    pub fn prepare(&self, obj: K) -> Arc<K> {
        prepare_object(self.transform.as_ref(), obj)
    }

    /// Queues an `Added` delta (a watch `ADDED` event).
    pub fn add(&self, obj: K) -> Result<()> {
        let obj = self.prepare(obj);
        let key = meta_namespace_key(obj.as_ref())?;
        let mut st = self.state.lock();
        st.population.populated = true;
        self.queue_action(&mut st, key.into(), Delta::Added(obj));
        self.signal_if_synced(&mut st);
        Ok(())
    }

    /// Queues an `Updated` delta (a watch `MODIFIED` event).
    pub fn update(&self, obj: K) -> Result<()> {
        let obj = self.prepare(obj);
        let key = meta_namespace_key(obj.as_ref())?;
        let mut st = self.state.lock();
        st.population.populated = true;
        self.queue_action(&mut st, key.into(), Delta::Updated(obj));
        self.signal_if_synced(&mut st);
        Ok(())
    }

    /// Queues a `Deleted` delta (a watch `DELETED` event), unless the object is
    /// unknown both to the indexer and to the queue (deleted before we ever saw it).
    pub fn delete(&self, obj: K) -> Result<()> {
        let obj = self.prepare(obj);
        let key = meta_namespace_key(obj.as_ref())?;
        let mut st = self.state.lock();
        st.population.populated = true;
        self.signal_if_synced(&mut st);
        let known = match &self.known_objects {
            Some(known) => known.get_by_key(&key).is_some(),
            None => false,
        };
        if !known && !st.items.contains_key(key.as_str()) {
            return Ok(());
        }
        self.queue_action(
            &mut st,
            key.into(),
            Delta::Deleted(DeletedObject::Object(obj)),
        );
        Ok(())
    }

    /// Replaces the contents with a full list (the reflector's list or relist): queues
    /// `Replaced` for every listed object, and a tombstone `Deleted` for every key that
    /// is queued or known but not in the list. client-go's `Replace`.
    ///
    /// Objects without a name are skipped and reported in the error, after the rest
    /// of the list has been applied. The reflector uses the paged form of the same
    /// operation ([`begin_replace`](Self::begin_replace),
    /// [`replace_page`](Self::replace_page), [`finish_replace`](Self::finish_replace)).
    pub fn replace(&self, list: Vec<K>) -> Result<()> {
        let mut replacement = self.begin_replace();
        self.replace_page(&mut replacement, list);
        self.finish_replace(replacement)
    }

    /// Queues a `Sync` delta for every known object with nothing queued: client-go's
    /// `Resync`. Objects with queued deltas are skipped, because the indexer still has
    /// their *previous* state and a sync would deliver it after the newer deltas.
    pub fn resync(&self) {
        let Some(known) = &self.known_objects else {
            return;
        };
        let mut st = self.state.lock();
        for key in known.list_keys() {
            if st.items.get(key.as_str()).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            if let Some(obj) = known.get_by_key(&key) {
                self.queue_action(&mut st, key.into(), Delta::Sync(obj));
            }
        }
    }

    /// Appends a delta for `key`, collapsing a duplicate deletion. Returns whether
    /// the key joined the queue (it was not queued yet).
    fn queue_action(&self, st: &mut State<K>, key: Arc<str>, delta: Delta<K>) -> bool {
        // Depth in keys: a key already queued gains a delta, not a place in line.
        let depth = st.queue.len() + usize::from(!st.items.contains_key(&key));
        steps::queued(&self.component, &key, &delta, depth);
        match st.items.get_mut(&key) {
            Some(deltas) if !deltas.is_empty() => {
                deltas.push(delta);
                dedup_deltas(deltas);
                false
            }
            _ => {
                st.items.insert(key.clone(), vec![delta]);
                st.queue.push_back(key);
                self.ready.notify_one();
                true
            }
        }
    }

    /// Waits for the next key and calls `process` with the key, its deltas (oldest
    /// first) and whether they belong to the initial list, **holding the queue's lock** (see the
    /// module docs). Returns `None` once the FIFO is closed and empty.
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(&Arc<str>, Vec<Delta<K>>, bool) -> R,
    ) -> Option<R> {
        loop {
            let mut ready = pin!(self.ready.notified());
            ready.as_mut().enable();
            {
                let mut st = self.state.lock();
                if let Some(key) = st.queue.pop_front() {
                    let is_in_initial_list = st.population.is_in_initial_list();
                    if st.population.initial_count > 0 {
                        st.population.initial_count -= 1;
                    }
                    let deltas = st.items.remove(&key).unwrap_or_default();
                    let result = process(&key, deltas, is_in_initial_list);
                    // After `process`: a woken waiter must find the last item applied.
                    self.signal_if_synced(&mut st);
                    return Some(result);
                }
                if st.closed {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// Whether the initial list has been fully popped: client-go's `HasSynced`.
    pub fn has_synced(&self) -> bool {
        let st = self.state.lock();
        st.population.has_synced()
    }

    /// Closes the FIFO: `pop` returns `None` once the queued keys are consumed.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.ready.notify_waiters();
    }

    /// Number of keys queued.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether no key is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queued keys in order (for tests and debugging).
    pub fn list_keys(&self) -> Vec<String> {
        self.state
            .lock()
            .queue
            .iter()
            .map(|k| k.to_string())
            .collect()
    }
}

/// How far a queue is through its initial list: what `has_synced` means, shared by
/// [`DeltaFifo`] and [`RealFifo`](crate::RealFifo).
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

/// [`DeltaFifo::prepare`] for any queue: the transform, or trimming `managedFields`.
pub(crate) fn prepare_object<K: Resource>(transform: Option<&TransformFunc<K>>, obj: K) -> Arc<K> {
    Arc::new(match transform {
        Some(transform) => transform(obj),
        None => {
            let mut obj = obj;
            if let Some(fields) = obj.meta_mut().managed_fields.as_mut() {
                fields.shrink_to_fit();
            }
            obj
        }
    })
}

/// Collapses the last two deltas when both are deletions, keeping the more
/// informative one (a real final state beats a tombstone): client-go's `dedupDeltas`.
fn dedup_deltas<K>(deltas: &mut Vec<Delta<K>>) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    if let (Delta::Deleted(_), Delta::Deleted(last)) = (&deltas[n - 2], &deltas[n - 1]) {
        if last.is_tombstone() {
            deltas.pop(); // keep the earlier, more informative deletion
        } else {
            deltas.remove(n - 2);
        }
    }
}
