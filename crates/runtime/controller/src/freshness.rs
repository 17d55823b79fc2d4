//! Read your own writes: the staleness guard (client-go 1.36's "stale controller"
//! mitigation, KEP-5647, in the ReplicaSet, DaemonSet, StatefulSet and Job
//! controllers behind the `StaleControllerConsistency*` gates).
//!
//! # The problem
//!
//! A sync reads from informer caches and writes to the API server. Its own writes come
//! back to the cache a little later, through the watch. If the same key is synced
//! again inside that window (the write itself triggers an event for the key, or a
//! user changes the object), the sync acts on the state from *before* its last write:
//! it creates the Deployment it has just created (409 AlreadyExists), updates a status
//! from an old resourceVersion (409 Conflict), or flips a status back and forth. At
//! scale, when informers lag by seconds, this is a storm of wasted writes and errors.
//!
//! # The guard
//!
//! After a sync writes an object, it tells [`Freshness::wrote`] the key it was
//! syncing and the object the API server returned; the guard remembers the object's
//! resourceVersion against the key, per resource type. Before the next sync of that
//! key, the [`Controller`](crate::Controller) loop asks the guard
//! ([`Freshness::check`]) whether the informer of each type written has applied that
//! version to its store (the store's version is client-go's
//! `LastStoreSyncResourceVersion`, see `cache::Indexer::wait_until_reached`). If one
//! has not, the key is not synced: it is *parked*. A small task waits for the stores
//! ([`Freshness::wait_until_fresh`]), woken the moment they get there, and puts the
//! key back in the queue; the worker takes the next key meanwhile. If the stores take
//! longer than the bound (default [`DEFAULT_FRESHNESS_TIMEOUT`]), the task requeues
//! the key with backoff instead, as client-go's controllers do. (They requeue at
//! once, with the same backoff as an error, and retry blind; the cache is usually
//! milliseconds behind, so waking the key when it gets there costs less.)
//!
//! Only keys that wrote are held back, never the whole controller; keys that did not
//! write pay one hash lookup.
//!
//! # Safe fallbacks
//!
//! * Versions are compared only as the API allows (KEP-5504, see
//!   `cache::resource_version`). When a version is not comparable, or an informer
//!   cannot report its store's version (one running on the DeltaFIFO), the guard
//!   stops waiting and lets the sync run: a stale read at worst, as before the guard,
//!   never a stuck key.
//! * A write to a type no informer was [tracked](Freshness::track) for is ignored.
//! * The bound and the requeue's backoff mean a key whose version never shows up (an
//!   object filtered out by the informer's selector, before the next bookmark) is
//!   retried with growing delays, never in a hot loop.
//! * A parked key is not in the queue: a shutdown drops it, as it drops queued keys;
//!   the next start's initial list syncs every object anyway.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use cache::SharedIndexInformer;
//! use cache::testing::{ScriptedListerWatcher, config_map};
//! use controller::freshness::{Freshness, FreshnessOutcome};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let informer: SharedIndexInformer<ConfigMap> = SharedIndexInformer::new(
//!     "configmaps",
//!     Arc::new(ScriptedListerWatcher::new()),
//!     Duration::ZERO,
//! );
//! let freshness = Freshness::new(Duration::from_secs(1));
//! freshness.track(&informer);
//!
//! // A sync of "default/foo" updated ConfigMap "a" to version 11 ...
//! freshness.wrote("default/foo", &config_map("a", "11"));
//! // ... which the informer (not even started here) has not seen: the key's next
//! // sync is held back for the bound, then requeued.
//! assert_eq!(
//!     freshness.wait_until_fresh("default/foo").await,
//!     FreshnessOutcome::Stale { waited: Duration::from_secs(1) }
//! );
//! // Keys that wrote nothing never wait.
//! assert_eq!(freshness.wait_until_fresh("default/bar").await, FreshnessOutcome::NothingWritten);
//! # }
//! ```

use std::any::{TypeId, type_name};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cache::{Incomparable, Indexer, SharedIndexInformer, resource_version};
use futures::future::BoxFuture;
use kube::Resource;
use parking_lot::Mutex;
use tokio::time::Instant;
use tracing::{debug, info};
use workqueue::{AddOpts, RateLimitingQueue};

use crate::metrics::{FreshnessResult, observe_freshness};

/// Default for [`Freshness::new`]'s bound: how long a worker waits for its informers
/// to catch up with the key's last write before it requeues the key instead.
pub const DEFAULT_FRESHNESS_TIMEOUT: Duration = Duration::from_secs(2);

/// What [`Freshness::wait_until_fresh`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshnessOutcome {
    /// The key has no write on record: sync at once (the common case).
    NothingWritten,
    /// Every informer the key wrote to has caught up (after `waited`): sync.
    Fresh {
        /// How long the worker waited for the caches.
        waited: Duration,
    },
    /// A version was not comparable, or an informer cannot report its store's
    /// version: the guard steps aside and the sync runs (see the module docs).
    Incomparable {
        /// How long the worker waited before finding out.
        waited: Duration,
    },
    /// The bound passed before the caches caught up: do not sync; requeue the key
    /// with backoff. The write stays on record.
    Stale {
        /// How long the worker waited (the bound).
        waited: Duration,
    },
}

impl FreshnessOutcome {
    /// The label value for metrics: `fresh`, `incomparable` or `stale` (and
    /// `nothing_written`, which the loop does not report).
    pub fn as_str(self) -> &'static str {
        match self {
            FreshnessOutcome::NothingWritten => "nothing_written",
            FreshnessOutcome::Fresh { .. } => "fresh",
            FreshnessOutcome::Incomparable { .. } => "incomparable",
            FreshnessOutcome::Stale { .. } => "stale",
        }
    }

    /// How long the worker waited; zero for [`FreshnessOutcome::NothingWritten`].
    pub fn waited(self) -> Duration {
        match self {
            FreshnessOutcome::NothingWritten => Duration::ZERO,
            FreshnessOutcome::Fresh { waited }
            | FreshnessOutcome::Incomparable { waited }
            | FreshnessOutcome::Stale { waited } => waited,
        }
    }
}

/// One informer's store, seen through its resourceVersion.
trait StoreVersion: Send + Sync {
    /// `Some(true)` once the store has applied `rv`; `None` when it cannot say.
    fn has_reached(&self, rv: &str) -> Option<bool>;
    /// Resolves once the store has applied `rv` (or it turns out it cannot say).
    fn wait_until_reached<'a>(&'a self, rv: &'a str) -> BoxFuture<'a, Result<(), Incomparable>>;
}

struct InformerStore<K> {
    informer: SharedIndexInformer<K>,
    indexer: Indexer<K>,
}

impl<K: Resource + Send + Sync + 'static> InformerStore<K> {
    /// An informer that has synced but has no store version runs on the DeltaFIFO,
    /// which never has one: nothing to wait for.
    fn cannot_report(&self) -> bool {
        self.informer.has_synced() && self.indexer.last_store_sync_resource_version().is_none()
    }
}

impl<K: Resource + Send + Sync + 'static> StoreVersion for InformerStore<K> {
    fn has_reached(&self, rv: &str) -> Option<bool> {
        if self.cannot_report() {
            return None;
        }
        self.indexer.has_reached(rv)
    }

    fn wait_until_reached<'a>(&'a self, rv: &'a str) -> BoxFuture<'a, Result<(), Incomparable>> {
        Box::pin(async move {
            if self.cannot_report() {
                return Err(Incomparable);
            }
            self.indexer.wait_until_reached(rv).await
        })
    }
}

/// A write on record: which informer must catch up, and to what.
#[derive(Clone)]
struct Written {
    source: TypeId,
    resource_version: Arc<str>,
}

/// A write to wait for: the version, and the store that must reach it.
type Pending = (Arc<str>, Arc<dyn StoreVersion>);

/// A tracked informer: its type's name (for debugging) and its store.
type Tracked = (&'static str, Arc<dyn StoreVersion>);

struct Inner {
    timeout: Duration,
    /// The tracked informers, one per resource type.
    stores: Mutex<HashMap<TypeId, Tracked>>,
    /// key -> the newest write per resource type since the key's last fresh sync.
    written: Mutex<HashMap<String, Vec<Written>>>,
    /// Keys whose waiter task is running (see [`Freshness::check_or_park`]).
    parked: Mutex<HashSet<String>>,
}

/// The staleness guard: remembers each key's last writes and waits, before the key's
/// next sync, until the informers have seen them. See the [module docs](self).
///
/// Cheap to clone: give one clone to the [`Controller`](crate::Controller)
/// ([`with_freshness`](crate::Controller::with_freshness)) and one to the sync
/// handler, which calls [`wrote`](Self::wrote).
#[derive(Clone)]
pub struct Freshness {
    inner: Arc<Inner>,
}

impl fmt::Debug for Freshness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<&str> = self.inner.stores.lock().values().map(|(n, _)| *n).collect();
        f.debug_struct("Freshness")
            .field("timeout", &self.inner.timeout)
            .field("tracked", &kinds)
            .field("keys_waiting", &self.inner.written.lock().len())
            .finish()
    }
}

impl Default for Freshness {
    fn default() -> Self {
        Self::new(DEFAULT_FRESHNESS_TIMEOUT)
    }
}

impl Freshness {
    /// A guard that waits at most `timeout` per sync for the caches to catch up.
    pub fn new(timeout: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                timeout,
                stores: Mutex::new(HashMap::new()),
                written: Mutex::new(HashMap::new()),
                parked: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// The bound on one wait.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// Makes writes of `K` count: from now on [`wrote`](Self::wrote) with a `K`
    /// records its version, and the wait follows this informer's store. One informer
    /// per type; tracking a second one for the same type replaces the first.
    pub fn track<K: Resource + Send + Sync + 'static>(&self, informer: &SharedIndexInformer<K>) {
        let store = InformerStore {
            informer: informer.clone(),
            indexer: informer.indexer().clone(),
        };
        self.inner
            .stores
            .lock()
            .insert(TypeId::of::<K>(), (type_name::<K>(), Arc::new(store)));
    }

    /// Records that the sync of `key` wrote `obj` (what the API server returned from
    /// a create, update, patch or status update): the key's next sync waits until
    /// `K`'s informer has applied `obj`'s resourceVersion. Ignored when `K` is not
    /// tracked or `obj` has no version. Keeps the newest version per type.
    pub fn wrote<K: Resource + 'static>(&self, key: &str, obj: &K) {
        if let Some(rv) = obj.meta().resource_version.as_deref() {
            self.wrote_version::<K>(key, rv);
        }
    }

    /// [`wrote`](Self::wrote) for a write that answered with a version but not a
    /// whole `K` (a metadata-only patch, for example).
    pub fn wrote_version<K: 'static>(&self, key: &str, resource_version: &str) {
        let source = TypeId::of::<K>();
        if !self.inner.stores.lock().contains_key(&source) {
            debug!(
                key,
                kind = type_name::<K>(),
                "write of an untracked type: not guarded"
            );
            return;
        }
        let rv = resource_version;
        let mut written = self.inner.written.lock();
        let entries = written.entry(key.to_string()).or_default();
        match entries.iter_mut().find(|w| w.source == source) {
            // An older or incomparable version is replaced: the newest write counts.
            Some(w) => {
                if resource_version::is_at_least(&w.resource_version, rv) != Some(true) {
                    w.resource_version = rv.into();
                }
            }
            None => entries.push(Written {
                source,
                resource_version: rv.into(),
            }),
        }
    }

    /// How many keys have writes on record (for tests and debugging).
    pub fn keys_waiting(&self) -> usize {
        self.inner.written.lock().len()
    }

    /// The key's writes on record, each with the store that must reach it; `None`
    /// when the key wrote nothing.
    fn pending(&self, key: &str) -> Option<Vec<Pending>> {
        let pending = self.inner.written.lock().get(key)?.clone();
        let stores = self.inner.stores.lock();
        Some(
            pending
                .into_iter()
                .filter_map(|w| {
                    let (_, store) = stores.get(&w.source)?;
                    Some((w.resource_version, store.clone()))
                })
                .collect(),
        )
    }

    /// Looks without waiting: the outcome when it is known now (nothing written; or
    /// every store there, or one that cannot say: the record is then cleared, with a
    /// zero wait), `None` while a store has yet to reach the key's write.
    pub fn check(&self, key: &str) -> Option<FreshnessOutcome> {
        let Some(pending) = self.pending(key) else {
            return Some(FreshnessOutcome::NothingWritten);
        };
        let mut comparable = true;
        for (rv, store) in &pending {
            match store.has_reached(rv) {
                Some(true) => {}
                Some(false) => return None,
                None => comparable = false,
            }
        }
        self.inner.written.lock().remove(key);
        let waited = Duration::ZERO;
        Some(if comparable {
            FreshnessOutcome::Fresh { waited }
        } else {
            FreshnessOutcome::Incomparable { waited }
        })
    }

    /// Waits, at most the bound, until every informer `key` wrote to has caught up
    /// with that write, woken the moment the last one gets there. On
    /// [`Fresh`](FreshnessOutcome::Fresh) and
    /// [`Incomparable`](FreshnessOutcome::Incomparable) the record is cleared; on
    /// [`Stale`](FreshnessOutcome::Stale) it stays, for the requeued sync.
    ///
    /// The loop does not call this from a worker: it parks the key and lets a small
    /// task wait here (see the [module docs](self)).
    pub async fn wait_until_fresh(&self, key: &str) -> FreshnessOutcome {
        if let Some(known) = self.check(key) {
            return known;
        }
        let Some(pending) = self.pending(key) else {
            return FreshnessOutcome::NothingWritten;
        };
        let started = Instant::now();
        let mut comparable = true;
        let wait_all = async {
            for (rv, store) in &pending {
                if store.wait_until_reached(rv).await.is_err() {
                    comparable = false;
                }
            }
        };
        if tokio::time::timeout(self.inner.timeout, wait_all)
            .await
            .is_err()
        {
            return FreshnessOutcome::Stale {
                waited: started.elapsed(),
            };
        }
        self.inner.written.lock().remove(key);
        let waited = started.elapsed();
        if comparable {
            FreshnessOutcome::Fresh { waited }
        } else {
            FreshnessOutcome::Incomparable { waited }
        }
    }

    /// The loop's side of the guard, before `key`'s sync: `true` to sync now;
    /// `false` when the key is *parked*: a write of its last sync is not in the
    /// caches yet, so a small task waits for them ([`wait_until_fresh`](Self::wait_until_fresh),
    /// bounded) and then puts the key back in `queue` at `priority` (or, if the
    /// bound passed, with backoff, as client-go 1.36's controllers requeue), while
    /// the worker moves on to other keys. A key that is already parked is not
    /// parked twice: its waiter puts it back. Reports to the metrics as
    /// `controller`.
    pub(crate) fn check_or_park(
        &self,
        controller: &Arc<str>,
        key: &str,
        priority: i32,
        queue: &RateLimitingQueue<String>,
    ) -> bool {
        match self.check(key) {
            Some(FreshnessOutcome::NothingWritten) => return true,
            Some(outcome) => {
                observe(controller, key, outcome);
                return true;
            }
            None => {}
        }
        if !self.inner.parked.lock().insert(key.to_string()) {
            return false;
        }
        let (freshness, controller, queue) = (self.clone(), controller.clone(), queue.clone());
        let key = key.to_string();
        tokio::spawn(async move {
            let outcome = freshness.wait_until_fresh(&key).await;
            freshness.inner.parked.lock().remove(&key);
            observe(&controller, &key, outcome);
            if let FreshnessOutcome::Stale { waited } = outcome {
                queue.add_with_opts(&key, crate::controller::retry_opts(priority));
                info!(
                    controller = %controller,
                    key = %key,
                    ?waited,
                    retries = queue.num_requeues(&key),
                    "the informers have not seen this key's last write yet; requeued with backoff instead of syncing a stale cache"
                );
            } else {
                queue.add_with_opts(
                    key,
                    AddOpts {
                        priority,
                        ..AddOpts::default()
                    },
                );
            }
        });
        false
    }
}

/// Reports one check to the metrics and the debug log.
fn observe(controller: &str, key: &str, outcome: FreshnessOutcome) {
    let result = match outcome {
        FreshnessOutcome::NothingWritten => return,
        FreshnessOutcome::Fresh { .. } => FreshnessResult::Fresh,
        FreshnessOutcome::Incomparable { .. } => FreshnessResult::Incomparable,
        FreshnessOutcome::Stale { .. } => FreshnessResult::Stale,
    };
    observe_freshness(controller, result, outcome.waited());
    debug!(controller, key, outcome = outcome.as_str(), waited = ?outcome.waited(), "staleness guard");
}
