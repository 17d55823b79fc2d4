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
//!    [`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown) tombstone for
//!    every known key that is missing. Handlers therefore always learn about the
//!    deletion, even if they never saw the final state of the object.
//! 3. **Resync.** [`DeltaFifo::resync`] queues a `Sync` delta for every known object
//!    that has nothing queued, which makes handlers see every object again
//!    periodically (level-triggered controllers use it as a safety net).
//!
//! Two `Deleted` deltas in a row collapse into one, exactly as client-go's
//! `dedupDeltas` / `isDeletionDup` do: the *earlier* deletion is kept, unless it is a
//! tombstone, in which case the later one is. So a real final state always beats a
//! tombstone (whichever came first), a tombstone never follows a real deletion, and
//! of two real deletions the first one reported stays (the second carries nothing a
//! handler needs: the object is gone either way).
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
//! listed instead of after the last one. The [`replacement`](crate::replacement)
//! module explains why that is safe and what it saves; it also computes the replace's
//! deltas for both queues, and says where this queue's replace differs from the
//! RealFIFO's.
//!
//! The vocabulary ([`Delta`], [`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown)),
//! the indexer's view ([`KeyListerGetter`]), the transform and `has_synced`'s
//! bookkeeping live in modules of their own, shared with the
//! [`RealFifo`](crate::RealFifo).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::pin::pin;
use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use crate::delta::{DeletedObject, Delta};
use crate::error::Result;
use crate::keys::meta_namespace_key;
use crate::known_objects::KeyListerGetter;
use crate::population::Population;
use crate::replacement::{Queued, QueuedDeletion, Replacement};
use crate::steps;
use crate::transform::{TransformFunc, prepare_object};

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
    /// initial list is never held untransformed all at once. Without a transform it
    /// trims `metadata.managedFields` (see [`crate::transform`]).
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

    /// Starts a replace (a list or relist) that arrives in pages. See
    /// [`crate::replacement`] for why pages are queued as they arrive.
    pub fn begin_replace(&self) -> Replacement {
        let st = self.state.lock();
        let nothing_known = st.items.values().all(|deltas| deltas.is_empty())
            && self.known_objects.as_ref().is_none_or(|k| k.is_empty());
        Replacement::new(!st.population.populated, !nothing_known)
    }

    /// Transforms one page (see [`prepare`](Self::prepare)) and queues a `Replaced`
    /// delta for each of its objects, so the consumer can start on them at once.
    /// Objects without a name are skipped and reported by `finish_replace`.
    pub fn replace_page(&self, replacement: &mut Replacement, page: Vec<K>) {
        // Transform and key outside the lock: the consumer keeps popping meanwhile.
        let replaced = replacement.replaced(self.transform.as_ref(), page);
        let mut st = self.state.lock();
        // The initial population counts keys, not deltas: a key queued twice is one
        // pop.
        let initial = replacement.queue_all(replaced, |key, delta| {
            self.queue_action(&mut st, key, delta)
        });
        st.population.initial_count += initial;
    }

    /// Ends a replace: queues a tombstone `Deleted` delta for every key that is queued
    /// or known to the indexer but was not listed, and (for the first replace) marks
    /// the initial population complete, so `has_synced` turns true once it is popped.
    /// client-go's `Replace`, minus the part `replace_page` already did.
    ///
    /// A key whose newest queued delta is already a deletion is tombstoned too, as
    /// client-go's DeltaFIFO does, and the two deletions collapse into one
    /// (`dedupDeltas`: a queued real deletion stays; a queued tombstone gives way to
    /// the new one, which carries the same last state); the RealFIFO leaves such a
    /// key alone ([`crate::replacement`] compares the two).
    pub fn finish_replace(&self, replacement: Replacement) -> Result<()> {
        let mut st = self.state.lock();
        let tombstones = replacement.tombstones(
            || &*st,
            self.known_objects.as_deref(),
            QueuedDeletion::Tombstone,
        );
        let initial = replacement.queue_all(tombstones, |key, delta| {
            self.queue_action(&mut st, key, delta)
        });
        st.population.initial_count += initial;
        st.population.populated = true;
        self.signal_if_synced(&mut st);
        drop(st);
        replacement.into_result()
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

/// A replace reads the queue as each key's newest delta, in the order of the map of
/// keys (client-go ranges over its `items` map).
impl<K> Queued<K> for &State<K> {
    fn newest_deltas<'a>(&'a self) -> impl Iterator<Item = (&'a Arc<str>, &'a Delta<K>)>
    where
        K: 'a,
    {
        self.items
            .iter()
            .filter_map(|(key, deltas)| Some((key, deltas.last()?)))
    }

    fn is_queued(&self, key: &str) -> bool {
        self.items.get(key).is_some_and(|deltas| !deltas.is_empty())
    }
}

/// Collapses the last two deltas when both are deletions: client-go's `dedupDeltas`
/// with its `isDeletionDup`. The earlier deletion is kept unless it is a tombstone
/// ([`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown)); then the later
/// one is. A real final state thus always wins over a tombstone, and of two real
/// deletions (or two tombstones) the rule keeps what client-go keeps: the first real
/// one, the last tombstone.
fn dedup_deltas<K>(deltas: &mut Vec<Delta<K>>) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    if let (Delta::Deleted(earlier), Delta::Deleted(_)) = (&deltas[n - 2], &deltas[n - 1]) {
        if earlier.is_tombstone() {
            deltas.remove(n - 2); // a tombstone gives way to the later deletion
        } else {
            deltas.pop(); // the earlier real deletion stays
        }
    }
}
