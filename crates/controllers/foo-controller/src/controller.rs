//! Wiring: informers -> handlers -> queue -> workers -> [`FooSyncer`]. sample-controller's
//! `NewController`.
//!
//! What comes out is the workspace's generic loop, [`controller::Controller`], running
//! a [`FooSyncer`] ([`FooController`]): it already keeps the queue and the
//! "caches synced" checks and has sample-controller's `Run(ctx, workers)`, so this
//! file only builds it.

use std::sync::Arc;

use apis::samplecontroller::v1alpha1::Foo;
use cache::shard::ShardBy;
use cache::{InformerOptions, SharedInformerFactory};
use controller::{Controller, ControllerOptions, LoopOptions, registration_synced};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use record::EventRecorder;
use tracing::warn;

use crate::deployment::trim_deployment;

use crate::handlers::{DeploymentHandler, FooHandler};
use crate::sync::FooSyncer;

/// The controller's name: in logs, as the work queue's metrics name, and as the Event
/// source component.
pub const CONTROLLER_NAME: &str = "sample-controller";

/// The Foo controller, assembled: sample-controller's `Controller`. Run it with
/// [`Controller::run`]`(workers, cancel)`; [`Controller::has_synced`] is its
/// readiness.
pub type FooController = Controller<FooSyncer>;

/// How the Foo controller is set up.
#[derive(Debug, Clone, Default)]
pub struct FooControllerOptions {
    /// Watch only this namespace (`None`: every namespace): Foos and Deployments
    /// elsewhere are invisible to this controller.
    pub namespace: Option<String>,
    /// The loop's staleness guard, queue order and backoff (every fix on by
    /// default; the binary's flags choose).
    pub loop_options: LoopOptions,
    /// Cache only what the sync reads of each Deployment ([`trim_deployment`]: the
    /// metadata, `spec.replicas` and `status`), about half the memory of caching them
    /// whole. It is a transform on the Deployment informer, which the factory shares
    /// with every controller in the process: leave it off when another one reads pod
    /// templates from that informer. Off by default; the `sample-controller` binary,
    /// which runs this controller alone, turns it on.
    pub trim_deployment_cache: bool,
    /// This replica's shard membership, when the controller runs as one of N active
    /// replicas (`--shard-group`): the factory must have its ranges
    /// ([`SharedInformerFactory::with_shard_ranges`]); the Foo informer then caches
    /// the Foos whose UID hashes into them, the Deployment informer the Deployments
    /// of those Foos, and the loop syncs only their keys.
    pub shard: Option<sharding::Shard>,
}

/// The process's settings ([`ControllerOptions`], a manager's
/// `mgr.controller_options()`) in one line; the Deployment cache stays whole (set
/// [`trim_deployment_cache`](FooControllerOptions::trim_deployment_cache) after, as
/// `FooControllerOptions { trim_deployment_cache: true, ..options.into() }`).
/// `workers` is not here: it is how the controller is run
/// ([`Controller::run`]`(workers, cancel)`, `manager::ControllerRunnable::new`).
impl From<ControllerOptions<sharding::Shard>> for FooControllerOptions {
    fn from(options: ControllerOptions<sharding::Shard>) -> Self {
        Self {
            namespace: options.namespace,
            loop_options: options.loop_options,
            trim_deployment_cache: false,
            shard: options.shard,
        }
    }
}

/// Builds the Foo controller on `factory`'s Foo and Deployment informers (shared with
/// any other controller in the process), writing through `client` and reporting
/// through `recorder`: sample-controller's `NewController`. Start the factory
/// (`factory.start(&cancel)`) after this, before or after running the controller.
pub fn new_controller(
    client: kube::Client,
    factory: &SharedInformerFactory,
    recorder: EventRecorder,
    options: FooControllerOptions,
) -> FooController {
    // Sharded (the factory has shard ranges): Foos by their UID, Deployments by their
    // controlling Foo's UID, so a replica caches exactly the Deployments of its Foos.
    let sharded = |by| InformerOptions {
        shard: factory.shard_ranges().map(|_| by),
        ..InformerOptions::default()
    };
    let (foo_informer, deployment_informer) = match options.namespace.as_deref() {
        None => (
            factory.informer_for_api::<Foo>(Api::all(client.clone()), sharded(ShardBy::UID)),
            factory.informer_for_api::<Deployment>(
                Api::all(client.clone()),
                sharded(ShardBy::ControllerUid),
            ),
        ),
        Some(ns) => (
            factory.informer_for_api(Api::namespaced(client.clone(), ns), sharded(ShardBy::UID)),
            factory.informer_for_api(
                Api::namespaced(client.clone(), ns),
                sharded(ShardBy::ControllerUid),
            ),
        ),
    };

    if options.trim_deployment_cache
        && let Err(err) = deployment_informer.set_transform(Arc::new(trim_deployment))
    {
        // Started already (by another controller): the cache stays whole, which costs
        // memory only; the sync reads the same fields either way.
        warn!(error = %err, "Deployment cache not trimmed");
    }

    // The queue is named so that its metrics (depth, adds, latency...) carry the
    // controller's name, as client-go's NewNamedRateLimitingQueue does. In a shard
    // group a failed key is retried within a bounded time: the deletion that frees a
    // Deployment's name can reach another replica (`LoopOptions::in_shard_group`).
    let queue = options
        .loop_options
        .in_shard_group(options.shard.is_some())
        .new_queue(CONTROLLER_NAME);
    // The staleness guard follows both informers: the sync writes Deployments and
    // Foo statuses.
    let freshness = options.loop_options.freshness();
    if let Some(freshness) = &freshness {
        freshness.track(&foo_informer);
        freshness.track(&deployment_informer);
    }

    let foo_registration = foo_informer.add_event_handler(FooHandler::new(queue.clone()));
    let deployment_registration = deployment_informer
        .add_event_handler(DeploymentHandler::new(queue.clone(), foo_informer.lister()));

    let syncer = FooSyncer::new(
        client,
        foo_informer.lister(),
        deployment_informer.lister(),
        recorder,
    )
    .with_freshness(freshness.clone());
    // Sharded: the loop syncs only the keys of this replica's ranges.
    let gate = options
        .shard
        .as_ref()
        .map(|shard| shard.gate(&foo_informer, queue.clone()));
    Controller::new(CONTROLLER_NAME, queue, syncer)
        // Synced = the informer listed AND our handler has processed that list, so the
        // first sync sees every Foo and Deployment that existed at start.
        .with_synced(vec![
            registration_synced(foo_registration),
            registration_synced(deployment_registration),
        ])
        .with_freshness(freshness)
        .with_reconcile_timeout(options.loop_options.reconcile_timeout)
        .with_gate(gate)
}
