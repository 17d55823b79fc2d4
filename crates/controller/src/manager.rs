//! What a controller binary does around its controllers: controller-runtime's Manager,
//! or the body of kube-controller-manager's `Run`.
//!
//! [`Manager::new`] builds the shared parts from the flags ([`ManagerArgs`]): a
//! throttled client, the shared informer factory, the Event broadcaster and recorder,
//! the Prometheus metrics (installed process-wide, so queues, reflectors and the sync
//! loop report into them) and the health checks. [`Manager::run`] then:
//!
//! 1. serves `/metrics` and `/healthz` + `/readyz`;
//! 2. starts the informers at once - also on a standby replica, so its cache is warm and
//!    `/readyz` reports ready (readiness means "can take over", not "is leading");
//! 3. without `--leader-elect`, runs the controllers until SIGTERM;
//! 4. with it, waits to acquire the Lease, runs the controllers while leading, and:
//!    - on SIGTERM: stops the controllers and lets them drain, **then** releases the
//!      Lease (so the next leader never overlaps with our last writes), exits 0;
//!    - on losing the Lease (renewals failed past the renew deadline): drops the
//!      controllers at once, mid-sync if need be, and returns
//!      [`ManagerError::LostLeadership`]; the binary exits non-zero and the kubelet
//!      restarts it with a clean cache, as client-go's `OnStoppedLeading: klog.Fatal`
//!      does.
//! 5. flushes queued Events and stops the servers.

use std::future::Future;
use std::time::Duration;

use cache::SharedInformerFactory;
use clap::Args;
use leaderelection::{
    LeaderCallbacks, LeaderElectionArgs, LeaderElector, default_identity, hostname,
};
use metrics::{Health, Metrics, ServingArgs};
use record::{BroadcasterOptions, EventBroadcaster, EventRecorder};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::options::{ClientArgs, ClientConfigError, RunArgs};
use crate::throttle::ThrottleStats;

/// How long shutdown waits for queued Events to be written.
pub const EVENT_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Every flag a controller binary shares: client, run, leader election, serving.
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
    /// `--metrics-bind-address`, `--health-probe-bind-address`.
    #[command(flatten)]
    pub serving: ServingArgs,
}

/// Why a manager could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// The client could not be configured.
    #[error(transparent)]
    Client(#[from] ClientConfigError),
    /// A metrics or health server could not bind, or a check could not be added.
    #[error(transparent)]
    Serving(#[from] metrics::Error),
    /// The Event broadcaster could not start.
    #[error(transparent)]
    Events(#[from] record::BroadcasterError),
    /// The leader election configuration is invalid.
    #[error(transparent)]
    LeaderElection(#[from] leaderelection::ConfigError),
    /// A controller failed.
    #[error(transparent)]
    Controller(#[from] crate::Error),
    /// This replica lost the Lease; it stopped its controllers and must exit.
    #[error("leader election lost: another replica may now be leading; exiting to restart clean")]
    LostLeadership,
}

/// The shared parts of a controller process. See the [module docs](self).
pub struct Manager {
    name: String,
    args: ManagerArgs,
    client: kube::Client,
    throttle: std::sync::Arc<ThrottleStats>,
    factory: SharedInformerFactory,
    events: EventBroadcaster,
    recorder: EventRecorder,
    metrics: Metrics,
    health: Health,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("name", &self.name)
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// Builds the client, factory, Event recorder (source component `name`), metrics
    /// and health checks from `args`.
    pub async fn new(name: impl Into<String>, args: ManagerArgs) -> Result<Self, ManagerError> {
        let name = name.into();
        // Install the metrics first: queues and informers pick the provider up when
        // they are created.
        let metrics = Metrics::new();
        if !metrics.install_global() {
            warn!("a metrics provider was already installed; this manager's metrics stay empty");
        }
        let (client, throttle) = args.client.client_with_stats().await?;
        throttle.register(&metrics.registry);
        let factory = SharedInformerFactory::new(client.clone(), args.run.resync_period);
        let events = EventBroadcaster::new(BroadcasterOptions::default());
        events.start_recording_to_sink(client.clone())?;
        // The Events' `source.host`: the Pod's name in a cluster.
        let recorder = events.new_recorder(name.clone(), hostname().unwrap_or_default());
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
        })
    }

    /// The (throttled) API client.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The throttle's request counters.
    pub fn throttle_stats(&self) -> &std::sync::Arc<ThrottleStats> {
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

    /// The health checks; add readiness checks (e.g. "caches synced") before
    /// [`run`](Self::run).
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// The process's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The flags.
    pub fn args(&self) -> &ManagerArgs {
        &self.args
    }

    /// Serves metrics and health, starts the informers, and runs `controllers` (given a
    /// token that fires when they must stop) until `shutdown` fires - under leader
    /// election when `--leader-elect` is set. See the [module docs](self).
    pub async fn run<F, Fut>(
        self,
        shutdown: CancellationToken,
        controllers: F,
    ) -> Result<(), ManagerError>
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = crate::Result<()>>,
    {
        let servers = CancellationToken::new();
        let _stop_servers = servers.clone().drop_guard();
        let serving = &self.args.serving;
        for server in [
            metrics::bind_metrics(&serving.metrics_bind_address, self.metrics.registry.clone())
                .await?,
            metrics::bind_health(&serving.health_probe_bind_address, self.health.clone()).await?,
        ]
        .into_iter()
        .flatten()
        {
            info!(address = %server.local_addr(), "serving");
            tokio::spawn(server.serve(servers.clone()));
        }

        // Informers run until shutdown, leading or not.
        self.factory.start(&shutdown);

        let result = if self.args.leader_election.leader_elect {
            self.run_leader_elected(shutdown, controllers).await
        } else {
            controllers(shutdown).await.map_err(ManagerError::from)
        };
        if !self.events.shutdown(EVENT_FLUSH_TIMEOUT).await {
            warn!("not every queued Event was written before shutdown");
        }
        result
    }

    async fn run_leader_elected<F, Fut>(
        &self,
        shutdown: CancellationToken,
        controllers: F,
    ) -> Result<(), ManagerError>
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = crate::Result<()>>,
    {
        let le = &self.args.leader_election;
        let identity = default_identity();
        let lock = le.lease_lock(
            self.client.clone(),
            &pod_namespace(),
            &self.name,
            identity.clone(),
        );
        let mut config = le.config(std::sync::Arc::new(lock));
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
            _ = shutdown.cancelled() => {
                stop_election(&election, &mut elector_task).await;
                return Ok(());
            }
            leading = leading_rx.recv() => match leading {
                Some(token) => token,
                None => { stop_election(&election, &mut elector_task).await; return Ok(()); }
            },
        };
        self.metrics.leader_election.on(&self.name);
        info!(identity, "leading: starting controllers");

        let stop_controllers = CancellationToken::new();
        let run = controllers(stop_controllers.clone());
        tokio::pin!(run);
        let result = tokio::select! {
            result = &mut run => result.map_err(ManagerError::from),
            _ = shutdown.cancelled() => {
                // Graceful: drain first, then release the Lease.
                stop_controllers.cancel();
                (&mut run).await.map_err(ManagerError::from)
            }
            _ = leading.cancelled() => {
                // Lost the Lease: not one more write. Dropping the run future stops
                // the workers mid-sync.
                error!("leadership lost; stopping controllers at once");
                Err(ManagerError::LostLeadership)
            }
        };
        elector_metrics.off(&self.name);
        stop_election(&election, &mut elector_task).await;
        result
    }
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
