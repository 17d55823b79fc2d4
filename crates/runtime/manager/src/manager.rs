//! What a controller binary does around its controllers: controller-runtime's Manager,
//! or the body of kube-controller-manager's `Run`.
//!
//! [`Manager::new`] builds the shared parts from the flags ([`ManagerArgs`]): a
//! throttled client, the shared informer factory, the Event broadcaster and recorder
//! (for the Events API `--events-api` selects, see [`EventsApi`]), the Prometheus
//! metrics (installed process-wide, so queues, reflectors and the sync loop report
//! into them) and the health checks. [`Manager::run`] then:
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
use leaderelection::{LeaderCallbacks, LeaderElectionArgs, LeaderElector, default_identity};
use metrics::{Health, Metrics, ServingArgs};
use record::EventRecorder;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use webhook::{WebhookArgs, WebhookMetrics, WebhookServer};

use crate::events::{Events, EventsApi};
use crate::options::{ClientArgs, ClientConfigError, RunArgs};
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
    /// `--metrics-bind-address`, `--health-probe-bind-address`.
    #[command(flatten)]
    pub serving: ServingArgs,
    /// Which API to write Events with: events.k8s.io/v1 (EventSeries; what current
    /// client-go controllers write) or core/v1 (count, lastTimestamp; client-go's
    /// tools/record). Both need RBAC for `events` in their API group
    /// (deploy/*/rbac.yaml grants both).
    #[arg(long, env = "EVENTS_API", value_enum, default_value_t = EventsApi::EventsV1, value_name = "API")]
    pub events_api: EventsApi,
    /// `--webhook-bind-address` (off by default), `--webhook-cert-dir`, ...: the
    /// admission webhook server (crates/runtime/webhook).
    #[command(flatten)]
    pub webhook: WebhookArgs,
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
    /// The webhook server could not start (no certificate, port taken, ...).
    #[error(transparent)]
    Webhook(#[from] webhook::Error),
    /// A controller failed.
    #[error(transparent)]
    Controller(#[from] controller::Error),
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
    events: Events,
    recorder: EventRecorder,
    metrics: Metrics,
    health: Health,
    webhooks: WebhookServer,
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
    /// Builds the client, factory, Event recorder (reporting controller `name`, for
    /// the API of `--events-api`), metrics and health checks from `args`.
    pub async fn new(name: impl Into<String>, args: ManagerArgs) -> Result<Self, ManagerError> {
        let name = name.into();
        record_pipeline_if_served(&args.serving, pipeline::global());
        // Install the metrics first: queues and informers pick the provider up when
        // they are created.
        let metrics = Metrics::new();
        if !metrics.install_global() {
            warn!("a metrics provider was already installed; this manager's metrics stay empty");
        }
        let (client, throttle) = args.client.client_with_stats().await?;
        throttle.register(&metrics.registry);
        let factory = SharedInformerFactory::new(client.clone(), args.run.resync_period)
            .with_strip_managed_fields(!args.run.keep_managed_fields);
        let (events, recorder) = Events::start(args.events_api, &client, &name)?;
        info!(events_api = %args.events_api, "recording Events");
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

    /// Serves metrics and health, starts the informers, and runs `controllers` (given a
    /// token that fires when they must stop) until `shutdown` fires - under leader
    /// election when `--leader-elect` is set. See the [module docs](self).
    pub async fn run<F, Fut>(
        mut self,
        shutdown: CancellationToken,
        controllers: F,
    ) -> Result<(), ManagerError>
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = controller::Result<()>>,
    {
        let servers = CancellationToken::new();
        let _stop_servers = servers.clone().drop_guard();
        let serving = &self.args.serving;
        for server in [
            metrics::bind_metrics_with_pipeline(
                &serving.metrics_bind_address,
                self.metrics.registry.clone(),
                serving.debug_pipeline,
            )
            .await?,
            metrics::bind_health(&serving.health_probe_bind_address, self.health.clone()).await?,
        ]
        .into_iter()
        .flatten()
        {
            info!(address = %server.local_addr(), "serving");
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
        Fut: Future<Output = controller::Result<()>>,
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
/// Turns the pipeline trace off unless `--debug-pipeline` serves it: the trace is
/// read only through `/debug/pipeline`, so without the view recording would cost
/// memory (about 4 MB of rings) and CPU for nobody. Never turns it on (so
/// `PIPELINE_TRACE=off` wins).
fn record_pipeline_if_served(serving: &ServingArgs, trace: &pipeline::Trace) {
    if !serving.debug_pipeline {
        trace.set_enabled(false);
    }
}

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
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};
    use controller::testing::FakeApi;
    use k8s_openapi::api::core::v1::ConfigMap;
    use record::EventType;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        manager: ManagerArgs,
    }

    #[test]
    fn events_api_flag_defaults_to_events_k8s_io() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.manager.events_api, EventsApi::EventsV1);
        for (value, api) in [
            ("core/v1", EventsApi::CoreV1),
            ("events.k8s.io/v1", EventsApi::EventsV1),
        ] {
            let cli = Cli::try_parse_from(["x", "--events-api", value]).unwrap();
            assert_eq!(cli.manager.events_api, api);
            assert_eq!(api.to_string(), value);
        }
        let err = Cli::try_parse_from(["x", "--events-api", "v1"])
            .err()
            .expect("rejected")
            .to_string();
        assert!(
            err.contains("events.k8s.io/v1") && err.contains("core/v1"),
            "{err}"
        );
        // The environment fallback, as every other flag has.
        let command = Cli::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == "events_api")
            .unwrap();
        assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some("EVENTS_API"));
    }

    #[test]
    fn the_pipeline_is_recorded_only_when_its_view_is_served() {
        for (args, served) in [(&["x"][..], false), (&["x", "--debug-pipeline"][..], true)] {
            let cli = Cli::try_parse_from(args).unwrap();
            let trace = pipeline::Trace::new(8);
            record_pipeline_if_served(&cli.manager.serving, &trace);
            assert_eq!(trace.is_enabled(), served, "{args:?}");
            // PIPELINE_TRACE=off (a trace turned off before) stays off.
            trace.set_enabled(false);
            record_pipeline_if_served(&cli.manager.serving, &trace);
            assert!(!trace.is_enabled());
        }
    }

    /// Records one Event through the pipeline `api` selects and returns the
    /// request the API saw.
    async fn first_event_write(api: EventsApi) -> controller::testing::ApiAction {
        let fake = FakeApi::new();
        let (events, recorder) = Events::start(api, &fake.client(), "demo-controller").unwrap();
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("cm".into());
        cm.metadata.namespace = Some("ns".into());
        recorder.event(&cm, EventType::Normal, "Synced", "synced");
        assert!(events.shutdown(Duration::from_secs(5)).await);
        let actions = fake.actions();
        assert_eq!(actions.len(), 1, "{actions:?}");
        actions[0].clone()
    }

    #[tokio::test]
    async fn the_flag_picks_the_events_api_behind_the_one_recorder() {
        let write = first_event_write(EventsApi::EventsV1).await;
        assert_eq!(
            (
                write.verb.as_str(),
                write.group.as_str(),
                write.version.as_str()
            ),
            ("create", "events.k8s.io", "v1")
        );
        let body = write.body.unwrap();
        assert_eq!(body["reportingController"], "demo-controller");
        assert_eq!(body["action"], "Synced");
        assert_eq!(body["note"], "synced");

        let write = first_event_write(EventsApi::CoreV1).await;
        assert_eq!(
            (
                write.verb.as_str(),
                write.group.as_str(),
                write.version.as_str()
            ),
            ("create", "", "v1")
        );
        let body = write.body.unwrap();
        assert_eq!(body["source"]["component"], "demo-controller");
        assert_eq!(body["message"], "synced");
    }
}
