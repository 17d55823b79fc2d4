//! Wiring: informers -> handlers -> queue -> workers -> [`FooSyncer`]. sample-controller's
//! `NewController` and `Run`.

use apis::samplecontroller::v1alpha1::Foo;
use cache::{InformerOptions, SharedInformerFactory};
use controller::{Controller, InformerSynced, LoopOptions, registration_synced};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use record::EventRecorder;
use tokio_util::sync::CancellationToken;
use workqueue::RateLimitingQueue;

use crate::handlers::{DeploymentHandler, FooHandler};
use crate::sync::FooSyncer;

/// The controller's name: in logs, as the work queue's metrics name, and as the Event
/// source component.
pub const CONTROLLER_NAME: &str = "sample-controller";

/// The Foo controller, assembled: sample-controller's `Controller`.
///
/// [`new`](Self::new) asks the factory for the Foo and Deployment informers (shared
/// with any other controller in the process) and registers the handlers;
/// [`run`](Self::run) waits for both handlers to have seen the initial lists, then runs
/// the workers. Start the factory (`factory.start(&cancel)`) after `new`, before or
/// after `run`.
pub struct FooController {
    controller: Controller<FooSyncer>,
    synced: Vec<InformerSynced>,
}

impl FooController {
    /// Builds the controller on `factory`'s informers for every namespace, writing
    /// through `client` and reporting through `recorder`.
    pub fn new(
        client: kube::Client,
        factory: &SharedInformerFactory,
        recorder: EventRecorder,
    ) -> Self {
        Self::for_namespace(client, factory, None, recorder)
    }

    /// Like [`new`](Self::new), but watching only `namespace` when it is `Some`: Foos
    /// and Deployments elsewhere are invisible to this controller.
    pub fn for_namespace(
        client: kube::Client,
        factory: &SharedInformerFactory,
        namespace: Option<&str>,
        recorder: EventRecorder,
    ) -> Self {
        Self::with_options(
            client,
            factory,
            namespace,
            recorder,
            &LoopOptions::default(),
        )
    }

    /// Like [`for_namespace`](Self::for_namespace), with the loop's staleness guard,
    /// queue order and backoff chosen by `options` (the binary's flags).
    pub fn with_options(
        client: kube::Client,
        factory: &SharedInformerFactory,
        namespace: Option<&str>,
        recorder: EventRecorder,
        options: &LoopOptions,
    ) -> Self {
        let (foo_informer, deployment_informer) = match namespace {
            None => (
                factory.informer_for::<Foo>(),
                factory.informer_for::<Deployment>(),
            ),
            Some(ns) => (
                factory.informer_for_api(
                    Api::namespaced(client.clone(), ns),
                    InformerOptions::default(),
                ),
                factory.informer_for_api(
                    Api::namespaced(client.clone(), ns),
                    InformerOptions::default(),
                ),
            ),
        };

        // The queue is named so that its metrics (depth, adds, latency...) carry the
        // controller's name, as client-go's NewNamedRateLimitingQueue does.
        let queue = options.new_queue(CONTROLLER_NAME);
        // The staleness guard follows both informers: the sync writes Deployments
        // and Foo statuses.
        let freshness = options.freshness();
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
        let mut controller = Controller::new(CONTROLLER_NAME, queue, syncer);
        if let Some(freshness) = freshness {
            controller = controller.with_freshness(freshness);
        }
        Self {
            controller,
            // Synced = the informer listed AND our handler has processed that list, so
            // the first sync sees every Foo and Deployment that existed at start.
            synced: vec![
                registration_synced(foo_registration),
                registration_synced(deployment_registration),
            ],
        }
    }

    /// The work queue (for metrics and tests).
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        self.controller.queue()
    }

    /// The generic loop this controller runs on.
    pub fn controller(&self) -> &Controller<FooSyncer> {
        &self.controller
    }

    /// A check that both event handlers have processed their informer's initial list
    /// (for a readiness probe).
    pub fn has_synced(&self) -> bool {
        self.synced.iter().all(|synced| synced())
    }

    /// Runs `workers` workers until `cancel` fires, then drains the queue. See
    /// [`Controller::run`].
    pub async fn run(&self, workers: usize, cancel: CancellationToken) -> controller::Result<()> {
        self.controller
            .run(workers, self.synced.clone(), cancel)
            .await
    }
}
