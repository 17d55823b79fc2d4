//! The shared index informer: client-go's `sharedIndexInformer`
//! (tools/cache/shared_informer.go).
//!
//! It wires the pieces together: a [`Reflector`] fills a queue (by default a
//! [`RealFifo`] with atomic events, every event in arrival order and a relist applied
//! as one unit, as in client-go 1.36; with
//! [`set_queue_kind`](SharedIndexInformer::set_queue_kind), the plain RealFIFO or the
//! classic [`DeltaFifo`]); one loop pops the entries, applies them to the [`Indexer`]
//! (the cache listers read) and hands an add / update / delete notification to every
//! registered handler (`apply`). "Shared" means one
//! informer, one watch and one cache per kind, however many controllers and handlers
//! use it (see [`SharedInformerFactory`](crate::SharedInformerFactory)).
//!
//! What it guarantees, like client-go:
//!
//! * The cache is updated **before** handlers hear about a change, so a worker that
//!   reads the lister after taking a key from its queue sees at least that state.
//! * A handler registered after the informer started first gets a synthetic add for
//!   every cached object (flagged `is_in_initial_list`), then live events; the handover
//!   is atomic, so nothing is missed or doubled.
//! * Each registration has its own [`has_synced`](ResourceEventHandlerRegistration::has_synced):
//!   true once the informer synced *and* that handler has processed its initial adds.
//! * Resync: every handler may ask for its own period; the informer checks at the
//!   shortest one and re-delivers every cached object (as an update with equal old and
//!   new resourceVersion) only to the handlers that are due.
//! * An update whose resourceVersion did not change (a relist of an unchanged object)
//!   is a sync, and only goes to handlers in a resync round.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::delta_fifo::DeltaFifo;
use crate::error::{Error, Result};
use crate::informer_metrics::{InformerMetrics, InformerNameAndResource};
use crate::informer_queue::{InformerQueue, QueueKind};
use crate::keys::meta_namespace_key;
use crate::lister::Lister;
use crate::lister_watcher::ListerWatcher;
use crate::processor_listener::{EventHandler, Listener, Notification};
use crate::real_fifo::{DEFAULT_BATCH_SIZE, RealFifo};
use crate::reflector::{BackoffConfig, Reflector};
use crate::registration::ResourceEventHandlerRegistration;
use crate::steps;
use crate::store::{Indexer, Indexers};
use crate::transform::TransformFunc;
use crate::unreadable::{Unreadable, UnreadableHook};

mod apply;
mod observe;
mod resync;

/// The processor: registered handlers. Holding its lock is client-go's `blockDeltas`:
/// deltas are applied and distributed under it, so a late registration can take a
/// consistent snapshot of the cache.
struct Processor<K> {
    listeners: Vec<Listener<K>>,
    next_id: u64,
}

impl<K: Send + Sync + 'static> Processor<K> {
    fn distribute(&self, key: Option<&Arc<str>>, notification: Notification<K>, is_sync: bool) {
        for listener in &self.listeners {
            if !is_sync || listener.syncing {
                listener.add(key, &notification);
            }
        }
    }
}

struct Inner<K> {
    name: String,
    /// `K`'s name in the pipeline trace.
    component: Arc<str>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    indexer: Indexer<K>,
    processor: Mutex<Processor<K>>,
    /// `true` once the initial list is in the indexer; the queue sets it (see
    /// [`RealFifo::with_synced_signal`], [`DeltaFifo::with_synced_signal`]). Shared so that registrations can follow it
    /// for as long as the informer lives.
    synced: Arc<watch::Sender<bool>>,
    reflector: Mutex<Option<Arc<Reflector<K>>>>,
    transform: Mutex<Option<TransformFunc<K>>>,
    /// Called for each object `K` cannot decode ([`crate::unreadable`]).
    on_unreadable: Mutex<Option<UnreadableHook>>,
    default_resync_period: Duration,
    backoff: Mutex<BackoffConfig>,
    watch_list: AtomicBool,
    queue_kind: Mutex<QueueKind>,
    /// Whether the running queue is the atomic RealFIFO: only then do the store's
    /// resourceVersion and the bookmarks mean "everything up to here"
    /// ([`QueueKind::tracks_store_version`]).
    in_order: AtomicBool,
    started: AtomicBool,
    /// Set by [`SharedInformerFactory::remove_informer`](crate::SharedInformerFactory::remove_informer)
    /// before it stops the informer.
    removed: AtomicBool,
    /// Set (under the processor lock) when `run` has ended: from then on a new
    /// handler is refused, as client-go's `AddEventHandlerWithOptions` refuses one
    /// once `stopped` is set.
    stopped: AtomicBool,
    /// Who this informer is in the informer metrics (client-go's
    /// `InformerNameAndResource`); `None`: no metrics.
    metrics_identity: Mutex<Option<InformerNameAndResource>>,
}

impl<K: Resource + Send + Sync + 'static> Inner<K> {
    fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// The shortest resync period of any handler, if any handler wants resyncs.
    /// As client-go's `resyncCheckPeriod`, the informer's default period counts too
    /// (even when no handler uses it): a 3 s handler on an informer whose default is
    /// 1 s is checked every second and resynced at 3 s, not at the next 2 s tick.
    fn resync_check_period(&self) -> Option<Duration> {
        let shortest = self
            .processor
            .lock()
            .listeners
            .iter()
            .filter_map(|l| l.resync_period())
            .min()?;
        let default = Some(self.default_resync_period).filter(|d| !d.is_zero());
        Some(default.map_or(shortest, |d| d.min(shortest)))
    }
}

/// An informer for one kind of object, shared by every handler and lister that needs
/// it: client-go's `SharedIndexInformer`. A cheap-to-clone handle.
///
/// ```no_run
/// # async fn example(client: kube::Client) -> Result<(), cache::Error> {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use cache::{ApiListerWatcher, EventHandlerFuncs, SharedIndexInformer};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use tokio_util::sync::CancellationToken;
///
/// let informer = SharedIndexInformer::new(
///     "configmaps",
///     Arc::new(ApiListerWatcher::new(Api::<ConfigMap>::all(client))),
///     Duration::ZERO, // no periodic resync
/// );
/// // Strip managedFields before caching: less memory per object.
/// informer.set_transform(Arc::new(|mut cm: ConfigMap| {
///     cm.metadata.managed_fields = None;
///     cm
/// }))?;
/// let registration = informer.add_event_handler(
///     EventHandlerFuncs::new().on_add(|cm: &Arc<ConfigMap>, _| {
///         println!("{:?}", cm.metadata.name);
///     }),
/// );
///
/// let stop = CancellationToken::new();
/// tokio::spawn({
///     let (informer, stop) = (informer.clone(), stop.clone());
///     async move { informer.run(stop).await }
/// });
/// informer.wait_for_cache_sync(&stop).await;
/// assert!(registration.has_synced());
/// let lister = informer.lister();
/// let cm = lister.get("default", "my-config")?; // Error::NotFound if absent
/// # Ok(())
/// # }
/// ```
pub struct SharedIndexInformer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<K> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("started", &self.inner.started.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> SharedIndexInformer<K> {
    /// An informer named `name` (for logs) over `lister_watcher`, with the namespace
    /// index. `default_resync_period` applies to handlers added without their own
    /// period; zero means no resync.
    pub fn new(
        name: impl Into<String>,
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        default_resync_period: Duration,
    ) -> Self {
        Self::with_indexer(
            name,
            lister_watcher,
            default_resync_period,
            Indexer::with_namespace_index(),
        )
    }

    /// Like [`new`](Self::new), with a caller-made indexer (custom indexes).
    pub fn with_indexer(
        name: impl Into<String>,
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        default_resync_period: Duration,
        indexer: Indexer<K>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: name.into(),
                component: steps::component::<K>(),
                lister_watcher,
                indexer,
                processor: Mutex::new(Processor {
                    listeners: Vec::new(),
                    next_id: 0,
                }),
                reflector: Mutex::new(None),
                on_unreadable: Mutex::new(None),
                transform: Mutex::new(None),
                default_resync_period,
                backoff: Mutex::new(BackoffConfig::default()),
                watch_list: AtomicBool::new(true),
                queue_kind: Mutex::new(QueueKind::default()),
                in_order: AtomicBool::new(false),
                metrics_identity: Mutex::new(None),
                started: AtomicBool::new(false),
                removed: AtomicBool::new(false),
                stopped: AtomicBool::new(false),
                synced: Arc::new(watch::Sender::new(false)),
            }),
        }
    }

    /// Registers a handler with the informer's default resync period: client-go's
    /// `AddEventHandler`. If the informer is running, the handler first gets an add
    /// for every cached object. The handler runs on a thread of its own.
    pub fn add_event_handler(
        &self,
        handler: impl EventHandler<K>,
    ) -> ResourceEventHandlerRegistration<K> {
        let period = self.inner.default_resync_period;
        self.add_event_handler_with_resync_period(handler, period)
    }

    /// Registers a handler with its own resync period (zero: none): client-go's
    /// `AddEventHandlerWithResyncPeriod`.
    ///
    /// An informer that has stopped refuses the handler, as client-go does: the
    /// handler is never called, the returned registration is already
    /// [shut down](ResourceEventHandlerRegistration::is_shut_down) and never
    /// [synced](ResourceEventHandlerRegistration::has_synced), and a warning is logged.
    /// (client-go returns an error "handler ... was not added to shared informer
    /// because it has stopped already"; here registering stays infallible, so the
    /// many callers that register before `run` need no error path.)
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl EventHandler<K>,
        resync_period: Duration,
    ) -> ResourceEventHandlerRegistration<K> {
        let mut processor = self.inner.processor.lock();
        if self.inner.stopped.load(Ordering::SeqCst) {
            tracing::warn!(
                informer = %self.inner.name,
                "handler was not added to the shared informer because it has stopped already"
            );
            return ResourceEventHandlerRegistration::refused();
        }
        let id = processor.next_id;
        processor.next_id += 1;
        let listener =
            Listener::spawn(id, &self.inner.name, Arc::new(handler), Some(resync_period));
        if self.inner.started.load(Ordering::SeqCst) {
            // Under the processor lock no delta is being applied: this snapshot and
            // the live events that follow fit together exactly.
            for obj in self.inner.indexer.list() {
                let key = meta_namespace_key(&*obj).ok().map(Arc::from);
                listener.add(
                    key.as_ref(),
                    &Notification::Add {
                        obj,
                        is_in_initial_list: true,
                    },
                );
            }
            // The snapshot is as fresh as the cache: say so, as a bookmark would.
            let rv = self.inner.indexer.last_store_sync_resource_version();
            if let (true, Some(rv)) = (self.inner.in_order.load(Ordering::SeqCst), rv) {
                listener.add(None, &Notification::Bookmark(rv));
            }
        }
        let tracker = listener.tracker.clone();
        processor.listeners.push(listener);
        ResourceEventHandlerRegistration::new(id, tracker, Arc::downgrade(&self.inner.synced))
    }

    /// Unregisters a handler: client-go's `RemoveEventHandler`. Notifications already
    /// buffered for it are still delivered; no new ones are.
    pub fn remove_event_handler(&self, registration: &ResourceEventHandlerRegistration<K>) {
        self.inner
            .processor
            .lock()
            .listeners
            .retain(|l| l.id != registration.id());
    }

    /// Sets a function applied to every object before it is cached and delivered:
    /// client-go's `SetTransform`. An error once the informer has started.
    pub fn set_transform(&self, transform: TransformFunc<K>) -> Result<()> {
        if self.inner.started.load(Ordering::SeqCst) {
            return Err(Error::AlreadyStarted("set_transform"));
        }
        *self.inner.transform.lock() = Some(transform);
        Ok(())
    }

    /// Adds indexes to the cache: client-go's `AddIndexers`.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<()> {
        self.inner.indexer.add_indexers(indexers)
    }

    /// Sets the reflector's error backoff (mostly for tests).
    pub fn set_backoff(&self, backoff: BackoffConfig) {
        *self.inner.backoff.lock() = backoff;
    }

    /// Whether the reflector lists by streaming (default `true`, with a fallback to
    /// paged lists on servers without it; see [`crate::reflector::watch_list`]) or
    /// always in pages. Takes effect when the informer starts.
    pub fn set_watch_list(&self, enabled: bool) {
        self.inner.watch_list.store(enabled, Ordering::SeqCst);
    }

    /// Which queue sits between the reflector and the indexer (default
    /// [`QueueKind::AtomicFifo`], as in client-go 1.36; see [`crate::informer_queue`]).
    /// Takes effect when the informer starts.
    pub fn set_queue_kind(&self, kind: QueueKind) {
        *self.inner.queue_kind.lock() = kind;
    }

    /// The informer's name (kind, scope, filters), as its logs and the factory say it.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The cache: client-go's `GetIndexer`.
    pub fn indexer(&self) -> &Indexer<K> {
        &self.inner.indexer
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<K>
    where
        K: Resource<DynamicType = ()>,
    {
        Lister::new(self.inner.indexer.clone())
    }

    /// Whether the initial list has been applied to the cache and delivered to the
    /// handlers' buffers: client-go's `HasSynced`.
    pub fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    /// Whether `run` has been called.
    pub fn is_started(&self) -> bool {
        self.inner.started.load(Ordering::SeqCst)
    }

    /// Calls `hook` for each object `K` cannot decode when it is left out of the cache
    /// (once per object and resourceVersion; see [`crate::unreadable`]): where a
    /// controller writes a Warning Event on it. Takes effect when the informer starts.
    pub fn on_unreadable(&self, hook: impl Fn(&Unreadable) + Send + Sync + 'static) {
        self.set_unreadable_hook(Arc::new(hook));
    }

    /// Marks the informer removed from its factory: when its `run` ends, it reports
    /// not synced.
    pub(crate) fn mark_removed(&self) {
        self.inner.removed.store(true, Ordering::SeqCst);
    }

    pub(crate) fn set_unreadable_hook(&self, hook: UnreadableHook) {
        *self.inner.on_unreadable.lock() = Some(hook);
    }

    /// The objects `K` cannot decode, left out of the cache now (empty before the
    /// informer runs; see [`crate::unreadable`]).
    pub fn unreadable(&self) -> Vec<Unreadable> {
        let reflector = self.inner.reflector.lock().clone();
        reflector.map(|r| r.unreadable()).unwrap_or_default()
    }

    /// The resourceVersion the reflector last saw (empty before the first list):
    /// client-go's `LastSyncResourceVersion`.
    pub fn last_sync_resource_version(&self) -> String {
        self.inner
            .reflector
            .lock()
            .as_ref()
            .map(|r| r.last_sync_resource_version())
            .unwrap_or_default()
    }

    /// The resourceVersion the cache has caught up with: every change up to it has
    /// been applied to the indexer and handed to the handlers (client-go 1.36's
    /// `LastStoreSyncResourceVersion`). Unlike
    /// [`last_sync_resource_version`](Self::last_sync_resource_version), which is
    /// what the reflector has *received*, events still queued are not counted.
    /// `None` before the first list is applied, and with a queue other than
    /// [`QueueKind::AtomicFifo`] (see [`Indexer::last_store_sync_resource_version`]).
    pub fn last_store_sync_resource_version(&self) -> Option<Arc<str>> {
        self.inner.indexer.last_store_sync_resource_version()
    }

    /// Waits until [`has_synced`](Self::has_synced); `false` if `cancel` fires first.
    /// client-go's `WaitForCacheSync`, which polls every 100 ms; this one is woken by
    /// the DeltaFIFO the moment the last object of the initial list is applied.
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> bool {
        let mut synced = self.inner.synced.subscribe();
        tokio::select! {
            result = synced.wait_for(|synced| *synced) => result.is_ok(),
            _ = cancel.cancelled() => self.has_synced(),
        }
    }

    /// Names this informer in the informer metrics (`informer_queued_items`,
    /// `informer_processing_latency_seconds`, `informer_store_resource_version`; see
    /// [`crate::informer_metrics`]): client-go's `SharedIndexInformerOptions.Identifier`.
    /// [`SharedInformerFactory::with_name`](crate::SharedInformerFactory::with_name) does
    /// it for the informers it hands out. Takes effect at [`run`](Self::run).
    pub fn set_metrics_identity(&self, id: InformerNameAndResource) {
        *self.inner.metrics_identity.lock() = Some(id);
    }

    /// Runs the informer until `cancel` fires: client-go's `Run`. Calling it twice is
    /// a no-op for the second call.
    pub async fn run(&self, cancel: CancellationToken) {
        if self.inner.started.swap(true, Ordering::SeqCst) {
            tracing::warn!(informer = %self.inner.name, "informer already started");
            return;
        }
        let transform = self.inner.transform.lock().clone();
        let known = Arc::new(self.inner.indexer.clone());
        let synced = watch::Sender::clone(&self.inner.synced);
        let kind = *self.inner.queue_kind.lock();
        self.inner
            .in_order
            .store(kind.tracks_store_version(), Ordering::SeqCst);
        let fifo: Arc<InformerQueue<K>> = Arc::new(match kind {
            QueueKind::DeltaFifo => DeltaFifo::new(Some(known), transform)
                .with_synced_signal(synced)
                .into(),
            QueueKind::RealFifo => RealFifo::new(known, transform)
                .with_synced_signal(synced)
                .into(),
            QueueKind::AtomicFifo => RealFifo::new_atomic(transform)
                .with_unlock_while_processing(true)
                .with_synced_signal(synced)
                .into(),
        });
        self.inner.register_gauges(&fifo);
        let mut reflector = Reflector::new(
            self.inner.name.clone(),
            self.inner.lister_watcher.clone(),
            fifo.clone(),
        )
        .with_backoff(*self.inner.backoff.lock())
        .with_watch_list(self.inner.watch_list.load(Ordering::SeqCst))
        .with_synced_flag(self.inner.synced.clone());
        if let Some(hook) = self.inner.on_unreadable.lock().clone() {
            reflector = reflector.with_on_unreadable(hook);
        }
        let reflector = Arc::new(reflector);
        *self.inner.reflector.lock() = Some(reflector.clone());

        let reflector_task = tokio::spawn({
            let cancel = cancel.clone();
            async move { reflector.run(cancel).await }
        });
        let resync_task = tokio::spawn(resync::resync_loop(
            Arc::downgrade(&self.inner),
            fifo.clone(),
            cancel.clone(),
        ));

        // The informer metrics, when this informer has an identity and a provider is
        // installed: the processing time of each pop, and after it the queue's depth
        // and the store's resourceVersion.
        let metrics = self
            .inner
            .metrics_identity
            .lock()
            .clone()
            .and_then(InformerMetrics::resolve);
        loop {
            let popped = tokio::select! {
                _ = cancel.cancelled() => break,
                popped = fifo.pop_batch(DEFAULT_BATCH_SIZE, |popped, initial| {
                    let started = metrics.as_ref().map(|_| std::time::Instant::now());
                    self.inner.handle_popped(popped, initial);
                    if let (Some(metrics), Some(started)) = (&metrics, started) {
                        metrics.processed(started.elapsed());
                    }
                }) => popped,
            };
            if popped.is_none() {
                break;
            }
            if let Some(metrics) = &metrics {
                metrics.queued(fifo.len());
                if let Some(rv) = self.inner.indexer.last_store_sync_resource_version() {
                    metrics.store_resource_version(&rv);
                }
            }
        }
        fifo.close();
        let _ = reflector_task.await;
        resync_task.abort();
        // Dropping the listeners closes their buffers; their threads deliver what is
        // buffered and end. Under the same lock, later registrations are refused.
        let mut processor = self.inner.processor.lock();
        self.inner.stopped.store(true, Ordering::SeqCst);
        processor.listeners.clear();
        // Removed from its factory: its cache follows nothing any more; the
        // registrations' `has_synced` turns false so their owners can tell. (A plain
        // stop keeps it, as client-go's `HasSynced` does.)
        if self.inner.removed.load(Ordering::SeqCst) {
            self.inner.synced.send_replace(false);
        }
    }
}
