//! The loop every controller runs: sample-controller's `Run`, `runWorker` and
//! `processNextWorkItem`, written once.
//!
//! Read it top to bottom; it is the whole of "how a controller works" once the
//! informers are feeding keys into the queue:
//!
//! 1. [`Controller::run`] waits until every informer cache it was given
//!    ([`with_synced`](Controller::with_synced)) has synced. Syncing against a
//!    half-filled cache would make the controller believe objects are missing and
//!    create duplicates, so no worker starts before then (see [`crate::informer_synced`]).
//! 2. It starts `workers` workers (client-go's "threadiness"). Each one loops on
//!    [`process_next_work_item`](Controller::process_next_work_item) until the queue
//!    shuts down.
//! 3. One turn of the loop (`process_next`, in `controller/process.rs`, one named
//!    step a line): **get** a key (waiting if there is none); **admit by shard**: if
//!    the controller runs as one of several active replicas
//!    ([`with_gate`](Controller::with_gate)), skip a key that belongs to another
//!    replica (see [`crate::gate`]); **wait for fresh caches**: if the controller has
//!    a staleness guard ([`Freshness`]) and the key's last sync wrote something the
//!    informers have not seen yet, do not sync it against that stale cache: park it
//!    (a small task puts it back the moment the informers catch up, or with backoff
//!    after a bound) and take the next key. Otherwise **sync** it, observed (the
//!    [`SyncHandler`] with its trace, span, timeout and metrics), and **forget or
//!    requeue** it:
//!    - `Ok(Action::Done)`: `forget` the key, resetting its backoff;
//!    - `Ok(Action::RequeueAfter(d))`: `forget`, then `add_after(key, d)`;
//!    - `Err(e)`: log it and `add_rate_limited(key)` - the key comes back after 5 ms,
//!      10 ms, 20 ms, ... up to 1000 s with the default limiter;
//!
//!    (each requeue keeps the priority the key was handed out with, unless the sync
//!    named one: [`Action::with_priority`](crate::Action::with_priority));
//!    - a panic: caught, logged, and handled like `Err`;
//!    - past the reconcile timeout, if one is set: the sync is dropped (cancelled)
//!      and the key handled like `Err` (see `crate::outcome`).
//!
//!    In every case the key is marked `done` (the [`WorkItem`](workqueue::WorkItem)
//!    guard does it when dropped), which is what lets a key that changed while it was
//!    being synced be handed out again.
//! 4. When the cancellation token fires, the queue is shut down *with drain*: new keys
//!    are refused, workers finish the sync they are in and the keys already waiting,
//!    then exit. A drain that takes longer than the drain timeout is cut short, so a
//!    hung API call cannot hold up a rolling update forever.
//!
//! The queue guarantees that a key is never held by two workers at once, so N workers
//! give parallelism across objects and none within one.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use workqueue::{AddOpts, RateLimitingQueue};

mod process;

use crate::error::{Error, Result};
use crate::freshness::Freshness;
use crate::gate::SyncGate;
use crate::informer_synced::{InformerSynced, wait_for_cache_sync};
use crate::metrics;
use crate::steps;
use crate::sync_handler::SyncHandler;

/// Default for [`Controller::with_drain_timeout`]: long enough for in-flight syncs to
/// finish their API calls, shorter than the kubelet's default 30 s grace period so the
/// rest of a graceful shutdown (releasing a leader lease) still fits.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(20);

/// The worker loop around a [`SyncHandler`]: client-go's controller `Run`.
///
/// Cheap to clone (the queue, handler and sync checks are shared). Event handlers add
/// keys to [`queue`](Self::queue); [`run`](Self::run) waits for the informers the
/// controller was given ([`with_synced`](Self::with_synced)), then turns the keys into
/// syncs.
///
/// ```
/// use controller::{Action, Controller, SyncHandler};
/// use tokio_util::sync::CancellationToken;
/// use workqueue::{AddOpts, RateLimitingQueue};
///
/// struct Hello;
/// impl SyncHandler for Hello {
///     type Error = String;
///     async fn sync(&self, key: &str) -> Result<Action, String> {
///         println!("hello, {key}");
///         Ok(Action::Done)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = RateLimitingQueue::with_default_rate_limiter("hello");
/// let controller = Controller::new("hello", queue.clone(), Hello);
/// queue.add("default/world".to_string()); // what an event handler does
///
/// let cancel = CancellationToken::new();
/// let stop = cancel.clone();
/// tokio::spawn(async move {
///     tokio::time::sleep(std::time::Duration::from_millis(50)).await;
///     stop.cancel(); // SIGTERM, in a real binary
/// });
/// controller.run(2, cancel).await.unwrap(); // no informers to wait for here
/// # }
/// ```
pub struct Controller<H> {
    name: Arc<str>,
    queue: RateLimitingQueue<String>,
    handler: Arc<H>,
    synced: Arc<[InformerSynced]>,
    drain_timeout: Duration,
    /// A sync running longer is cancelled and its key retried (see crate::outcome).
    reconcile_timeout: Option<Duration>,
    freshness: Option<Freshness>,
    /// Which keys this replica may sync (sharded controllers).
    gate: Option<Arc<dyn SyncGate>>,
    /// Syncs running now, for the pipeline view.
    in_flight: Arc<AtomicUsize>,
}

impl<H> Clone for Controller<H> {
    fn clone(&self) -> Self {
        Self {
            name: Arc::clone(&self.name),
            queue: self.queue.clone(),
            handler: Arc::clone(&self.handler),
            synced: Arc::clone(&self.synced),
            drain_timeout: self.drain_timeout,
            reconcile_timeout: self.reconcile_timeout,
            freshness: self.freshness.clone(),
            gate: self.gate.clone(),
            in_flight: Arc::clone(&self.in_flight),
        }
    }
}

impl<H> fmt::Debug for Controller<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("queue_len", &self.queue.len())
            .field("informers", &self.synced.len())
            .field("drain_timeout", &self.drain_timeout)
            .field("freshness", &self.freshness)
            .field("gated", &self.gate.is_some())
            .finish_non_exhaustive()
    }
}

impl<H: SyncHandler> Controller<H> {
    /// A controller named `name` (used in logs) that syncs the keys of `queue` with
    /// `handler`. Keep a clone of `queue` for the event handlers.
    pub fn new(name: impl Into<String>, queue: RateLimitingQueue<String>, handler: H) -> Self {
        let name: Arc<str> = name.into().into();
        // The queue's steps in the pipeline trace (a queue shared by two controllers
        // keeps the first one's name).
        queue.set_observer(Arc::new(steps::QueueSteps {
            controller: Arc::clone(&name),
        }));
        Self {
            name,
            queue,
            handler: Arc::new(handler),
            synced: Arc::new([]),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            reconcile_timeout: None,
            freshness: None,
            gate: None,
            in_flight: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Asks `gate` before every sync whether this replica may sync the key (a
    /// sharded controller: see [`crate::gate`]). `None` (the default) syncs every key.
    pub fn with_gate(mut self, gate: Option<Arc<dyn SyncGate>>) -> Self {
        self.gate = gate;
        self
    }

    /// The caches [`run`](Self::run) waits for before any worker starts: one
    /// [`InformerSynced`] per event handler that feeds the queue
    /// ([`registration_synced`](crate::registration_synced)), as sample-controller's
    /// `Controller` keeps `foosSynced` and `deploymentsSynced`. Replaces any given
    /// before.
    pub fn with_synced(mut self, synced: Vec<InformerSynced>) -> Self {
        self.synced = synced.into();
        self
    }

    /// Guards every sync with `freshness`: a key whose last sync recorded a write
    /// ([`Freshness::wrote`]) is synced again only once the informers have seen that
    /// write (see [`crate::freshness`]). Give the handler a clone of the same guard.
    /// `None` (the default) leaves the loop unguarded, as
    /// [`LoopOptions::freshness`](crate::LoopOptions::freshness) returns it when the
    /// guard is off.
    pub fn with_freshness(mut self, freshness: Option<Freshness>) -> Self {
        self.freshness = freshness;
        self
    }

    /// How long [`run`](Self::run) waits, after cancellation, for in-flight and
    /// queued keys before it stops the workers anyway. Default
    /// [`DEFAULT_DRAIN_TIMEOUT`].
    pub fn with_drain_timeout(mut self, drain_timeout: Duration) -> Self {
        self.drain_timeout = drain_timeout;
        self
    }

    /// Cancels a sync that runs longer than `timeout` and retries its key with
    /// backoff (`None`, the default: no limit; controller-runtime's
    /// `ReconciliationTimeout`, see `crate::outcome`). Counted as `result="timeout"`
    /// and in `controller_runtime_reconcile_timeouts_total`.
    pub fn with_reconcile_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.reconcile_timeout = timeout.filter(|t| !t.is_zero());
        self
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The work queue the event handlers feed.
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        &self.queue
    }

    /// The sync handler.
    pub fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    /// Whether every informer the controller waits for has delivered its initial list
    /// to its handler (for a readiness probe: "could take over").
    pub fn has_synced(&self) -> bool {
        self.synced.iter().all(InformerSynced::has_synced)
    }

    /// Runs the controller until `cancel` fires (sample-controller's `Run(ctx,
    /// workers)`): waits for its informers' caches, starts `workers` workers, and on
    /// cancellation drains the queue (see the [module docs](self)).
    ///
    /// Returns [`Error::CachesNotSynced`] if cancelled before the caches synced (no
    /// worker ran), otherwise `Ok` once the workers have stopped. `workers` of 0 is
    /// treated as 1.
    pub async fn run(&self, workers: usize, cancel: CancellationToken) -> Result<()> {
        info!(controller = %self.name, "starting controller");
        if !wait_for_cache_sync(&self.name, &cancel, &self.synced).await {
            self.queue.shut_down();
            return Err(Error::CachesNotSynced {
                controller: self.name.to_string(),
            });
        }

        metrics::init_reconcile_metrics(&self.name);
        let _gauges = steps::register_gauges(&self.name, &self.queue, &self.in_flight);
        let workers = workers.max(1);
        info!(controller = %self.name, workers, "starting workers");
        let mut tasks = JoinSet::new();
        for worker in 0..workers {
            let this = self.clone();
            tasks.spawn(async move { while this.process_next(worker).await {} });
        }
        info!(controller = %self.name, "started workers");

        cancel.cancelled().await;
        info!(controller = %self.name, queued = self.queue.len(), "shutting down workers");
        let drained = tokio::time::timeout(self.drain_timeout, async {
            self.queue.shut_down_with_drain().await;
            // The drain returns when no key is being processed; workers then exit as
            // soon as the backlog is handed out.
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            warn!(
                controller = %self.name,
                timeout = ?self.drain_timeout,
                "workers did not finish within the drain timeout; stopping them"
            );
            self.queue.shut_down();
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
        info!(controller = %self.name, "workers stopped");
        Ok(())
    }

    /// One worker: processes keys until the queue shuts down (client-go's `runWorker`).
    pub async fn run_worker(&self) {
        while self.process_next_work_item().await {}
    }

    /// Takes one key from the queue and syncs it (client-go's `processNextWorkItem`).
    ///
    /// Returns `false` once the queue is shut down and empty, which ends the worker.
    pub async fn process_next_work_item(&self) -> bool {
        self.process_next(0).await
    }
}

/// How a key goes back after a failed, panicked or stale sync: with backoff, at the priority
/// it was handed out with (controller-runtime's
/// `AddWithOpts(AddOpts{RateLimited: true, Priority: &priority}, key)`).
pub(crate) fn retry_opts(priority: i32) -> AddOpts {
    AddOpts {
        rate_limited: true,
        priority,
        ..AddOpts::default()
    }
}
