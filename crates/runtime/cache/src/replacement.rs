//! A replace (the reflector's list or relist), fed page by page, and the deltas it
//! implies: the part of client-go's `DeltaFIFO.Replace` (`delta_fifo.go`) and
//! `RealFIFO.Replace` (its `reconcileReplacement`, `the_real_fifo.go`) that both queues
//! share.
//!
//! # What a replace queues
//!
//! A replace tells a queue "this is everything that exists now". It queues
//!
//! * a `Replaced` delta for every listed object (`Replacement::replaced`), and
//! * a `Deleted` delta carrying a [`DeletedFinalStateUnknown`] tombstone for every key
//!   the list lacks although something is queued for it or the indexer knows it
//!   (`Replacement::tombstones`): that object was deleted while the watch was down,
//!   and nobody saw its final state. The tombstone carries the last state there is: the
//!   object of the key's newest queued delta, or else the indexer's.
//!
//! Both queues compute these deltas here; each then queues them its own way (the
//! [`DeltaFifo`](crate::DeltaFifo) behind the key's other deltas, the
//! [`RealFifo`](crate::RealFifo) as events of their own).
//!
//! # Where the two queues differ, as they do in client-go
//!
//! | | DeltaFIFO (`DeltaFIFO.Replace`) | RealFIFO (`reconcileReplacement`) |
//! |---|---|---|
//! | a key the list lacks whose newest queued delta is already a deletion | tombstoned again, and the DeltaFIFO's `dedupDeltas` collapses the two deletions into one (`isDeletionDup`) | skipped: every event is its own entry, nothing would collapse the two, and handlers would hear of the deletion twice (`QueuedDeletion`) |
//! | the tombstones of queued keys come | in the order of the queue's map of keys (Go: map iteration) | in the order the keys were first queued (Go: `queuedKeys`) |
//! | the tombstones are queued | after the listed objects, which the DeltaFIFO queues page by page as they arrive | *before* the listed objects, as client-go's `RealFIFO.Replace` does ("logically the deletes of known items should happen BEFORE newItems are added"): the pages wait in the FIFO until the last one is in |
//! | the initial population counts | the keys that took a place in line (Go: `keys.Len() + queuedDeletions`) | every event queued (Go: `len(f.items)`) |
//! | the indexer (`knownObjects`) | optional: without it only queued keys can be tombstoned | required |
//!
//! A RealFIFO with *atomic events* (client-go 1.36's `AtomicFIFO`, this workspace's
//! default [`QueueKind::AtomicFifo`](crate::QueueKind::AtomicFifo)) uses none of the
//! deletion detection here: its replace becomes one `ReplacedAll` entry holding the
//! whole list, and the informer compares that list with its indexer when it applies
//! it (see [`crate::real_fifo`]). It still feeds its pages through
//! `Replacement::listed`, so every object is transformed and keyed once, outside the
//! queue's lock.
//!
//! # Fed page by page
//!
//! client-go's reflector collects every page of a list and then calls `Replace(list)`
//! once. Here the reflector hands each page over as it arrives (`replace_page` of
//! either queue), so the transform and the keying of page N run while page N+1 is on
//! the wire, and an untransformed list is never held in full.
//!
//! What happens to a page then depends on the queue:
//!
//! * The **DeltaFIFO** queues it at once, so the informer's pop loop moves page N into
//!   the indexer while page N+1 is still arriving. Only what needs the *whole* list
//!   waits for `finish_replace`: the tombstones for keys the list did not contain, and
//!   the end of the initial population (`has_synced`).
//! * The **RealFIFO** keeps the pages until `finish_replace`, because client-go's order
//!   puts the tombstones (known only once the last page is in) *before* the listed
//!   objects, and in atomic mode the whole list is one entry. That is client-go's
//!   timing too: nothing of a list reaches the indexer before its last page.
//!
//! Why delivering a page early is safe (the DeltaFIFO):
//!
//! * Every listed object is a state at the list's resourceVersion, which is at least
//!   the version the cache already reflects (lists are consistent reads). Applying it
//!   early moves that one object forward; the cache is a per-object mix of versions
//!   while a replace is being popped in client-go too.
//! * Per-key order is kept: a page's `Replaced` delta queues behind any older delta
//!   of the same key.
//! * If the list fails half-way, the pages already delivered were still real, newer
//!   states; the retry lists again from scratch and its own `finish_replace` computes
//!   the tombstones. A half-finished replace never emits a tombstone.
//! * `has_synced` stays false until `finish_replace`, however fast the pages are popped.

use std::sync::Arc;

use kube::Resource;

use crate::delta::{DeletedFinalStateUnknown, DeletedObject, Delta};
use crate::error::{Error, Result};
use crate::keys::{KeySet, write_meta_namespace_key};
use crate::known_objects::KeyListerGetter;
use crate::transform::{TransformFunc, prepare_object};

/// A replace in progress: the keys listed so far. Start one with `begin_replace`,
/// feed it with `replace_page`, end it with `finish_replace` (of the same
/// [`DeltaFifo`](crate::DeltaFifo) or [`RealFifo`](crate::RealFifo)); dropping it
/// instead abandons the replace: no tombstone is emitted; a DeltaFIFO keeps the pages
/// it already queued, a RealFIFO drops the pages it was keeping when the next replace
/// begins (nothing of them was delivered, as with client-go's reflector, which only
/// calls `Replace` with a complete list).
///
/// The listed keys are only needed to find what the list no longer contains. A
/// replace that starts with nothing queued and nothing known (an informer's first
/// list, the common case) cannot find anything missing, so it does not collect them
/// (at 50k objects, a set of 50k keys built, grown and rehashed for nothing). That
/// holds as long as the list is the queue's only source while it is being fed, as in
/// an informer, whose reflector is its queue's only writer: an object `add`ed by other
/// code between `begin_replace` and `finish_replace` of such a replace is not
/// tombstoned by it, where client-go's single-call `Replace` could not interleave.
#[derive(Debug)]
pub struct Replacement {
    /// Every key listed so far, sharing its allocation with the queue; `None` when
    /// the replace started from an empty queue and store (see above).
    keys: Option<KeySet>,
    /// Objects listed so far (keyed ones).
    listed: usize,
    /// Whether this replace is the queue's first (the initial population).
    initial: bool,
    /// The first object that could not be keyed, reported by `finish_replace`.
    first_error: Option<Error>,
    /// Scratch space for building keys: one allocation per key (the `Arc<str>`).
    key_buf: String,
}

/// What a replace does with a key the list lacks whose newest queued delta is
/// already a deletion: the one point where the two queues' replaces compute different
/// deltas (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueuedDeletion {
    /// Tombstone it anyway, as client-go's `DeltaFIFO.Replace` does: the tombstone
    /// joins the key's queued deltas, where `dedupDeltas` collapses the two deletions
    /// into one (client-go's `isDeletionDup`: the queued deletion stays, unless it is a
    /// tombstone itself; either way the content is the same).
    Tombstone,
    /// Leave it, as client-go's `reconcileReplacement` (RealFIFO) does: there every
    /// event is its own entry, so a tombstone would be a second deletion delivered.
    Skip,
}

/// A queue's contents as a replace's deletion detection reads them, under the
/// queue's lock: client-go's `f.items` (DeltaFIFO) or `queuedItems` (RealFIFO).
pub(crate) trait Queued<K> {
    /// Every key with something queued and its newest delta, in the order their
    /// tombstones are to be queued. Bookmarks, which belong to no key, are left out.
    fn newest_deltas<'a>(&'a self) -> impl Iterator<Item = (&'a Arc<str>, &'a Delta<K>)>
    where
        K: 'a;
    /// Whether `key` has something queued.
    fn is_queued(&self, key: &str) -> bool;
}

impl Replacement {
    /// How many distinct keys have been listed so far (a list holds each key once).
    pub fn len(&self) -> usize {
        self.keys.as_ref().map_or(self.listed, KeySet::len)
    }

    /// Whether nothing has been listed yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A replace that starts the initial population when `initial`, and collects the
    /// listed keys when `track_keys` (something queued or known before it started).
    pub(crate) fn new(initial: bool, track_keys: bool) -> Self {
        Self {
            keys: track_keys.then(KeySet::default),
            listed: 0,
            initial,
            first_error: None,
            key_buf: String::new(),
        }
    }

    /// The `Replaced` deltas of one page: every object transformed
    /// ([`prepare_object`]) and keyed, outside the queue's lock. Records every key as
    /// listed, and the first object that could not be keyed (skipped, and reported by
    /// [`into_result`](Self::into_result)).
    pub(crate) fn replaced<K: Resource>(
        &mut self,
        transform: Option<&TransformFunc<K>>,
        page: Vec<K>,
    ) -> Vec<(Arc<str>, Delta<K>)> {
        self.listed(transform, page)
            .into_iter()
            .map(|(key, obj)| (key, Delta::Replaced(obj)))
            .collect()
    }

    /// One page's objects, transformed and keyed, in list order: what
    /// [`replaced`](Self::replaced) wraps in `Replaced` deltas, for a queue that keeps
    /// the pages until the list is complete (the RealFIFO) and so needs no delta per
    /// object yet. Records the keys and the first error the same way.
    pub(crate) fn listed<K: Resource>(
        &mut self,
        transform: Option<&TransformFunc<K>>,
        page: Vec<K>,
    ) -> Vec<(Arc<str>, Arc<K>)> {
        let mut listed = Vec::with_capacity(page.len());
        if let Some(keys) = &mut self.keys {
            keys.reserve(page.len());
        }
        for obj in page {
            let obj = prepare_object(transform, obj);
            match self.key_of(obj.as_ref()) {
                Ok(key) => {
                    if let Some(keys) = &mut self.keys {
                        keys.insert(key.clone());
                    }
                    self.listed += 1;
                    listed.push((key, obj));
                }
                Err(e) => {
                    self.first_error.get_or_insert(e);
                }
            }
        }
        listed
    }

    /// The key of `obj` as an `Arc<str>` built in one allocation.
    fn key_of<K: Resource>(&mut self, obj: &K) -> Result<Arc<str>> {
        write_meta_namespace_key(obj, &mut self.key_buf)?;
        Ok(Arc::from(self.key_buf.as_str()))
    }

    /// The tombstones the finished list implies: a `Deleted` delta with a
    /// [`DeletedFinalStateUnknown`] for every key that is queued but not listed (with
    /// the object of its newest delta, unless `queued_deletion` skips a key whose
    /// newest delta is a deletion), then for every key `known_objects` holds that is
    /// neither listed nor queued (with the indexer's object). client-go's deletion
    /// detection in `DeltaFIFO.Replace` and `reconcileReplacement`.
    ///
    /// `queued` reads the queue; it is not called when the replace did not track its
    /// keys, since then nothing was queued or known when it began and nothing can be
    /// missing.
    pub(crate) fn tombstones<K, Q: Queued<K>>(
        &self,
        queued: impl FnOnce() -> Q,
        known_objects: Option<&dyn KeyListerGetter<K>>,
        queued_deletion: QueuedDeletion,
    ) -> Vec<(Arc<str>, Delta<K>)> {
        let Some(listed) = &self.keys else {
            return Vec::new();
        };
        let queued = queued();
        let mut tombstones = Vec::new();
        for (key, newest) in queued.newest_deltas() {
            if listed.contains(key)
                || (queued_deletion == QueuedDeletion::Skip && matches!(newest, Delta::Deleted(_)))
            {
                continue;
            }
            tombstones.push(tombstone(key.clone(), newest.object().cloned()));
        }
        // The indexer's keys with nothing queued (queued ones were handled above).
        if let Some(known) = known_objects {
            for key in known.list_keys() {
                if listed.contains(key.as_str()) || queued.is_queued(&key) {
                    continue;
                }
                let obj = known.get_by_key(&key);
                tombstones.push(tombstone(key.into(), obj));
            }
        }
        tombstones
    }

    /// Queues `deltas` in order through `enqueue`, which queues one delta and says
    /// whether it took a new place in line, and returns how many places the initial
    /// population gains: every new place if this replace is the queue's first, none
    /// for a relist (client-go's `initialPopulationCount`).
    pub(crate) fn queue_all<K>(
        &self,
        deltas: Vec<(Arc<str>, Delta<K>)>,
        mut enqueue: impl FnMut(Arc<str>, Delta<K>) -> bool,
    ) -> usize {
        let new_places = deltas
            .into_iter()
            .map(|(key, delta)| enqueue(key, delta))
            .filter(|&new_place| new_place)
            .count();
        if self.initial { new_places } else { 0 }
    }

    /// Ends the replace: the first object that could not be keyed, if any, as an
    /// error (the rest of the list has been applied).
    pub(crate) fn into_result(self) -> Result<()> {
        self.first_error.map_or(Ok(()), Err)
    }
}

/// A tombstone for `key`, as the `Deleted` delta a queue holds.
fn tombstone<K>(key: Arc<str>, obj: Option<Arc<K>>) -> (Arc<str>, Delta<K>) {
    let tombstone = DeletedFinalStateUnknown {
        key: key.to_string(),
        obj,
    };
    (key, Delta::Deleted(DeletedObject::Tombstone(tombstone)))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;
    use crate::store::Indexer;

    fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// A queue's contents: each key's newest delta, in order.
    struct Newest(Vec<(Arc<str>, Delta<ConfigMap>)>);

    impl Queued<ConfigMap> for Newest {
        fn newest_deltas<'a>(&'a self) -> impl Iterator<Item = (&'a Arc<str>, &'a Delta<ConfigMap>)>
        where
            ConfigMap: 'a,
        {
            self.0.iter().map(|(key, delta)| (key, delta))
        }
        fn is_queued(&self, key: &str) -> bool {
            self.0.iter().any(|(k, _)| &**k == key)
        }
    }

    /// `(key, resourceVersion of the last known state)` of each tombstone.
    fn described(tombstones: &[(Arc<str>, Delta<ConfigMap>)]) -> Vec<(String, Option<String>)> {
        tombstones
            .iter()
            .map(|(key, delta)| {
                let Delta::Deleted(DeletedObject::Tombstone(t)) = delta else {
                    panic!("not a tombstone: {delta:?}");
                };
                assert_eq!(t.key, **key);
                let rv = t
                    .obj
                    .as_ref()
                    .and_then(|o| o.metadata.resource_version.clone());
                (t.key.clone(), rv)
            })
            .collect()
    }

    fn known(objects: &[ConfigMap]) -> Indexer<ConfigMap> {
        let indexer = Indexer::new();
        for obj in objects {
            let key = crate::keys::meta_namespace_key(obj).unwrap();
            indexer.add(key, Arc::new(obj.clone()));
        }
        indexer
    }

    #[test]
    fn listed_objects_become_replaced_deltas_and_a_nameless_one_an_error() {
        let mut replacement = Replacement::new(true, true);
        let mark: TransformFunc<ConfigMap> = Arc::new(|mut cm: ConfigMap| {
            cm.metadata.resource_version = Some("transformed".into());
            cm
        });
        let nameless = ConfigMap::default();
        let replaced =
            replacement.replaced(Some(&mark), vec![cm("a", "1"), nameless, cm("b", "1")]);
        let keys: Vec<_> = replaced.iter().map(|(key, _)| key.to_string()).collect();
        assert_eq!(keys, ["default/a", "default/b"]);
        assert!(replaced.iter().all(|(_, d)| matches!(d, Delta::Replaced(o)
            if o.metadata.resource_version.as_deref() == Some("transformed"))));
        assert_eq!(replacement.len(), 2);
        assert!(replacement.into_result().is_err());
    }

    #[test]
    fn unlisted_queued_and_known_keys_become_tombstones_with_their_last_state() {
        let mut replacement = Replacement::new(false, true);
        replacement.replaced(None, vec![cm("listed", "5")]);
        let queue = Newest(vec![
            (
                "default/queued".into(),
                Delta::Updated(Arc::new(cm("queued", "2"))),
            ),
            (
                "default/listed".into(),
                Delta::Added(Arc::new(cm("listed", "1"))),
            ),
            (
                "default/both".into(),
                Delta::Updated(Arc::new(cm("both", "4"))),
            ),
        ]);
        let indexer = known(&[cm("known", "3"), cm("listed", "1"), cm("both", "1")]);
        let tombstones =
            replacement.tombstones(|| queue, Some(&indexer), QueuedDeletion::Tombstone);
        // Queued keys first, with their newest delta's object; "both" only once, with
        // the newer, queued state; then the indexer's keys with nothing queued.
        assert_eq!(
            described(&tombstones),
            [
                ("default/queued".into(), Some("2".into())),
                ("default/both".into(), Some("4".into())),
                ("default/known".into(), Some("3".into())),
            ]
        );
    }

    #[test]
    fn a_queued_deletion_is_tombstoned_again_by_a_delta_fifo_and_skipped_by_a_real_fifo() {
        let deleted = || {
            Newest(vec![(
                "default/gone".into(),
                Delta::Deleted(DeletedObject::Object(Arc::new(cm("gone", "7")))),
            )])
        };
        let replacement = Replacement::new(false, true);
        let again = replacement.tombstones(deleted, None, QueuedDeletion::Tombstone);
        assert_eq!(
            described(&again),
            [("default/gone".into(), Some("7".into()))]
        );
        let skipped = replacement.tombstones(deleted, None, QueuedDeletion::Skip);
        assert!(skipped.is_empty());
        // Queued, so not tombstoned again from the indexer either.
        let indexer = known(&[cm("gone", "6")]);
        let skipped = replacement.tombstones(deleted, Some(&indexer), QueuedDeletion::Skip);
        assert!(skipped.is_empty());
    }

    #[test]
    fn an_untracked_replace_reads_nothing_and_implies_no_tombstone() {
        let replacement = Replacement::new(true, false);
        let indexer = known(&[cm("known", "1")]);
        let tombstones = replacement.tombstones(
            || -> Newest { panic!("an untracked replace must not read the queue") },
            Some(&indexer),
            QueuedDeletion::Skip,
        );
        assert!(tombstones.is_empty());
    }

    #[test]
    fn only_the_first_replace_counts_new_places_toward_the_initial_population() {
        let deltas = || {
            vec![
                ("default/a".into(), Delta::Sync(Arc::new(cm("a", "1")))),
                ("default/b".into(), Delta::Sync(Arc::new(cm("b", "1")))),
                ("default/c".into(), Delta::Sync(Arc::new(cm("c", "1")))),
            ]
        };
        let mut queued = Vec::new();
        let first = Replacement::new(true, false);
        // Say "b" was already in line: it gains a delta, not a place.
        let counted = first.queue_all(deltas(), |key: Arc<str>, _| {
            queued.push(key.clone());
            &*key != "default/b"
        });
        assert_eq!((counted, queued.len()), (2, 3));
        let relist = Replacement::new(false, true);
        assert_eq!(relist.queue_all(deltas(), |_, _| true), 0);
    }
}
