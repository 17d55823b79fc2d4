//! Wiring, with the builder: the whole of sample-controller's `NewController` in one
//! expression. Compare crates/foo-controller/src/controller.rs, which writes the same
//! informers, handlers and queue by hand.

use apis::operator::v1::MyWeb;
use builder::{Builder, BuiltController};
use cache::SharedInformerFactory;
use controller::LoopOptions;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use record::EventRecorder;

use crate::CONTROLLER_NAME;
use crate::reconcile::{Listers, MyWebReconciler};

/// The MyWeb operator's controller, as the builder makes it.
pub type MyWebController = BuiltController<MyWebReconciler>;

/// Builds the MyWeb controller on `factory`'s informers (shared with every other
/// controller in the process), watching `namespace` (`None`: all), with `workers`
/// workers. Start the factory after this, then [`run`](BuiltController::run) it.
///
/// ```text
/// For(&MyWeb{}).Owns(&ConfigMap{}).Owns(&Deployment{}).Owns(&Service{}).Complete(r)
/// ```
pub fn new_controller(
    client: kube::Client,
    factory: &SharedInformerFactory,
    namespace: Option<&str>,
    recorder: EventRecorder,
    workers: usize,
) -> MyWebController {
    new_controller_with(
        client,
        factory,
        namespace,
        recorder,
        workers,
        &LoopOptions::default(),
    )
}

/// [`new_controller`], with the loop's staleness guard, queue order and backoff
/// chosen by `options` (the binary's flags).
pub fn new_controller_with(
    client: kube::Client,
    factory: &SharedInformerFactory,
    namespace: Option<&str>,
    recorder: EventRecorder,
    workers: usize,
    options: &LoopOptions,
) -> MyWebController {
    // The staleness guard follows every watched kind: the reconciler applies the
    // ConfigMap, Deployment and Service and writes the MyWeb's status.
    let freshness = options.freshness();
    let builder = Builder::new(CONTROLLER_NAME, client.clone(), factory)
        .namespace(namespace)
        .loop_options(*options)
        .freshness(freshness.clone())
        .for_::<MyWeb>()
        .owns::<ConfigMap>()
        .owns::<Deployment>()
        .owns::<Service>()
        .workers(workers);
    // The reconciler reads the caches the watches above fill.
    let listers = Listers {
        webs: builder.lister(),
        config_maps: builder.lister(),
        deployments: builder.lister(),
        services: builder.lister(),
    };
    builder.complete(MyWebReconciler::new(client, listers, recorder).with_freshness(freshness))
}
