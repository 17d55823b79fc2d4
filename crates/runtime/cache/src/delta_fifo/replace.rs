//! `Replace`, fed page by page.
//!
//! client-go's reflector collects every page of a list and then calls
//! `DeltaFIFO.Replace(list)` once. Nothing reaches the indexer until the last page has
//! arrived, and then the whole list is queued and popped in one serial burst after the
//! network is idle (at 50k objects, about a twentieth of the sync time).
//!
//! Here the reflector hands each page over as it arrives
//! ([`DeltaFifo::replace_page`]), so the informer's pop loop moves page N into the
//! indexer while page N+1 is on the wire. Only what needs the *whole* list waits for
//! [`DeltaFifo::finish_replace`]: the tombstones for keys the list did not contain, and
//! the end of the initial population (`has_synced`).
//!
//! Why delivering a page early is safe:
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

use super::{
    DeletedFinalStateUnknown, DeletedObject, Delta, DeltaFifo, State, TransformFunc, prepare_object,
};
use crate::error::{Error, Result};
use crate::keys::{KeySet, write_meta_namespace_key};

/// A replace in progress: the keys listed so far. Start one with
/// [`DeltaFifo::begin_replace`], feed it with [`DeltaFifo::replace_page`], end it with
/// [`DeltaFifo::finish_replace`]; dropping it instead abandons the replace (the pages
/// already queued stay queued, no tombstone is emitted).
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
    pub(crate) keys: Option<KeySet>,
    /// Objects listed so far (keyed ones).
    listed: usize,
    /// Whether this replace is the FIFO's first (the initial population).
    pub(crate) initial: bool,
    /// The first object that could not be keyed, reported by `finish_replace`.
    pub(crate) first_error: Option<Error>,
    /// Scratch space for building keys: one allocation per key (the `Arc<str>`).
    key_buf: String,
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

    /// Transforms and keys one page of a replace (outside the queue's lock), recording
    /// every key as listed and the first object that could not be keyed.
    pub(crate) fn prepare_page<K: Resource>(
        &mut self,
        transform: Option<&TransformFunc<K>>,
        page: Vec<K>,
    ) -> Vec<(Arc<str>, Arc<K>)> {
        let mut keyed = Vec::with_capacity(page.len());
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
                    keyed.push((key, obj));
                }
                Err(e) => {
                    self.first_error.get_or_insert(e);
                }
            }
        }
        keyed
    }

    /// The key of `obj` as an `Arc<str>` built in one allocation.
    pub(crate) fn key_of<K: Resource>(&mut self, obj: &K) -> Result<Arc<str>> {
        write_meta_namespace_key(obj, &mut self.key_buf)?;
        Ok(Arc::from(self.key_buf.as_str()))
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// Starts a replace (a list or relist) that arrives in pages. See the
    /// [module docs](self) for why pages are queued as they arrive.
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
        let keyed = replacement.prepare_page(self.transform.as_ref(), page);
        let mut st = self.state.lock();
        for (key, obj) in keyed {
            if self.queue_action(&mut st, key, Delta::Replaced(obj)) && replacement.initial {
                st.population.initial_count += 1;
            }
        }
    }

    /// Ends a replace: queues a tombstone `Deleted` delta for every key that is queued
    /// or known to the indexer but was not listed, and (for the first replace) marks
    /// the initial population complete, so `has_synced` turns true once it is popped.
    /// client-go's `Replace`, minus the part `replace_page` already did.
    pub fn finish_replace(&self, replacement: Replacement) -> Result<()> {
        let Replacement {
            keys,
            initial,
            first_error,
            ..
        } = replacement;
        let mut st = self.state.lock();
        // Untracked: everything queued or known came from this list.
        let tombstones = match &keys {
            Some(keys) => self.missing_from(&st, keys),
            None => Vec::new(),
        };
        for (key, obj) in tombstones {
            let tombstone = DeletedFinalStateUnknown {
                key: key.to_string(),
                obj,
            };
            let pushed = self.queue_action(
                &mut st,
                key,
                Delta::Deleted(DeletedObject::Tombstone(tombstone)),
            );
            if pushed && initial {
                st.population.initial_count += 1;
            }
        }
        st.population.populated = true;
        self.signal_if_synced(&mut st);
        drop(st);
        first_error.map_or(Ok(()), Err)
    }

    /// What is queued, or known to the indexer with nothing queued, but not in
    /// `listed`: the keys (and last known objects) a replace must tombstone.
    fn missing_from(&self, st: &State<K>, listed: &KeySet) -> Vec<(Arc<str>, Option<Arc<K>>)> {
        let mut missing: Vec<(Arc<str>, Option<Arc<K>>)> = st
            .items
            .iter()
            .filter(|(key, _)| !listed.contains(*key))
            .map(|(key, deltas)| (key.clone(), deltas.last().and_then(|d| d.object().cloned())))
            .collect();
        // The indexer's keys with nothing queued (queued ones were handled above).
        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if listed.contains(key.as_str())
                    || st.items.get(key.as_str()).is_some_and(|d| !d.is_empty())
                {
                    continue;
                }
                let obj = known.get_by_key(&key);
                missing.push((key.into(), obj));
            }
        }
        missing
    }
}
