//! How the informer applies what it pops: client-go's `processDeltas`,
//! `processDeltasInBatch` and `processReplacedAllInfo` (controller.go).
//!
//! Every entry is applied to the indexer first and handed to the handlers second, all
//! under the processor's lock (client-go's `blockDeltas`), so a handler registered
//! meanwhile takes its snapshot of the cache either before or after an entry, never in
//! the middle. That lock, not the queue's, is what makes an entry one unit for the
//! handlers: with unlock-while-processing the reflector keeps queueing while an entry
//! is applied here, and nothing it queues is looked at until the next pop.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use kube::Resource;

use super::Inner;
use crate::delta::{DeletedFinalStateUnknown, DeletedObject, Delta};
use crate::keys::KeySet;
use crate::processor_listener::Notification;
use crate::real_fifo::{Popped, ReplacedAll};
use crate::steps;

impl<K: Resource + Send + Sync + 'static> Inner<K> {
    /// Applies one popped entry; see the [module docs](self).
    pub(super) fn handle_popped(&self, popped: Popped<K>, is_in_initial_list: bool) {
        match popped {
            Popped::Events(batch) => self.handle_batch(batch, is_in_initial_list),
            Popped::ReplacedAll(all) => self.handle_replaced_all(all, is_in_initial_list),
            Popped::SyncAll => self.handle_sync_all(),
        }
    }

    /// Applies a batch of deltas to the indexer, in order, and distributes them:
    /// client-go's `processDeltas` / `processDeltasInBatch`. Holds the processor's
    /// lock once for the whole batch. Keys are the FIFO's own `Arc<str>`, which the
    /// indexer shares.
    fn handle_batch(&self, batch: Vec<(Arc<str>, Delta<K>)>, is_in_initial_list: bool) {
        let processor = self.processor.lock();
        let in_order = self.in_order.load(Ordering::Relaxed);
        // A watch event's resourceVersion is a point the cache has reached once its
        // object is applied (events arrive in resourceVersion order; a list's objects
        // do not, so a list carries its own version). Recorded right after the
        // indexer took the object and before any handler is told: a handler that
        // reads `last_store_sync_resource_version` sees at least its event's version,
        // as in client-go, whose store records it in Add, Update and Delete. Never
        // before the object is in: the version must not run ahead of the contents.
        for (key, delta) in batch {
            let reached: Option<Arc<str>> = watch_event_resource_version(&delta)
                .filter(|_| in_order)
                .map(Arc::from);
            let reach = || {
                if let Some(rv) = reached.clone() {
                    self.indexer.bookmark(rv);
                }
            };
            match delta {
                Delta::Bookmark(rv) => {
                    self.indexer.bookmark(rv.clone());
                    processor.distribute(None, Notification::Bookmark(rv), false);
                }
                Delta::Added(obj)
                | Delta::Updated(obj)
                | Delta::Replaced(obj)
                | Delta::Sync(obj) => match self.indexer.add(key.clone(), obj.clone()) {
                    Some(old) => {
                        reach();
                        steps::indexed(&self.component, &key, "update");
                        let is_sync = old.meta().resource_version == obj.meta().resource_version;
                        processor.distribute(
                            Some(&key),
                            Notification::Update { old, new: obj },
                            is_sync,
                        );
                    }
                    None => {
                        reach();
                        steps::indexed(&self.component, &key, "add");
                        processor.distribute(
                            Some(&key),
                            Notification::Add {
                                obj,
                                is_in_initial_list,
                            },
                            false,
                        );
                    }
                },
                Delta::Deleted(deleted) => {
                    self.indexer.delete(&key);
                    reach();
                    steps::indexed(&self.component, &key, "delete");
                    processor.distribute(Some(&key), Notification::Delete(deleted), false);
                }
            }
        }
    }

    /// Applies a whole list as one unit: client-go's `processReplacedAllInfo`.
    ///
    /// 1. Against the store as it is now (every earlier entry applied), find the keys
    ///    the list lacks (tombstones carrying the store's last state) and the old state
    ///    of every listed key.
    /// 2. Swap the store's contents for the list in one step
    ///    ([`Indexer::replace_shared`](crate::Indexer::replace_shared)): a reader sees the old
    ///    contents or the new, never a mix. Then record the list's version.
    /// 3. Notify: every deletion first, then an add or update per listed object in
    ///    list order (the order a plain RealFIFO queues them), then the bookmark.
    ///
    /// The objects move from the entry into the store: each `Arc` is shared by the
    /// store and the notifications, never deep-copied. An initial list into an empty
    /// store looks nothing up.
    fn handle_replaced_all(&self, all: ReplacedAll<K>, is_in_initial_list: bool) {
        let processor = self.processor.lock();
        let ReplacedAll {
            resource_version,
            objects,
        } = all;
        let mut deletions = Vec::new();
        let mut olds: Vec<Option<Arc<K>>> = Vec::new();
        if !self.indexer.is_empty() {
            let listed: KeySet = objects.iter().map(|(key, _)| key.clone()).collect();
            for key in self.indexer.list_keys() {
                if !listed.contains(key.as_str()) {
                    let obj = self.indexer.get_by_key(&key);
                    deletions.push(DeletedFinalStateUnknown { key, obj });
                }
            }
            olds = objects
                .iter()
                .map(|(key, _)| self.indexer.get_by_key(key))
                .collect();
        }
        self.indexer.replace_shared(
            objects
                .iter()
                .map(|(key, obj)| (key.clone(), obj.clone()))
                .collect(),
        );
        if let Some(rv) = &resource_version {
            self.indexer.bookmark(rv.clone());
        }
        for tombstone in deletions {
            let key: Arc<str> = Arc::from(tombstone.key.as_str());
            steps::indexed(&self.component, &key, "delete");
            let deleted = DeletedObject::Tombstone(tombstone);
            processor.distribute(Some(&key), Notification::Delete(deleted), false);
        }
        let mut olds = olds.into_iter();
        for (key, obj) in objects {
            match olds.next().flatten() {
                Some(old) => {
                    steps::indexed(&self.component, &key, "update");
                    let is_sync = old.meta().resource_version == obj.meta().resource_version;
                    processor.distribute(
                        Some(&key),
                        Notification::Update { old, new: obj },
                        is_sync,
                    );
                }
                None => {
                    steps::indexed(&self.component, &key, "add");
                    let add = Notification::Add {
                        obj,
                        is_in_initial_list,
                    };
                    processor.distribute(Some(&key), add, false);
                }
            }
        }
        if let Some(rv) = resource_version {
            processor.distribute(None, Notification::Bookmark(rv), false);
        }
    }

    /// Re-delivers every cached object to the handlers due for a resync, as an update
    /// from the object to itself: client-go's `SyncAll` case of `processDeltas`. The
    /// store does not change.
    fn handle_sync_all(&self) {
        let processor = self.processor.lock();
        for key in self.indexer.list_keys() {
            if let Some(obj) = self.indexer.get_by_key(&key) {
                let key: Arc<str> = key.into();
                let sync = Notification::Update {
                    old: obj.clone(),
                    new: obj,
                };
                processor.distribute(Some(&key), sync, true);
            }
        }
    }
}

/// The resourceVersion of a delta that came from a watch event (`ADDED`,
/// `MODIFIED`, `DELETED`), not from a list, a resync or a tombstone.
fn watch_event_resource_version<K: Resource>(delta: &Delta<K>) -> Option<&str> {
    let obj = match delta {
        Delta::Added(obj) | Delta::Updated(obj) => obj,
        Delta::Deleted(DeletedObject::Object(obj)) => obj,
        _ => return None,
    };
    obj.meta().resource_version.as_deref()
}
