//! The RealFIFO: client-go's `tools/cache/the_real_fifo.go`, the queue informers use
//! since Kubernetes 1.33 (`InOrderInformers`, locked on in 1.36).
//!
//! # DeltaFIFO and RealFIFO, side by side
//!
//! ```text
//!  DeltaFIFO: one slot per KEY, its deltas piled up behind it
//!    queue:  [a] [b]                 a: Added(a1), Updated(a2), Deleted(a3)
//!                                    b: Added(b1)
//!    pop -> (a, [Added a1, Updated a2, Deleted a3])      then (b, [Added b1])
//!
//!  RealFIFO: one slot per EVENT, in the order the reflector saw them
//!    queue:  [a:Added a1] [b:Added b1] [a:Updated a2] [a:Deleted a3]
//!    pop -> (a, [Added a1]), then (b, [Added b1]), then (a, [Updated a2]), ...
//! ```
//!
//! The DeltaFIFO reorders across keys: `a`'s later changes are delivered before `b`'s
//! earlier add, because `a` was queued first. Handlers that look at more than one
//! object (an owner and what it owns, a Pod and its Node) can then see a world that
//! never existed. client-go replaced it with this queue, which keeps the *global*
//! order of events: every event is its own entry, delivered in arrival order. What
//! stays the same: deletions missed during a watch gap still become tombstones when a
//! relist replaces the contents, resyncs skip keys with queued events, and
//! `has_synced` turns true once the initial list has been popped.
//!
//! Two things it adds: [`pop_batch`](RealFifo::pop_batch) hands the consumer up to
//! [`DEFAULT_BATCH_SIZE`] consecutive events for *distinct* keys at once (client-go's
//! `PopBatch`, `InOrderInformersBatchProcess`), so the indexer can apply them under
//! one lock; and the paged replace of this workspace's DeltaFIFO
//! ([`begin_replace`](RealFifo::begin_replace), [`replace_page`](RealFifo::replace_page),
//! [`finish_replace`](RealFifo::finish_replace)), with the same reasoning. Both queues
//! compute a replace's deltas in [`crate::replacement`], which also says where their
//! replaces differ (and where this one departs from client-go's: the tombstones come
//! after the listed objects, not before).
//!
//! Like the DeltaFIFO, `pop` runs its processing function while holding the queue's
//! lock, so a replace or resync never looks at the indexer between "popped" and
//! "applied".

use std::collections::VecDeque;
use std::fmt;
use std::pin::pin;
use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use crate::delta::{DeletedObject, Delta};
use crate::error::Result;
use crate::keys::{KeyMap, KeySet, meta_namespace_key};
use crate::known_objects::KeyListerGetter;
use crate::population::Population;
use crate::replacement::{Queued, QueuedDeletion, Replacement};
use crate::steps;
use crate::transform::{TransformFunc, prepare_object};

/// The most events [`RealFifo::pop_batch`] hands out at once (client-go's
/// `defaultBatchSize`).
pub const DEFAULT_BATCH_SIZE: usize = 1000;

struct State<K> {
    /// Every queued event with its key, oldest first.
    items: VecDeque<(Arc<str>, Delta<K>)>,
    /// How far through the initial list the queue is.
    population: Population,
    closed: bool,
}

/// An in-order queue of events between the reflector and the indexer: client-go's
/// `RealFIFO`. See the [module docs](self).
pub struct RealFifo<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    synced: watch::Sender<bool>,
    known_objects: Arc<dyn KeyListerGetter<K>>,
    transform: Option<TransformFunc<K>>,
    /// `K`'s name in the pipeline trace.
    component: Arc<str>,
}

impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("RealFifo")
            .field("queued_events", &st.items.len())
            .field("population", &st.population)
            .field("closed", &st.closed)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> RealFifo<K> {
    /// A FIFO that detects missed deletions and resyncs against `known_objects` (the
    /// informer's indexer; client-go requires it too).
    pub fn new(
        known_objects: Arc<dyn KeyListerGetter<K>>,
        transform: Option<TransformFunc<K>>,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
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

    /// Sets `synced` to `true` when [`has_synced`](Self::has_synced) becomes true.
    pub fn with_synced_signal(mut self, synced: watch::Sender<bool>) -> Self {
        self.synced = synced;
        self
    }

    fn signal_if_synced(&self, st: &mut State<K>) {
        st.population.signal_if_synced(&self.synced);
    }

    fn push(&self, st: &mut State<K>, key: Arc<str>, delta: Delta<K>) {
        steps::queued(&self.component, &key, &delta, st.items.len() + 1);
        st.items.push_back((key, delta));
        self.ready.notify_one();
    }

    /// Queues one watch event.
    fn queue_event(&self, obj: K, delta: fn(Arc<K>) -> Delta<K>) -> Result<()> {
        let obj = prepare_object(self.transform.as_ref(), obj);
        let key = meta_namespace_key(obj.as_ref())?;
        let mut st = self.state.lock();
        st.population.populated = true;
        self.push(&mut st, key.into(), delta(obj));
        self.signal_if_synced(&mut st);
        Ok(())
    }

    /// Queues an `Added` event (a watch `ADDED`).
    pub fn add(&self, obj: K) -> Result<()> {
        self.queue_event(obj, Delta::Added)
    }

    /// Queues an `Updated` event (a watch `MODIFIED`).
    pub fn update(&self, obj: K) -> Result<()> {
        self.queue_event(obj, Delta::Updated)
    }

    /// Queues a `Deleted` event (a watch `DELETED`). Unlike the DeltaFIFO, always:
    /// client-go's RealFIFO does not check whether the object was ever seen.
    pub fn delete(&self, obj: K) -> Result<()> {
        self.queue_event(obj, |obj| Delta::Deleted(DeletedObject::Object(obj)))
    }

    /// Queues a bookmark: the source has reached `resource_version` (a watch
    /// `BOOKMARK`, or the end of a list). It travels in order with the events, so
    /// when the consumer pops it every event before it has been applied: client-go's
    /// `RealFIFO.Bookmark`, which feeds the store's `LastStoreSyncResourceVersion`.
    /// Its key is empty; it never becomes a tombstone or a resync.
    pub fn bookmark(&self, resource_version: &str) {
        if resource_version.is_empty() {
            return;
        }
        let mut st = self.state.lock();
        self.push(
            &mut st,
            Arc::from(""),
            Delta::Bookmark(resource_version.into()),
        );
    }

    /// Replaces the contents with a full list: `Replaced` for every listed object,
    /// a tombstone for every key queued or known but not listed. The one-shot form of
    /// [`begin_replace`](Self::begin_replace) / [`replace_page`](Self::replace_page) /
    /// [`finish_replace`](Self::finish_replace).
    pub fn replace(&self, list: Vec<K>) -> Result<()> {
        let mut replacement = self.begin_replace();
        self.replace_page(&mut replacement, list);
        self.finish_replace(replacement)
    }

    /// Starts a replace that arrives in pages.
    pub fn begin_replace(&self) -> Replacement {
        let st = self.state.lock();
        let nothing_known =
            st.items.iter().all(|(_, d)| is_bookmark(d)) && self.known_objects.is_empty();
        Replacement::new(!st.population.populated, !nothing_known)
    }

    /// Transforms one page and queues a `Replaced` event for each of its objects.
    pub fn replace_page(&self, replacement: &mut Replacement, page: Vec<K>) {
        let replaced = replacement.replaced(self.transform.as_ref(), page);
        let mut st = self.state.lock();
        // The initial population counts events: each takes a place in line.
        let initial = replacement.queue_all(replaced, |key, delta| {
            self.push(&mut st, key, delta);
            true
        });
        st.population.initial_count += initial;
    }

    /// Ends a replace: a tombstone for every key whose last queued event is not a
    /// deletion and that was not listed, and for every key the indexer knows, has
    /// nothing queued, and was not listed (client-go's `reconcileReplacement`). A key
    /// whose last queued event is a deletion needs none: a second `Deleted` event would
    /// be delivered as a second deletion ([`crate::replacement`] compares this with the
    /// DeltaFIFO).
    pub fn finish_replace(&self, replacement: Replacement) -> Result<()> {
        let mut st = self.state.lock();
        let tombstones = replacement.tombstones(
            || NewestPerKey::of(&st.items),
            Some(self.known_objects.as_ref()),
            QueuedDeletion::Skip,
        );
        let initial = replacement.queue_all(tombstones, |key, delta| {
            self.push(&mut st, key, delta);
            true
        });
        st.population.initial_count += initial;
        st.population.populated = true;
        self.signal_if_synced(&mut st);
        drop(st);
        replacement.into_result()
    }

    /// Queues a `Sync` event for every known object with no event queued (a queued
    /// event means the indexer still holds the previous state, which a sync would
    /// deliver after the newer one).
    pub fn resync(&self) {
        let mut st = self.state.lock();
        let queued: KeySet = st
            .items
            .iter()
            .filter(|(_, d)| !is_bookmark(d))
            .map(|(key, _)| key.clone())
            .collect();
        for key in self.known_objects.list_keys() {
            if queued.contains(key.as_str()) {
                continue;
            }
            if let Some(obj) = self.known_objects.get_by_key(&key) {
                self.push(&mut st, key.into(), Delta::Sync(obj));
            }
        }
    }

    /// Waits for the next event and calls `process` with its key, the event (as a
    /// one-element list, the shape the DeltaFIFO's consumers expect) and whether it
    /// belongs to the initial list, holding the queue's lock. `None` once closed and
    /// empty.
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(&Arc<str>, Vec<Delta<K>>, bool) -> R,
    ) -> Option<R> {
        self.pop_with(1, |mut batch, initial| {
            let (key, delta) = batch.pop().expect("a batch is never empty");
            process(&key, vec![delta], initial)
        })
        .await
    }

    /// Like [`pop`](Self::pop), but hands out up to `max` consecutive events at once,
    /// stopping before the first key that repeats (so the batch can be applied in any
    /// order) and at the end of the initial list (client-go's `PopBatch`). `max` of 0
    /// is taken as 1.
    pub async fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(Vec<(Arc<str>, Delta<K>)>, bool) -> R,
    ) -> Option<R> {
        self.pop_with(max.max(1), process).await
    }

    async fn pop_with<R>(
        &self,
        max: usize,
        process: impl FnOnce(Vec<(Arc<str>, Delta<K>)>, bool) -> R,
    ) -> Option<R> {
        loop {
            let mut ready = pin!(self.ready.notified());
            ready.as_mut().enable();
            {
                let mut st = self.state.lock();
                if !st.items.is_empty() {
                    let is_in_initial_list = st.population.is_in_initial_list();
                    let mut limit = max.min(st.items.len());
                    if st.population.initial_count > 0 {
                        limit = limit.min(st.population.initial_count);
                    }
                    let mut batch = Vec::with_capacity(limit);
                    batch.extend(st.items.pop_front());
                    // Distinct keys only. A single pop (the informer's, once per event)
                    // never builds the set.
                    if limit > 1 {
                        let mut seen: KeySet = batch.iter().map(|(key, _)| key.clone()).collect();
                        while batch.len() < limit {
                            match st.items.front() {
                                Some((key, _)) if seen.insert(key.clone()) => {
                                    batch.extend(st.items.pop_front());
                                }
                                _ => break,
                            }
                        }
                    }
                    st.population.initial_count =
                        st.population.initial_count.saturating_sub(batch.len());
                    let result = process(batch, is_in_initial_list);
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

    /// Closes the FIFO: `pop` returns `None` once the queued events are consumed.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.ready.notify_waiters();
    }

    /// Number of queued entries: events (not keys: one key can have several) and
    /// bookmarks.
    pub fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys of the queued events, in order, one per event; bookmarks are not
    /// listed (for tests).
    pub fn list_keys(&self) -> Vec<String> {
        self.state
            .lock()
            .items
            .iter()
            .filter(|(_, d)| !is_bookmark(d))
            .map(|(k, _)| k.to_string())
            .collect()
    }
}

/// The last queued event of every key, keys in first-queued order: how a replace reads
/// the queue (client-go's `lastQueuedItemForKey` and `queuedKeys`).
struct NewestPerKey<'a, K> {
    order: Vec<Arc<str>>,
    newest: KeyMap<&'a Delta<K>>,
}

impl<'a, K> NewestPerKey<'a, K> {
    fn of(items: &'a VecDeque<(Arc<str>, Delta<K>)>) -> Self {
        let mut order = Vec::new();
        let mut newest = KeyMap::default();
        for (key, delta) in items.iter().filter(|(_, d)| !is_bookmark(d)) {
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
        self.order.iter().map(|key| (key, self.newest[key]))
    }

    fn is_queued(&self, key: &str) -> bool {
        self.newest.contains_key(key)
    }
}

fn is_bookmark<K>(delta: &Delta<K>) -> bool {
    matches!(delta, Delta::Bookmark(_))
}
