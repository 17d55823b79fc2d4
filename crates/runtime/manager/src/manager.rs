//! What a controller binary does around its controllers: controller-runtime's Manager,
//! or the body of kube-controller-manager's `Run`.
//!
//! [`Manager::new`] builds the shared parts from the flags ([`ManagerArgs`]): a
//! throttled client, the shared informer factory, the Event broadcaster and recorder
//! (for the Events API `--events-api` selects, see [`EventsApi`]), the Prometheus
//! metrics (installed process-wide, so queues, reflectors and the sync loop report
//! into them) and the health checks. The binary builds its controllers on those and
//! hands each to [`Manager::add`] (controller-runtime's `mgr.Add`: a [`Runnable`],
//! its readiness served as `/readyz/<name>`). [`Manager::run`] then:
//!
//! 1. serves `/metrics` (by default over HTTPS, each request authenticated and
//!    authorized by the API server: `--metrics-secure`) and `/healthz` + `/readyz`
//!    (plain: the kubelet probes them);
//! 2. starts the informers at once - also on a standby replica, so its cache is warm and
//!    `/readyz` reports ready (readiness means "can take over", not "is leading");
//! 3. without `--leader-elect`, starts every runnable and runs them until SIGTERM;
//!    With `--shard-group` (README "Scaling out"), every replica is active: the
//!    informers cache only this replica's ranges, the controllers' gates admit only
//!    its keys, and the shard coordinator ([`sharding::Shard`]) runs beside them,
//!    leaving the group (after the controllers drained) on SIGTERM;
//! 4. with it, starts at once the runnables that do not need leadership
//!    ([`Runnable::need_leader_election`] false), waits to acquire the Lease, starts the
//!    others (the controllers) while leading, and:
//!    - on SIGTERM: stops the controllers and lets them drain, **then** releases the
//!      Lease (so the next leader never overlaps with our last writes), exits 0;
//!    - on losing the Lease (renewals failed past the renew deadline): drops the
//!      controllers at once, mid-sync if need be, and returns
//!      [`ManagerError::LostLeadership`]; the binary exits non-zero and the kubelet
//!      restarts it with a clean cache, as client-go's `OnStoppedLeading: klog.Fatal`
//!      does.
//! 5. stops the runnables that run on every replica, flushes queued Events and stops
//!    the servers.
//!
//! The first runnable that fails stops the others and the run returns its error
//! ([`ManagerError::Runnable`]), as controller-runtime's manager does.

use std::sync::Arc;
use std::time::Duration;

use cache::SharedInformerFactory;
use clap::Args;
use leaderelection::{
    LeaderCallbacks, LeaderElectionArgs, LeaderElector, ResourceLock, default_identity,
};
use metrics::{Health, Metrics, ServingArgs};
use record::EventRecorder;
use sharding::{LeaseMembers, Shard, ShardArgs, ShardMetrics};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use webhook::{WebhookArgs, WebhookMetrics, WebhookServer};

use crate::events::{Events, EventsApi, unreadable_hook};
use crate::group::{Added, RunnableGroup};
use crate::logging::LoggingError;
use crate::options::{ClientArgs, ClientConfigError, RunArgs, log_metrics_mode};
use crate::runnable::Runnable;
use crate::throttle::ThrottleStats;

/// How long shutdown waits for queued Events to be written.
pub const EVENT_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Every flag a controller binary shares: client, run, leader election, serving,
/// Events.
#[derive(Debug, Clone, Args)]
pub struct ManagerArgs {
    /// API server connection and client-side throttling.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Workers, resync, namespace, logs.
    #[command(flatten)]
    pub run: RunArgs,
    /// `--leader-elect*`.
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
    /// `--metrics-bind-address`, `--metrics-secure`, `--metrics-cert-*`,
    /// `--health-probe-bind-address`, `--debug-pipeline`.
    #[command(flatten)]
    pub serving: ServingArgs,
    /// Which API to write Events with: events.k8s.io/v1 (EventSeries; what current
    /// client-go controllers write) or core/v1 (count, lastTimestamp; client-go's
    /// tools/record). Both need RBAC for `events` in their API group
    /// (the manager's ClusterRole must grant the one chosen; kcr's grants both).
    #[arg(long, env = "EVENTS_API", value_enum, default_value_t = EventsApi::EventsV1, value_name = "API")]
    pub events_api: EventsApi,
    /// `--webhook-bind-address` (off by default), `--webhook-cert-dir`, ...: the
    /// admission webhook server (crates/runtime/webhook).
    #[command(flatten)]
    pub webhook: WebhookArgs,
    /// `--shard-group` and `--shard-*` durations: run as one of N active replicas
    /// (crates/runtime/sharding).
    #[command(flatten)]
    pub sharding: ShardArgs,
}

/// Why a manager could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// The client could not be configured.
    #[error(transparent)]
    Client(#[from] ClientConfigError),
    /// A metrics or health server could not bind, or a readiness check could not be
    /// added (two runnables with one name).
    #[error(transparent)]
    Serving(#[from] metrics::Error),
    /// The Event broadcaster could not start.
    #[error(transparent)]
    Events(#[from] record::BroadcasterError),
    /// The leader election configuration is invalid.
    #[error(transparent)]
    LeaderElection(#[from] leaderelection::ConfigError),
    /// The sharding flags are invalid (or combined with `--leader-elect`).
    #[error("sharding: {0}")]
    Sharding(#[from] sharding::ConfigError),
    /// The webhook server could not start (no certificate, port taken, ...).
    #[error(transparent)]
    Webhook(#[from] webhook::Error),
    /// A runnable failed (for a controller: it was stopped before its caches synced).
    #[error("{name} failed")]
    Runnable {
        /// The runnable's [`name`](Runnable::name).
        name: String,
        /// Its error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The binary's Tokio runtime could not be built ([`crate::main`]).
    #[error("building the Tokio runtime")]
    Runtime(#[source] std::io::Error),
    /// Logging could not be set up ([`crate::main`]).
    #[error(transparent)]
    Logging(#[from] LoggingError),
    /// This replica lost the Lease; it stopped its controllers and must exit.
    #[error("leader election lost: another replica may now be leading; exiting to restart clean")]
    LostLeadership,
}

/// The shared parts of a controller process. See the [module docs](self).
pub struct Manager {
    name: String,
    args: ManagerArgs,
    client: kube::Client,
    throttle: Arc<ThrottleStats>,
    factory: SharedInformerFactory,
    events: Events,
    recorder: EventRecorder,
    metrics: Metrics,
    health: Health,
    webhooks: WebhookServer,
    runnables: Vec<Added>,
    /// With `--shard-group`: this replica's membership.
    shard: Option<Shard>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("name", &self.name)
            .field("args", &self.args)
            .field(
                "runnables",
                &self.runnables.iter().map(|r| &r.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// Builds the client, factory, Event recorder (reporting controller `name`, for
    /// the API of `--events-api`), metrics and health checks from `args`.
    pub async fn new(name: impl Into<String>, args: ManagerArgs) -> Result<Self, ManagerError> {
        let (client, throttle) = args.client.client_with_stats().await?;
        Self::with_client(name.into(), args, client, throttle)
    }

    /// [`new`](Self::new) on a client already built (the tests' `FakeApi`).
    pub(crate) fn with_client(
        name: String,
        args: ManagerArgs,
        client: kube::Client,
        throttle: Arc<ThrottleStats>,
    ) -> Result<Self, ManagerError> {
        record_pipeline_if_served(&args.serving, pipeline::global());
        // Install the metrics first: queues and informers pick the provider up when
        // they are created.
        let metrics = Metrics::new();
        if !metrics.install_global() {
            warn!("a metrics provider was already installed; this manager's metrics stay empty");
        }
        throttle.register(&metrics.registry);
        let shard = new_shard(&args, &client, &metrics)?;
        // The process's wire, before any client is built: the informers and the typed
        // clients the controllers write through (gentype) both follow it.
        cache::Wire::set_process_default(args.client.kube_api_content_type);
        let (events, recorder) = Events::start(args.events_api, &client, &name)?;
        info!(events_api = %args.events_api, "recording Events");
        let mut factory = SharedInformerFactory::new(client.clone(), args.run.resync_period)
            .with_strip_managed_fields(!args.run.keep_managed_fields)
            // An object a controller's type cannot decode gets a Warning Event.
            .with_on_unreadable(unreadable_hook(recorder.clone()))
            .with_wire(args.client.kube_api_content_type)
            // The informer metrics' name (client-go's InformerName): the binary's.
            .with_name(name.clone());
        // What is asked; each informer logs what the server answers at its first list.
        info!(
            content_type = args.client.kube_api_content_type.content_type(),
            "informers and clients ask for {} (built-in types; custom resources are JSON)",
            args.client.kube_api_content_type.as_str()
        );
        if let Some(shard) = &shard {
            factory = factory.with_shard_ranges(shard.ranges());
        }
        let webhooks = args
            .webhook
            .server()
            .with_metrics(WebhookMetrics::new(&metrics.registry));
        Ok(Self {
            name,
            args,
            client,
            throttle,
            factory,
            events,
            recorder,
            metrics,
            health: Health::new(),
            webhooks,
            runnables: Vec::new(),
            shard,
        })
    }

    /// This replica's shard membership, with `--shard-group`: give
    /// [`Shard::gate`] to each controller (the informers already cache only this
    /// replica's ranges).
    pub fn shard(&self) -> Option<&Shard> {
        self.shard.as_ref()
    }

    /// The (throttled) API client.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The throttle's request counters.
    pub fn throttle_stats(&self) -> &Arc<ThrottleStats> {
        &self.throttle
    }

    /// The shared informer factory; ask it for informers before [`run`](Self::run).
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// A recorder for Events from this process.
    pub fn recorder(&self) -> EventRecorder {
        self.recorder.clone()
    }

    /// The health checks. [`add`](Self::add) registers each runnable's readiness;
    /// add other checks here.
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// The admission webhook server: register validators and defaulters here before
    /// [`run`](Self::run) (controller-runtime's `mgr.GetWebhookServer()`). It serves
    /// only when `--webhook-bind-address` is set, on every replica (admission does
    /// not wait for leadership), and `/readyz` waits for it.
    pub fn webhook_server(&mut self) -> &mut WebhookServer {
        &mut self.webhooks
    }

    /// The process's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The flags.
    pub fn args(&self) -> &ManagerArgs {
        &self.args
    }

    /// Adds `runnable` to what [`run`](Self::run) starts (controller-runtime's
    /// `mgr.Add`), and its readiness ([`Runnable::is_ready`]) to `/readyz`, as
    /// `/readyz/<name>`. Fails if another runnable has the same name.
    pub fn add<R: Runnable>(&mut self, runnable: R) -> Result<(), ManagerError> {
        let runnable = Arc::new(runnable);
        let ready = Arc::clone(&runnable);
        self.health
            .add_readyz_check(runnable.name(), move || ready.is_ready())?;
        self.runnables.push(Added::new(runnable));
        Ok(())
    }

    /// Serves metrics and health, starts the informers, and runs what was
    /// [`add`](Self::add)ed until `shutdown` fires - those that need leadership only
    /// while leading when `--leader-elect` is set (controller-runtime's `mgr.Start`).
    /// See the [module docs](self).
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), ManagerError> {
        let lock = self.args.leader_election.leader_elect.then(|| {
            let lock: Arc<dyn ResourceLock> = Arc::new(self.args.leader_election.lease_lock(
                self.client.clone(),
                &pod_namespace(),
                &self.name,
                default_identity(),
            ));
            lock
        });
        self.run_with_lock(shutdown, lock).await
    }

    /// [`run`](Self::run), under leader election on `lock` if there is one (the
    /// `--leader-elect-*` Lease; the tests' in-memory lock).
    pub(crate) async fn run_with_lock(
        mut self,
        shutdown: CancellationToken,
        lock: Option<Arc<dyn ResourceLock>>,
    ) -> Result<(), ManagerError> {
        let servers = CancellationToken::new();
        let _stop_servers = servers.clone().drop_guard();
        let serving = &self.args.serving;
        // Secure (the default): HTTPS, each request reviewed by the API server through
        // this client (TokenReview, SubjectAccessReview). The certificate loads here,
        // so a bad --metrics-cert-path fails the start.
        let metrics_serving = serving.metrics_serving(&self.client)?;
        log_metrics_mode(serving, &metrics_serving);
        for (endpoints, server) in [
            (
                "metrics",
                metrics::bind_metrics_serving(
                    &serving.metrics_address(),
                    self.metrics.registry.clone(),
                    metrics_serving,
                )
                .await?,
            ),
            (
                "health",
                metrics::bind_health(&serving.health_probe_bind_address, self.health.clone())
                    .await?,
            ),
        ]
        .into_iter()
        .filter_map(|(endpoints, server)| Some((endpoints, server?)))
        {
            // The address as bound: with port 0 in the flag, the one the system chose.
            info!(address = %server.local_addr(), endpoints, scheme = server.scheme(), "serving");
            tokio::spawn(server.serve(servers.clone()));
        }
        let webhooks = std::mem::replace(
            &mut self.webhooks,
            WebhookServer::new(metrics::BindAddress::Disabled, ""),
        );
        self.health
            .add_readyz_check("webhook", webhooks.readiness().check())?;
        let paths = webhooks.paths();
        if let Some(server) = webhooks.bind().await? {
            info!(address = %server.local_addr(), ?paths, "serving admission webhooks");
            tokio::spawn(server.serve(servers.clone()));
        }

        // Informers run until shutdown, leading or not.
        self.factory.start(&shutdown);

        // Sharded: the coordinator runs beside the controllers until they drained.
        let shard_stop = CancellationToken::new();
        let shard_task = self.shard.clone().map(|shard| {
            if let Some(metrics) = shard.metrics() {
                for informer in self.factory.sharded_informers() {
                    metrics.track_filter(&informer.name, informer.filter.clone());
                    let cached = informer.cached.clone();
                    metrics.track_cache(&informer.name, move || cached());
                }
            }
            let stop = shard_stop.clone();
            tokio::spawn(async move { shard.run(stop).await })
        });

        // Without leader election every runnable starts now; with it, only those that
        // do not need leadership, the others once this replica leads.
        let (leaders, everywhere): (Vec<_>, Vec<_>) = std::mem::take(&mut self.runnables)
            .into_iter()
            .partition(|runnable| lock.is_some() && runnable.need_leader_election);
        let mut everywhere = RunnableGroup::start(everywhere);
        let result = if let Some(lock) = lock {
            self.run_leader_elected(lock, &shutdown, leaders, &mut everywhere)
                .await
        } else {
            tokio::select! {
                _ = shutdown.cancelled() => Ok(()),
                err = everywhere.failed() => Err(err),
            }
        };
        // Stopped last: with leader election, after the Lease is released.
        let stopped = everywhere.stop().await;
        // The controllers drained: now leave the shard group (releasing its ranges).
        shard_stop.cancel();
        if let Some(task) = shard_task {
            let _ = task.await;
        }
        if !self.events.shutdown(EVENT_FLUSH_TIMEOUT).await {
            warn!("not every queued Event was written before shutdown");
        }
        result.and(stopped)
    }

    /// Step 4 of the [module docs](self): the election, and `leaders` while leading;
    /// `everywhere` (already running) stops the run if one of them fails.
    async fn run_leader_elected(
        &self,
        lock: Arc<dyn ResourceLock>,
        shutdown: &CancellationToken,
        leaders: Vec<Added>,
        everywhere: &mut RunnableGroup,
    ) -> Result<(), ManagerError> {
        let identity = lock.identity().to_string();
        let mut config = self.args.leader_election.config(lock);
        config.name = self.name.clone();
        // We release ourselves, after the controllers have drained (below).
        config.release_on_cancel = true;

        let (leading_tx, mut leading_rx) = mpsc::channel::<CancellationToken>(1);
        let elector_metrics = self.metrics.leader_election.clone();
        let name = self.name.clone();
        let callbacks = LeaderCallbacks::new(
            move |leading: CancellationToken| {
                let tx = leading_tx.clone();
                async move {
                    let _ = tx.send(leading).await;
                }
            },
            move || info!(lease = %name, "stopped leading"),
        )
        .on_new_leader(move |leader| info!(%leader, "new leader observed"));
        let elector = LeaderElector::new(config, callbacks)?;
        let election = CancellationToken::new();
        let mut elector_task = Some(tokio::spawn({
            let election = election.clone();
            async move {
                if let Err(err) = elector.run(election).await {
                    error!(error = %err, "leader election did not run");
                }
            }
        }));

        self.metrics.leader_election.off(&self.name);
        info!(identity, lease = %self.name, "standing by until this replica leads");
        let leading = tokio::select! {
            _ = shutdown.cancelled() => None,
            err = everywhere.failed() => {
                stop_election(&election, &mut elector_task).await;
                return Err(err);
            }
            leading = leading_rx.recv() => leading,
        };
        let Some(leading) = leading else {
            stop_election(&election, &mut elector_task).await;
            return Ok(());
        };
        self.metrics.leader_election.on(&self.name);
        info!(identity, "leading: starting controllers");

        let mut running = RunnableGroup::start(leaders);
        let outcome = tokio::select! {
            err = running.failed() => Stopped::Failed(err),
            err = everywhere.failed() => Stopped::Failed(err),
            _ = shutdown.cancelled() => Stopped::Shutdown,
            _ = leading.cancelled() => Stopped::LostLease,
        };
        let result = match outcome {
            // Graceful: drain first, then release the Lease.
            Stopped::Shutdown => running.stop().await,
            Stopped::Failed(err) => {
                let _ = running.stop().await;
                Err(err)
            }
            Stopped::LostLease => {
                // Not one more write: the controllers are dropped mid-sync.
                error!("leadership lost; stopping controllers at once");
                running.abort().await;
                Err(ManagerError::LostLeadership)
            }
        };
        elector_metrics.off(&self.name);
        stop_election(&election, &mut elector_task).await;
        result
    }
}

/// The shard membership `--shard-group` asks for, reporting into `metrics`.
fn new_shard(
    args: &ManagerArgs,
    client: &kube::Client,
    metrics: &Metrics,
) -> Result<Option<Shard>, ManagerError> {
    let Some(config) = args.sharding.config(default_identity()) else {
        return Ok(None);
    };
    if args.leader_election.leader_elect {
        return Err(sharding::ConfigError(
            "--shard-group and --leader-elect cannot be combined: a shard group's replicas are all active".into(),
        )
        .into());
    }
    let namespace = args
        .sharding
        .shard_lease_namespace
        .clone()
        .unwrap_or_else(pod_namespace);
    let store = Arc::new(LeaseMembers::new(client.clone(), &namespace, &config.group));
    info!(group = %config.group, identity = %config.identity, %namespace, "sharding: this replica caches and reconciles only its ranges");
    Ok(Some(
        Shard::new(config, store)?.with_metrics(ShardMetrics::new(&metrics.registry)),
    ))
}

/// Why the leader's runnables stop.
enum Stopped {
    /// SIGTERM: drain.
    Shutdown,
    /// A runnable failed: stop the others, return its error.
    Failed(ManagerError),
    /// The Lease was lost: drop them at once.
    LostLease,
}

/// Stops the elector (which releases the Lease if we hold it) and waits for it.
async fn stop_election(
    election: &CancellationToken,
    task: &mut Option<tokio::task::JoinHandle<()>>,
) {
    election.cancel();
    if let Some(task) = task.take() {
        let _ = task.await;
    }
}

/// Turns the pipeline trace off unless `--debug-pipeline` serves it: the trace is
/// read only through `/debug/pipeline`, so without the view recording would cost
/// memory (about 4 MB of rings) and CPU for nobody. Never turns it on (so
/// `PIPELINE_TRACE=off` wins).
fn record_pipeline_if_served(serving: &ServingArgs, trace: &pipeline::Trace) {
    if !serving.debug_pipeline {
        trace.set_enabled(false);
    }
}

/// The namespace for the Lease when `--leader-elect-resource-namespace` is not set: the
/// Pod's own namespace in a cluster (controller-runtime's default), else "default".
fn pod_namespace() -> String {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok()
        })
        .map(|ns| ns.trim().to_string())
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string())
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
