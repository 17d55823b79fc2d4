//! Metrics and health for the controllers: what kube-controller-manager and
//! controller-runtime expose, so the dashboards, alerts and probes people already have
//! for Go controllers work for these too.
//!
//! | client-go / controller-runtime | here |
//! |---|---|
//! | `workqueue.SetProvider` + component-base's Prometheus workqueue provider | [`WorkqueueMetrics`] |
//! | `cache.SetReflectorMetricsProvider` (reflector metrics) | [`ReflectorMetrics`] |
//! | `cache.SetInformerMetricsProvider` + component-base's clientgo/fifo provider (informer metrics) | [`InformerMetrics`] |
//! | controller-runtime `controller_runtime_reconcile_*` | [`ReconcileMetrics`] (the controller loop's `controller::metrics::ReconcileObserver`) |
//! | `leader_election_master_status` | [`LeaderElectionMetrics`] |
//! | `metrics.Registry` | [`Registry`] |
//! | `healthz.Ping`, `AddHealthzCheck`, `AddReadyzCheck` | [`Health`] |
//! | metrics server (`:8080`), health probe server (`:8081`) | [`serve_metrics`], [`serve_health`] |
//! | `metricsserver.Options{SecureServing, FilterProvider: filters.WithAuthenticationAndAuthorization, CertDir}` | [`MetricsServing`], [`bind_metrics_serving`] (the `serving` crate's certificate and filter) |
//! | `--metrics-bind-address`, `--health-probe-bind-address`, kubebuilder's `--metrics-secure`, `--metrics-cert-path` | [`ServingArgs`], [`BindAddress`] |
//!
//! # How the pieces meet
//!
//! The `workqueue`, `cache` and `controller` crates know nothing about Prometheus: each
//! has a small provider (or observer) trait and a process-wide setter, and does nothing
//! (no cost) until one is installed; this crate implements them. A binary creates one
//! [`Metrics`], installs it, and serves it:
//!
//! ```no_run
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn run(serving: metrics::ServingArgs) -> Result<(), metrics::Error> {
//! let metrics = metrics::Metrics::new();
//! // Before creating queues and informers: they pick their provider up at creation.
//! metrics.install_global();
//!
//! let health = metrics::Health::new();
//! // e.g. health.add_readyz_check("informers", move || informer.has_synced())?;
//!
//! let cancel = CancellationToken::new();
//! // Plain HTTP here; a binary passes serving.metrics_serving(&client)? to
//! // bind_metrics_serving for HTTPS with authentication and authorization.
//! let metrics_server = metrics::bind_metrics(&serving.metrics_address(), metrics.registry.clone()).await?;
//! let health_server = metrics::bind_health(&serving.health_probe_bind_address, health.clone()).await?;
//! if let Some(server) = metrics_server {
//!     tokio::spawn(server.serve(cancel.clone()));
//! }
//! if let Some(server) = health_server {
//!     tokio::spawn(server.serve(cancel.clone()));
//! }
//! // Leader election callbacks: metrics.leader_election.on("foo-controller") / .off(...)
//! # Ok(()) }
//! ```
//!
//! # What a scrape shows
//!
//! ```text
//! workqueue_depth{name="foos"} 0
//! workqueue_depth_with_priority{name="foos",priority="0"} 0
//! workqueue_adds_total{name="foos"} 12
//! workqueue_queue_duration_seconds_bucket{name="foos",le="0.001"} 11
//! reflector_lists_total{name="foos"} 1
//! reflector_watch_errors_total{name="foos"} 0
//! controller_runtime_reconcile_total{controller="foo",result="success"} 12
//! controller_runtime_reconcile_time_seconds_bucket{controller="foo",le="0.005"} 9
//! leader_election_master_status{name="foo-controller"} 1
//! ```

#![forbid(unsafe_code)]

mod adapters;
pub mod args;
pub mod bind_address;
pub mod error;
pub mod health;
pub mod informer_metrics;
pub mod leader_election;
pub mod pipeline_view;
pub mod reconcile;
pub mod reflector_metrics;
pub mod registry;
pub mod server;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod workqueue_metrics;

pub use args::ServingArgs;
pub use bind_address::BindAddress;
pub use error::{Error, Result};
pub use health::{Check, Health, ProbeResponse};
pub use informer_metrics::InformerMetrics;
pub use leader_election::LeaderElectionMetrics;
pub use reconcile::ReconcileMetrics;
pub use reflector_metrics::ReflectorMetrics;
pub use registry::Registry;
pub use server::{
    MetricsServing, Server, bind_health, bind_metrics, bind_metrics_serving,
    bind_metrics_with_pipeline, serve_health, serve_metrics,
};
pub use workqueue_metrics::WorkqueueMetrics;

/// Every metric family of a controller process, registered in one [`Registry`].
/// Clones share everything.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// The registry the families are registered in; serve it with [`serve_metrics`].
    pub registry: Registry,
    /// `workqueue_*`, per queue name.
    pub workqueue: WorkqueueMetrics,
    /// `reflector_*`, per reflector (informer) name.
    pub reflector: ReflectorMetrics,
    /// `informer_*` (client-go 1.36's informer metrics), per informer name and resource.
    pub informer: InformerMetrics,
    /// `controller_runtime_reconcile_*`, per controller.
    pub reconcile: ReconcileMetrics,
    /// `leader_election_master_status`, per lease name.
    pub leader_election: LeaderElectionMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every family registered.
    pub fn new() -> Self {
        let registry = Registry::new();
        Self {
            workqueue: WorkqueueMetrics::new(&registry),
            reflector: ReflectorMetrics::new(&registry),
            informer: InformerMetrics::new(&registry),
            reconcile: ReconcileMetrics::new(&registry),
            leader_election: LeaderElectionMetrics::new(&registry),
            registry,
        }
    }

    /// Installs the workqueue, reflector, informer and reconcile families as the
    /// process-wide providers. Call it once, early in `main`, before creating queues,
    /// informers and controllers (they resolve their provider when created). Returns
    /// `false` if any of the four already had a provider (the first one installed stays).
    pub fn install_global(&self) -> bool {
        let workqueue = self.workqueue.install_global();
        let reflector = self.reflector.install_global();
        let informer = self.informer.install_global();
        let reconcile = self.reconcile.install_global();
        workqueue && reflector && informer && reconcile
    }
}
