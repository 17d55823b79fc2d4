//! The RealFIFO: client-go's `tools/cache/the_real_fifo.go`, the queue informers use
//! since Kubernetes 1.33 (`InOrderInformers`, locked on in 1.36), in both of its modes:
//! plain, and with atomic events (1.36's `AtomicFIFO`, beta and on by default, with
//! `UnlockWhileProcessingFIFO`).
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
//! order of events: every event is its own entry, delivered in arrival order.
//! [`pop_batch`](RealFifo::pop_batch) hands the consumer up to [`DEFAULT_BATCH_SIZE`]
//! consecutive events for *distinct* keys at once (client-go's `PopBatch`,
//! `InOrderInformersBatchProcess`), so the indexer can apply them in one go.
//!
//! # Plain mode ([`RealFifo::new`], [`QueueKind::RealFifo`](crate::QueueKind::RealFifo))
//!
//! A relist (`Replace`) becomes events: first a tombstone for every key queued or known
//! to the indexer that the list lacks ("logically the deletes of known items should
//! happen BEFORE newItems are added"), then a `Replaced` event per listed object. A
//! resync queues a `Sync` event for every known object with no event queued. Both read
//! the indexer (the FIFO's *known objects*), so `pop` holds the queue's lock while the
//! informer applies an entry: what the indexer says must not change between "popped"
//! and "applied". No bookmarks are queued (client-go only emits them in atomic mode,
//! "which avoids events propagating out of RV order during Replace and Resync"), so
//! the store has no resourceVersion in this mode.
//!
//! # Atomic mode ([`RealFifo::new_atomic`], [`QueueKind::AtomicFifo`](crate::QueueKind::AtomicFifo), the default)
//!
//! ```text
//!  plain:   relist -> [tombstone c] [Replaced a] [Replaced b]     (3 pops; a reader
//!                      can see c gone while a is still old)
//!  atomic:  relist -> [ReplacedAll {a, b} @ rv 42]                (1 pop: the store
//!                      swaps to {a, b} in one step, then handlers hear: c deleted,
//!                      a updated, b added, then the bookmark 42)
//! ```
//!
//! A relist is ONE entry ([`Popped::ReplacedAll`]: the list and its resourceVersion)
//! and a resync one entry ([`Popped::SyncAll`]). The FIFO knows nothing of the
//! indexer: the consumer finds what the list lacks when it applies the entry, against
//! the store as it is then (every earlier entry already applied). The informer swaps
//! the store's contents in one step and only then notifies the handlers, deletions
//! first, then adds and updates in list order (client-go's `processReplacedAllInfo`).
//! Bookmarks travel in the queue, so the store's resourceVersion means "every change
//! up to here is applied".
//!
//! Because the queue never reads the indexer, the informer may apply an entry with
//! the queue unlocked ([`RealFifo::with_unlock_while_processing`], client-go's
//! `UnlockWhileProcessing`): the reflector keeps queueing watch events while a large
//! relist is being applied, instead of stalling on the lock.
//!
//! # Paged replaces
//!
//! The reflector feeds a list page by page ([`begin_replace`](RealFifo::begin_replace),
//! [`replace_page`](RealFifo::replace_page), [`finish_replace`](RealFifo::finish_replace)):
//! each page is transformed and keyed as it arrives, outside the lock, and kept in the
//! FIFO until the last one is in; only then are the tombstones and the listed objects
//! (plain) or the `ReplacedAll` (atomic) queued. [`crate::replacement`] computes both
//! queues' replaces and says where the DeltaFIFO's differs.
//!
//! `has_synced` turns true once the initial list has been popped *and applied*: in
//! plain mode every event of the first replace, in atomic mode its one `ReplacedAll`
//! (client-go counts `len(f.items)` either way).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use crate::delta::{DeletedObject, Delta};
use crate::error::Result;
use crate::keys::{KeySet, meta_namespace_key};
use crate::known_objects::KeyListerGetter;
use crate::population::Population;
use crate::replacement::{QueuedDeletion, Replacement};
use crate::steps;
use crate::transform::{TransformFunc, prepare_object};

mod entry;
mod pop;

use entry::{Item, NewestPerKey};
pub use entry::{Popped, ReplacedAll};

/// The most events [`RealFifo::pop_batch`] hands out at once (client-go's
/// `defaultBatchSize`); twice this many queued entries keep an unlocking FIFO locked
/// while processing.
pub const DEFAULT_BATCH_SIZE: usize = 1000;

struct State<K> {
    /// Every queued entry, oldest first.
    items: VecDeque<Item<K>>,
    /// How far through the initial list the queue is.
    population: Population,
    closed: bool,
    /// The objects of the replace in progress, transformed and keyed, in list order:
    /// kept here until `finish_replace` queues them (see the [module docs](self)).
    pending: Vec<(Arc<str>, Arc<K>)>,
}

/// An in-order queue of events between the reflector and the indexer: client-go's
/// `RealFIFO`, plain or with atomic events. See the [module docs](self).
pub struct RealFifo<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    synced: watch::Sender<bool>,
    /// The indexer, in plain mode (client-go requires it there and forbids it with
    /// atomic events: an atomic FIFO never reads the store, which is what lets it
    /// unlock while processing).
    known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    transform: Option<TransformFunc<K>>,
    /// Whether a replace and a resync are one entry each, and bookmarks are queued
    /// (client-go's `AtomicEvents` and `EmitDeltaTypeBookmark`, set together by its
    /// informers).
    atomic: bool,
    /// client-go's `UnlockWhileProcessing`; only ever true with `atomic`.
    unlock_while_processing: bool,
    /// `K`'s name in the pipeline trace.
    component: Arc<str>,
}

impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("RealFifo")
            .field("queued_entries", &st.items.len())
            .field("population", &st.population)
            .field("closed", &st.closed)
            .field("atomic", &self.atomic)
            .field("unlock_while_processing", &self.unlock_while_processing)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> RealFifo<K> {
    /// A plain FIFO (no atomic events) that detects missed deletions and resyncs
    /// against `known_objects`, the informer's indexer: client-go's `RealFIFO` with
    /// `KnownObjects` set, as informers build it without `AtomicFIFO`.
    pub fn new(
        known_objects: Arc<dyn KeyListerGetter<K>>,
        transform: Option<TransformFunc<K>>,
    ) -> Self {
        Self::build(Some(known_objects), transform, false)
    }

    /// A FIFO with atomic events: a replace queues one [`ReplacedAll`], a resync one
    /// [`Popped::SyncAll`], and bookmarks are queued. It takes no known objects (the
    /// consumer compares a list with its store itself). client-go's `RealFIFO` with
    /// `AtomicEvents` and `EmitDeltaTypeBookmark`, as informers build it under
    /// `AtomicFIFO`; add [`with_unlock_while_processing`](Self::with_unlock_while_processing)
    /// for `UnlockWhileProcessingFIFO`.
    pub fn new_atomic(transform: Option<TransformFunc<K>>) -> Self {
        Self::build(None, transform, true)
    }

    fn build(
        known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
        transform: Option<TransformFunc<K>>,
        atomic: bool,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                population: Population::default(),
                closed: false,
                pending: Vec::new(),
            }),
            ready: Notify::new(),
            synced: watch::Sender::new(false),
            known_objects,
            transform,
            atomic,
            unlock_while_processing: false,
            component: steps::component::<K>(),
        }
    }

    /// Lets `pop` and `pop_batch` release the queue's lock while the consumer
    /// processes what they popped (client-go's `UnlockWhileProcessing`), so producers
    /// are not held back by a slow apply. Only for an atomic FIFO: a plain one reads
    /// its known objects in replace and resync, and they must not change between
    /// "popped" and "applied" (client-go refuses the combination; here the switch is
    /// ignored). The consumer must be single (one pop at a time), as the informer's
    /// one loop is.
    pub fn with_unlock_while_processing(mut self, unlock: bool) -> Self {
        self.unlock_while_processing = unlock && self.atomic;
        self
    }

    /// Sets `synced` to `true` when [`has_synced`](Self::has_synced) becomes true.
    pub fn with_synced_signal(mut self, synced: watch::Sender<bool>) -> Self {
        self.synced = synced;
        self
    }

    /// Whether this FIFO emits atomic events (see the [module docs](self)).
    pub fn is_atomic(&self) -> bool {
        self.atomic
    }

    fn signal_if_synced(&self, st: &mut State<K>) {
        st.population.signal_if_synced(&self.synced);
    }

    fn push(&self, st: &mut State<K>, key: Arc<str>, delta: Delta<K>) {
        steps::queued(&self.component, &key, &delta, st.items.len() + 1);
        st.items.push_back(Item::Event(key, delta));
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

    /// Queues a bookmark in atomic mode: the source has reached `resource_version` (a
    /// watch `BOOKMARK`). It travels in order with the events, so when the consumer
    /// pops it every event before it has been applied: client-go's `RealFIFO.Bookmark`,
    /// which feeds the store's `LastStoreSyncResourceVersion`. Its key is empty; it is
    /// never batched, never a tombstone, never a resync.
    ///
    /// A plain FIFO drops it, as client-go's does: there a relist or a resync is many
    /// entries, and a version read between them would claim a state the store is not in.
    pub fn bookmark(&self, resource_version: &str) {
        if !self.atomic || resource_version.is_empty() {
            return;
        }
        let mut st = self.state.lock();
        self.push(
            &mut st,
            Arc::from(""),
            Delta::Bookmark(resource_version.into()),
        );
    }

    /// Replaces the contents with a full list, without a resourceVersion. The one-shot
    /// form of [`begin_replace`](Self::begin_replace) /
    /// [`replace_page`](Self::replace_page) / [`finish_replace`](Self::finish_replace).
    pub fn replace(&self, list: Vec<K>) -> Result<()> {
        self.replace_at(list, None)
    }

    /// [`replace`](Self::replace) with the list's resourceVersion: client-go's
    /// `Replace(list, resourceVersion)` (only an atomic FIFO keeps the version, in its
    /// [`ReplacedAll`]).
    pub fn replace_at(&self, list: Vec<K>, resource_version: Option<&str>) -> Result<()> {
        let mut replacement = self.begin_replace();
        self.replace_page(&mut replacement, list);
        self.finish_replace_at(replacement, resource_version)
    }

    /// Starts a replace that arrives in pages. Drops the pages of a replace that was
    /// begun and never finished.
    pub fn begin_replace(&self) -> Replacement {
        let mut st = self.state.lock();
        st.pending.clear();
        let initial = !st.population.populated;
        let Some(known) = self.known_objects.as_ref().filter(|_| !self.atomic) else {
            // Atomic: the consumer finds the deletions, the FIFO tracks no keys.
            return Replacement::new(initial, false);
        };
        let nothing_known =
            st.items.iter().all(|item| item.keyed_event().is_none()) && known.is_empty();
        Replacement::new(initial, !nothing_known)
    }

    /// Transforms and keys one page (outside the lock) and keeps it until
    /// [`finish_replace`](Self::finish_replace).
    pub fn replace_page(&self, replacement: &mut Replacement, page: Vec<K>) {
        let listed = replacement.listed(self.transform.as_ref(), page);
        self.state.lock().pending.extend(listed);
    }

    /// Ends a replace without a resourceVersion; see
    /// [`finish_replace_at`](Self::finish_replace_at).
    pub fn finish_replace(&self, replacement: Replacement) -> Result<()> {
        self.finish_replace_at(replacement, None)
    }

    /// Ends a replace at the list's `resource_version`.
    ///
    /// Plain: queues a tombstone for every key whose last queued event is not a
    /// deletion and that was not listed, and for every key the indexer knows, has
    /// nothing queued, and was not listed; *then* a `Replaced` event per listed object
    /// (client-go's `reconcileReplacement`). A key whose last queued event is a
    /// deletion needs no tombstone: a second `Deleted` event would be delivered as a
    /// second deletion ([`crate::replacement`] compares this with the DeltaFIFO).
    ///
    /// Atomic: queues one [`ReplacedAll`] holding every listed object and the version.
    ///
    /// Either way the first replace sets the initial population to everything queued
    /// (client-go's `initialPopulationCount = len(f.items)`).
    pub fn finish_replace_at(
        &self,
        replacement: Replacement,
        resource_version: Option<&str>,
    ) -> Result<()> {
        let mut st = self.state.lock();
        let listed = std::mem::take(&mut st.pending);
        if self.atomic {
            let depth = st.items.len() + 1;
            for (key, obj) in &listed {
                steps::queued(&self.component, key, &Delta::Replaced(obj.clone()), depth);
            }
            st.items.push_back(Item::ReplacedAll(ReplacedAll {
                resource_version: resource_version.filter(|rv| !rv.is_empty()).map(Arc::from),
                objects: listed,
            }));
            self.ready.notify_one();
        } else {
            let tombstones = replacement.tombstones(
                || NewestPerKey::of(&st.items),
                self.known_objects.as_deref(),
                QueuedDeletion::Skip,
            );
            for (key, delta) in tombstones {
                self.push(&mut st, key, delta);
            }
            for (key, obj) in listed {
                self.push(&mut st, key, Delta::Replaced(obj));
            }
        }
        if !st.population.populated {
            st.population.populated = true;
            st.population.initial_count = st.items.len();
        }
        self.signal_if_synced(&mut st);
        drop(st);
        replacement.into_result()
    }

    /// Plain: queues a `Sync` event for every known object with no event queued (a
    /// queued event means the indexer still holds the previous state, which a sync
    /// would deliver after the newer one). Atomic: queues one `SyncAll`, which the
    /// consumer turns into a sync of every object in its store when it gets there,
    /// when every earlier event has been applied.
    pub fn resync(&self) {
        let mut st = self.state.lock();
        if self.atomic {
            st.items.push_back(Item::SyncAll);
            self.ready.notify_one();
            return;
        }
        let Some(known) = &self.known_objects else {
            return;
        };
        let queued: KeySet = st
            .items
            .iter()
            .filter_map(Item::keyed_event)
            .map(|(key, _)| key.clone())
            .collect();
        for key in known.list_keys() {
            if queued.contains(key.as_str()) {
                continue;
            }
            if let Some(obj) = known.get_by_key(&key) {
                self.push(&mut st, key.into(), Delta::Sync(obj));
            }
        }
    }

    /// Whether the initial list has been fully popped and processed: client-go's
    /// `HasSynced`.
    pub fn has_synced(&self) -> bool {
        let st = self.state.lock();
        st.population.has_synced()
    }

    /// Closes the FIFO: `pop` returns `None` once the queued entries are consumed.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.ready.notify_waiters();
    }

    /// Number of queued entries: events (not keys: one key can have several),
    /// bookmarks, and whole-queue entries (a `ReplacedAll` counts once).
    pub fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys of the queued events, in order, one per event; bookmarks and
    /// whole-queue entries are not listed (for tests).
    pub fn list_keys(&self) -> Vec<String> {
        self.state
            .lock()
            .items
            .iter()
            .filter_map(Item::keyed_event)
            .map(|(k, _)| k.to_string())
            .collect()
    }
}
