//! The reflector: client-go's `tools/cache/reflector.go`.
//!
//! A reflector keeps the informer's queue (an [`InformerQueue`]: client-go's
//! [`RealFifo`](crate::RealFifo) by default, or the classic
//! [`DeltaFifo`](crate::DeltaFifo)) in step with the API server: it **lists** every
//! object once, hands the list to the queue as a replace, then **watches** for changes
//! from the list's resourceVersion and hands each change to the queue. The rest of the
//! informer never talks to the API server.
//!
//! By default the list is a *streaming list* ([`watch_list`]): one watch that first
//! sends every existing object and then continues as the watch. Servers without it
//! get a paged list followed by a watch, as client-go does by default.
//!
//! # The loop, and what happens when things go wrong
//!
//! * A watch that ends cleanly (the server's `timeoutSeconds` ran out, a load balancer
//!   closed it) is simply started again from the **last resourceVersion seen**. Every
//!   event and every BOOKMARK advances that version, which is why bookmarks are
//!   requested: after a quiet hour the version is still recent.
//! * `410 Gone` / `Expired` (on the watch or the list) means the server no longer has
//!   history that old (etcd compacted it). The reflector **relists**; objects that were
//!   deleted meanwhile are missing from the new list and the queue turns them into
//!   tombstone deletions. Nothing is lost, only the intermediate states.
//! * Any other error (connection refused while the API server restarts, a 5xx, a
//!   decoding error) waits with exponential backoff and jitter, 800 ms doubling up to
//!   30 s (and, as in client-go, the jitter stretches each wait by up to as much
//!   again: the waits settle in `[30 s, 60 s)`), then retries what failed. The backoff
//!   resets after two minutes without errors. A watch that ends within a second
//!   without delivering anything also counts as an error, so a misbehaving server can
//!   never cause a tight loop.
//! * A watch that could not be *started* (or that ended within a second with no
//!   event) is retried from the same version, so a
//!   restart of the API server costs no relist if its watch cache still covers the
//!   version. client-go does that for `connection refused` and `429` only and relists
//!   after any other failure to start a watch; we keep the version for all of them on
//!   purpose: the failure says nothing about the events the cache holds, and a relist
//!   of a large cache is the most expensive request an informer makes.
//! * An error reported *inside* an established watch (an `ERROR` event, or a stream
//!   that cannot be decoded) means the server could not deliver the events it owed:
//!   as in client-go, the reflector waits with backoff and then **relists**. An
//!   object deleted without a `DELETED` event (the API server's unsafe deletion of a
//!   corrupt object, which ends the watch with a `500` `StoreReadError`) leaves the
//!   cache only that way. A `429 TooManyRequests` in a watch is the exception, as in
//!   client-go: back off, then watch again from the same version. A watch that breaks
//!   off (the connection is lost) is watched again from the last version after the
//!   backoff.
//! * An object that `K` cannot hold (a custom resource written through another
//!   version of its CRD, say) never fails the list: the list decodes around it, the
//!   object stays out of the cache, and it is reported until it decodes again
//!   ([`crate::unreadable`]). An event the watch cannot decode relists at once (at most
//!   once per [`UNDECODABLE_RELIST_INTERVAL`], not after a backoff step: client-go
//!   backs off), and the relist sets the object aside.
//! * A `410 Gone` relists at once, where client-go's `Run` loop waits one backoff
//!   step first: the answer says the server is healthy and only its history is
//!   compacted, so waiting would only leave the cache stale for longer.
//! * Every failed attempt is logged with its error and the wait, counted
//!   (`reflector_list_errors_total`, `reflector_watch_errors_total`, [`crate::metrics`])
//!   and shown on the pipeline page as a banner ([`pipeline::troubles`]) until a list
//!   succeeds or a watch delivers again. The store is never cleared on an error: the
//!   listers keep serving the last state. (A custom resource whose conversion webhook
//!   is down is the common case: every list and watch of the version that needs the
//!   webhook fails with the API server's `500` naming the webhook, cluster-wide.)
//! * The loop stops when its [`CancellationToken`] is cancelled.
//! * A `404` on a list or a watch start means the resource is not served (a custom
//!   resource whose CRD was deleted, or is not created yet): said once, `has_synced`
//!   false until it is served and listed again, retried with the usual backoff
//!   (`reflector/not_served.rs`).
//! * A lister-watcher whose selection can change (a sharded informer whose ranges
//!   moved, [`crate::shard`]) hands out a relist signal
//!   ([`ListerWatcher::relist_signal`]): when it fires, the watch is ended and the
//!   reflector **relists** with the new selection. A watch cannot widen what it
//!   selects, and objects no longer selected must leave the cache; the relist's
//!   replace does both (the objects that left become tombstone deletions).
//!
//! Every BOOKMARK is also handed to the queue
//! ([`InformerQueue::bookmark`](crate::InformerQueue::bookmark)), and every finished
//! list ends with its resourceVersion
//! ([`InformerQueue::finish_replace_at`](crate::InformerQueue::finish_replace_at)): an
//! atomic [`RealFifo`](crate::RealFifo) (the default) carries both in order with the
//! events, so the informer can tell how fresh its cache is (client-go 1.36's
//! `LastStoreSyncResourceVersion`, KEP-5647); the other queues drop them, as
//! client-go's do.
//!
//! # Which resourceVersion the first list uses, and why
//!
//! Every list (the first one and every relist) asks for resourceVersion `""`: the
//! most recent state, a *consistent* read; as a stream (`sendInitialEvents` with
//! `resourceVersionMatch=NotOlderThan`), or in pages of 500. This differs from
//! client-go, whose first list asks for `"0"` (*any* version, served from the API
//! server's watch cache so that hundreds of controllers restarting after an upgrade
//! do not all hit etcd). We measured both against Kubernetes 1.34 and chose `""`:
//!
//! * Since Kubernetes 1.31 a consistent list is *also* served from the watch cache
//!   (`ConsistentListFromCache`): etcd only answers a cheap "current revision" query,
//!   so the thundering-herd argument for `"0"` is gone. (The continuation pages of a
//!   paged list are answered from etcd when the cache no longer holds a snapshot of
//!   the list's version, as we measured on a quiet 1.34 server; a stream never is.)
//! * A `"0"` list ignores `limit` and arrives as **one** response holding every
//!   object; a `""` list really is paged. Paging, plus transforming each page as it
//!   arrives ([`InformerQueue::replace_page`], see [`crate::replacement`]), is what
//!   keeps the peak memory of an initial sync near the transformed size
//!   (docs/benchmarks.md: 50k ConfigMaps).
//! * The answer is never stale, so the watch that follows starts from a current
//!   version. A relist after `410 Gone` needs exactly that anyway.
//!
//! (kube-runtime's watcher makes the same choice by default.)

use std::fmt;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::api::WatchEvent;
use parking_lot::Mutex;
use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::informer_queue::InformerQueue;
use crate::lister_watcher::{
    DEFAULT_PAGE_SIZE, ListOptions, ListerWatcher, WatchOptions, WatchStream,
};
use crate::metrics::{ReflectorMetrics, ReflectorMetricsProvider};
use crate::unreadable::{SetAside, Unreadable, UnreadableHook};

mod backoff;
mod not_served;
pub mod watch_list;
use backoff::Backoff;
pub use backoff::BackoffConfig;
use not_served::Served;
use watch_list::WatchList;

/// The annotation of the bookmark that ends a streaming list's initial events.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// How a watch ended.
enum WatchEnd {
    Cancelled,
    /// The server closed it; re-watch from the last version.
    Closed {
        events: usize,
        lasted: Duration,
    },
    /// 410: relist.
    Gone,
    /// The lister-watcher's selection changed: relist.
    Reselect,
    /// An event that cannot be decoded (an object `K` cannot hold): relist at once,
    /// at most once per [`UNDECODABLE_RELIST_INTERVAL`] ([`crate::unreadable`]).
    Undecodable(kube::Error),
    /// An error: back off, then watch again from the last version, or relist
    /// (`relist`: the server reported an error inside an established watch).
    Failed {
        error: kube::Error,
        relist: bool,
    },
}

/// Whether an error is worth retrying as it was after a backoff, without starting
/// over: `429 TooManyRequests`, or a refused connection (the API server is
/// restarting). client-go's `isWatchErrorRetriable`.
pub(crate) fn is_retriable(err: &kube::Error) -> bool {
    if matches!(err, kube::Error::Api(s) if s.code == 429 || s.reason == "TooManyRequests") {
        return true;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// How a watch that reported `err` mid-stream ends: an error from the server (an
/// `ERROR` event, a `Status`) or an undecodable stream relists, as in client-go,
/// except `429`; a transport error watches again.
fn mid_watch_failure(error: kube::Error) -> WatchEnd {
    if is_gone(&error) {
        return WatchEnd::Gone;
    }
    let relist = match &error {
        kube::Error::Api(_) => !is_retriable(&error),
        kube::Error::SerdeError(_) => return WatchEnd::Undecodable(error),
        _ => false,
    };
    WatchEnd::Failed { error, relist }
}

/// The shortest time between two relists caused by undecodable watch events. The
/// relist is what sets such an object aside, so it comes at once rather than after a
/// backoff step (a backoff grows to a minute, and the whole cache would wait that long
/// after every write to one bad object); the interval bounds what an object rewritten
/// in a loop can cost: one relist per interval, never a hot loop.
pub const UNDECODABLE_RELIST_INTERVAL: Duration = Duration::from_secs(5);

/// Keeps an [`InformerQueue`] in step with the API server. See the [module docs](self).
pub struct Reflector<K> {
    name: String,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    store: Arc<InformerQueue<K>>,
    page_size: u32,
    backoff: BackoffConfig,
    last_sync_resource_version: Mutex<String>,
    /// Whether to list by streaming (see [`watch_list`]); cleared for good when the
    /// server turns out not to support it.
    watch_list: AtomicBool,
    /// `None` unless a metrics provider is installed (see [`crate::metrics`]).
    metrics: Option<ReflectorMetrics>,
    /// Shows a failing list or watch on the pipeline page until it works again.
    trouble: pipeline::TroubleReporter,
    /// The objects `K` cannot hold, left out of the cache ([`crate::unreadable`]).
    set_aside: SetAside,
    /// The informer's synced flag, turned false while the resource is not served
    /// ([`not_served`]); `None` for a reflector on its own.
    synced: Option<Arc<watch::Sender<bool>>>,
}

impl<K> fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.name)
            .field("page_size", &self.page_size)
            .field(
                "last_sync_resource_version",
                &*self.last_sync_resource_version.lock(),
            )
            .finish_non_exhaustive()
    }
}

/// Whether the API server said the resourceVersion is too old (410 Gone / Expired).
pub fn is_gone(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 410 || s.reason == "Expired" || s.reason == "Gone")
}

impl<K: Resource + Send + Sync + 'static> Reflector<K> {
    /// A reflector named `name` (used in logs) that feeds `store` from
    /// `lister_watcher`.
    pub fn new(
        name: impl Into<String>,
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        store: Arc<InformerQueue<K>>,
    ) -> Self {
        let name = name.into();
        let component = crate::steps::component::<K>();
        Self {
            metrics: ReflectorMetrics::resolve(&name, None),
            trouble: pipeline::troubles().reporter(component.as_ref(), pipeline::Stage::Fifo),
            set_aside: SetAside::new(&name, component.as_ref()),
            synced: None,
            name,
            lister_watcher,
            store,
            page_size: DEFAULT_PAGE_SIZE,
            backoff: BackoffConfig::default(),
            last_sync_resource_version: Mutex::new(String::new()),
            watch_list: AtomicBool::new(true),
        }
    }

    /// Whether to list by streaming (`sendInitialEvents`, see [`watch_list`]; default
    /// `true`, falling back to paged lists on servers without it) or always in pages.
    pub fn with_watch_list(self, enabled: bool) -> Self {
        self.watch_list.store(enabled, Ordering::Relaxed);
        self
    }

    /// Reports this reflector's metrics to `provider` instead of the global one
    /// ([`set_global_reflector_metrics_provider`](crate::metrics::set_global_reflector_metrics_provider)).
    pub fn with_metrics_provider(mut self, provider: Arc<dyn ReflectorMetricsProvider>) -> Self {
        self.metrics = ReflectorMetrics::resolve(&self.name, Some(&provider));
        self
    }

    /// Turns `synced` (an informer's has-synced flag) false while the API server does
    /// not serve the resource (a 404: its CRD deleted), and true again once it is
    /// listed after its return (`reflector/not_served.rs`).
    pub fn with_synced_flag(mut self, synced: Arc<watch::Sender<bool>>) -> Self {
        self.synced = Some(synced);
        self
    }

    /// Calls `hook` for each object `K` cannot decode, once per object and
    /// resourceVersion, when it is set aside ([`crate::unreadable`]).
    pub fn with_on_unreadable(mut self, hook: UnreadableHook) -> Self {
        self.set_aside.set_hook(hook);
        self
    }

    /// The objects `K` cannot decode, left out of the cache as of the last list and
    /// the events since ([`crate::unreadable`]).
    pub fn unreadable(&self) -> Vec<Unreadable> {
        self.set_aside.all()
    }

    /// Sets the list page size (default 500; 0 = no paging).
    pub fn with_page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size;
        self
    }

    /// Sets the error backoff.
    pub fn with_backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// The resourceVersion of the last list, event or bookmark: client-go's
    /// `LastSyncResourceVersion`.
    pub fn last_sync_resource_version(&self) -> String {
        self.last_sync_resource_version.lock().clone()
    }

    fn set_resource_version(&self, rv: &str) {
        if !rv.is_empty() {
            rv.clone_into(&mut self.last_sync_resource_version.lock());
            if let Some(m) = &self.metrics {
                m.resource_version(rv);
            }
        }
    }

    /// Lists and watches until `cancel` is cancelled: client-go's `ListAndWatch` in
    /// its `BackoffUntil` loop.
    pub async fn run(&self, cancel: CancellationToken) {
        let mut backoff = Backoff::new(self.backoff);
        let mut need_list = true;
        // Set after a list was answered 410 (a continue token expired mid-paging):
        // the next attempt starts over at once, a second 410 backs off.
        let mut list_gone_once = false;
        // Fires when the selection changes (a sharded informer's ranges moved).
        let mut relist = self.lister_watcher.relist_signal();
        // Whether the resource is served at all (a 404: its CRD deleted).
        let mut served = Served::default();
        // When an undecodable watch event last caused a relist.
        let mut undecodable_relist: Option<Instant> = None;
        loop {
            if cancel.is_cancelled() {
                return;
            }
            if need_list && let Some(relist) = relist.as_mut() {
                // This list uses the selection as of now; a later change relists again.
                relist.borrow_and_update();
            }
            // A streaming list that synced continues as the watch.
            let mut synced_stream = None;
            if need_list && self.watch_list.load(Ordering::Relaxed) {
                let list_started = Instant::now();
                match self.watch_list(&cancel).await {
                    WatchList::Synced { stream, count } => {
                        if let Some(m) = &self.metrics {
                            m.list_done(Some(count), list_started.elapsed());
                        }
                        // Every object decoded, or the stream would have been abandoned.
                        self.set_aside.listed(Vec::new(), self.metrics.as_ref());
                        served.listed(&self.name, self.store.has_synced(), self.synced.as_ref());
                        need_list = false;
                        list_gone_once = false;
                        self.trouble.recovered();
                        synced_stream = Some(stream);
                    }
                    WatchList::Cancelled => return,
                    WatchList::Failed {
                        reason,
                        unsupported: true,
                    } => {
                        tracing::info!(reflector = %self.name, %reason, "the server does not support streaming lists; listing in pages from now on");
                        self.watch_list.store(false, Ordering::Relaxed);
                    }
                    WatchList::Retry { reason } => {
                        if let Some(m) = &self.metrics {
                            m.list_done(None, list_started.elapsed());
                        }
                        let message = "streaming list failed; backing off and streaming again";
                        if !self
                            .back_off(&mut backoff, "list", message, &reason, false, &cancel)
                            .await
                        {
                            return;
                        }
                        continue;
                    }
                    WatchList::Failed { reason, .. } if served.quiet() => {
                        tracing::debug!(reflector = %self.name, %reason, "streaming list failed; listing in pages this time");
                    }
                    WatchList::Failed { reason, .. } => {
                        tracing::warn!(reflector = %self.name, %reason, "streaming list failed; listing in pages this time");
                    }
                }
            }
            if need_list {
                // Always the most recent state: see "Which resourceVersion" above.
                let list_started = Instant::now();
                let listed = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return,
                    listed = self.list("") => listed,
                };
                if let Some(m) = &self.metrics {
                    m.list_done(listed.as_ref().ok().copied(), list_started.elapsed());
                }
                match listed {
                    Ok(_) => {
                        need_list = false;
                        list_gone_once = false;
                        self.trouble.recovered();
                        served.listed(&self.name, self.store.has_synced(), self.synced.as_ref());
                    }
                    Err(e) if is_gone(&e) && !list_gone_once => {
                        tracing::info!(reflector = %self.name, "list expired while paging; listing again");
                        list_gone_once = true;
                        continue;
                    }
                    Err(e) => {
                        served.failed(&self.name, &e, self.synced.as_ref());
                        let message = "list failed; the cache keeps what it has";
                        if !self
                            .back_off(&mut backoff, "list", message, &e, served.quiet(), &cancel)
                            .await
                        {
                            return;
                        }
                        continue;
                    }
                }
            }

            let end = match synced_stream {
                Some(stream) => self.watch_handler(stream, &cancel, relist.as_mut()).await,
                None => {
                    let rv = self.last_sync_resource_version();
                    match self.start_watch(&rv, false, &cancel).await {
                        None => return,
                        Some(Ok(stream)) => {
                            self.watch_handler(stream, &cancel, relist.as_mut()).await
                        }
                        Some(Err(e)) if is_gone(&e) => WatchEnd::Gone,
                        Some(Err(error)) => WatchEnd::Failed {
                            error,
                            relist: false,
                        },
                    }
                }
            };
            match end {
                WatchEnd::Cancelled => return,
                WatchEnd::Closed { events, lasted } => {
                    if events == 0 && lasted < Duration::from_secs(1) {
                        if let Some(m) = &self.metrics {
                            m.short_watch();
                        }
                        let error = format!("closed after {lasted:?} with no events");
                        if !self
                            .back_off(
                                &mut backoff,
                                "watch",
                                "very short watch",
                                &error,
                                false,
                                &cancel,
                            )
                            .await
                        {
                            return;
                        }
                    }
                }
                WatchEnd::Gone => {
                    tracing::info!(reflector = %self.name, rv = %self.last_sync_resource_version(), "watch: resource version too old (410); relisting");
                    need_list = true;
                }
                WatchEnd::Undecodable(error) => {
                    if let Some(m) = &self.metrics {
                        m.watch_failed();
                    }
                    let wait = undecodable_relist.map_or(Duration::ZERO, |last| {
                        UNDECODABLE_RELIST_INTERVAL.saturating_sub(last.elapsed())
                    });
                    tracing::warn!(reflector = %self.name, %error, relist_in = ?wait,
                        "a watch event cannot be decoded; relisting, which sets the object aside");
                    if !sleep_or_cancel(wait, &cancel).await {
                        return;
                    }
                    undecodable_relist = Some(Instant::now());
                    need_list = true;
                }
                WatchEnd::Reselect => {
                    tracing::info!(reflector = %self.name, "selection changed; relisting");
                    need_list = true;
                }
                WatchEnd::Failed { error, relist } => {
                    if let Some(m) = &self.metrics {
                        m.watch_failed();
                    }
                    // Not served (its CRD deleted): list again once it is.
                    let relist = relist || served.failed(&self.name, &error, self.synced.as_ref());
                    let message = if relist {
                        "watch ended with an error; relisting after a backoff"
                    } else {
                        "watch failed; retrying from the last resource version"
                    };
                    if !self
                        .back_off(
                            &mut backoff,
                            "watch",
                            message,
                            &error,
                            served.quiet(),
                            &cancel,
                        )
                        .await
                    {
                        return;
                    }
                    need_list |= relist;
                }
            }
        }
    }

    /// After a failed attempt at `what` (`list`, `watch`): logs `message` with the
    /// error and the wait, shows the failure on the pipeline page, and waits the next
    /// backoff step; `false` if cancelled first. The store is never touched, so the
    /// listers keep serving the last state while the server refuses. `quiet`: the
    /// failure was said once already (a resource not served), log at `debug`.
    async fn back_off(
        &self,
        backoff: &mut Backoff,
        what: &'static str,
        message: &str,
        error: &(dyn fmt::Display + Sync),
        quiet: bool,
        cancel: &CancellationToken,
    ) -> bool {
        let delay = backoff.delay();
        if quiet {
            tracing::debug!(reflector = %self.name, %error, retry_in = ?delay, "{message}");
        } else {
            tracing::warn!(reflector = %self.name, %error, retry_in = ?delay, "{message}");
        }
        self.trouble.failing(what, error, delay);
        sleep_or_cancel(delay, cancel).await
    }

    /// Starts a watch from `rv` with bookmarks (a streaming list with
    /// `send_initial_events`) and counts it; `None` if cancelled first.
    async fn start_watch(
        &self,
        rv: &str,
        send_initial_events: bool,
        cancel: &CancellationToken,
    ) -> Option<Result<WatchStream<K>, kube::Error>> {
        let options = WatchOptions {
            resource_version: rv.to_string(),
            // Randomised, so that many watchers do not all reconnect at once.
            timeout_seconds: rand::rng().random_range(300..600),
            allow_bookmarks: true,
            send_initial_events,
        };
        if let Some(m) = &self.metrics {
            m.watch_started();
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            started = self.lister_watcher.watch(&options) => Some(started),
        }
    }

    /// Lists every page at `rv` and replaces the queue's contents; returns how many
    /// objects it listed. Each page is transformed and queued as it arrives
    /// ([`InformerQueue::replace_page`]): the informer moves page N into the indexer while
    /// page N+1 is on the wire, and an untransformed list is never held in full. The
    /// tombstones for objects missing from the list wait for the last page. If a page
    /// fails, the replace is abandoned (no tombstones) and the caller relists.
    async fn list(&self, rv: &str) -> Result<usize, kube::Error> {
        let mut replacement = self.store.begin_replace();
        let mut count = 0;
        let mut options = ListOptions {
            resource_version: rv.to_string(),
            limit: self.page_size,
            continue_token: None,
        };
        let mut unreadable = Vec::new();
        let list_rv = loop {
            let mut page = self.lister_watcher.list(&options).await?;
            count += page.items.len();
            unreadable.append(&mut page.unreadable);
            self.store.replace_page(&mut replacement, page.items);
            match page.continue_token {
                Some(token) => options.continue_token = Some(token),
                None => break page.resource_version,
            }
        };
        // The list's version travels with it: an atomic FIFO's store takes both in one
        // step (client-go's `Replace(list, rv)`); the other queues keep no version.
        if let Err(e) = self.store.finish_replace_at(replacement, &list_rv) {
            tracing::warn!(reflector = %self.name, error = %e, "list contained objects that cannot be keyed; skipped them");
        }
        self.set_resource_version(&list_rv);
        self.set_aside.listed(unreadable, self.metrics.as_ref());
        tracing::debug!(reflector = %self.name, count, rv = %list_rv, "listed");
        Ok(count)
    }

    /// Feeds watch events into the queue until the watch ends: client-go's
    /// `watchHandler`.
    async fn watch_handler(
        &self,
        mut stream: WatchStream<K>,
        cancel: &CancellationToken,
        mut relist: Option<&mut watch::Receiver<u64>>,
    ) -> WatchEnd {
        let started = Instant::now();
        let mut events = 0;
        // One cancellation future for the whole watch, not one per event.
        let mut cancelled = pin!(cancel.cancelled());
        loop {
            let reselected = async {
                match relist.as_deref_mut() {
                    // A dropped sender never changes the selection again.
                    Some(rx) => {
                        if rx.changed().await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let next = tokio::select! {
                _ = &mut cancelled => return WatchEnd::Cancelled,
                _ = reselected => return WatchEnd::Reselect,
                next = stream.next() => next,
            };
            let event = match next {
                None => {
                    return WatchEnd::Closed {
                        events,
                        lasted: started.elapsed(),
                    };
                }
                Some(Err(e)) => return mid_watch_failure(e),
                Some(Ok(event)) => event,
            };
            events += 1;
            if let WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) =
                &event
            {
                // Readable again (or deleted): no longer set aside.
                self.set_aside.event_for(obj, self.metrics.as_ref());
            }
            let (rv, result) = match event {
                WatchEvent::Added(obj) => {
                    (obj.meta().resource_version.clone(), self.store.add(obj))
                }
                WatchEvent::Modified(obj) => {
                    (obj.meta().resource_version.clone(), self.store.update(obj))
                }
                WatchEvent::Deleted(obj) => {
                    (obj.meta().resource_version.clone(), self.store.delete(obj))
                }
                WatchEvent::Bookmark(bookmark) => {
                    self.store.bookmark(&bookmark.metadata.resource_version);
                    (Some(bookmark.metadata.resource_version), Ok(()))
                }
                WatchEvent::Error(status) => return mid_watch_failure(kube::Error::Api(status)),
            };
            if events == 1 {
                // The server delivers again (cheap unless a failure was shown).
                self.trouble.recovered();
            }
            if let Err(e) = result {
                tracing::warn!(reflector = %self.name, error = %e, "skipping a watch event that cannot be keyed");
            }
            if let Some(rv) = rv {
                self.set_resource_version(&rv);
            }
        }
    }
}

/// Sleeps for `delay`; `false` if cancelled first.
async fn sleep_or_cancel(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}
