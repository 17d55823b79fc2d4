//! Wiring, with the builder: the whole of sample-controller's `NewController` in one
//! expression. Compare crates/controllers/foo-controller/src/controller.rs, which writes the same
//! informers, handlers and queue by hand.
//!
//! Split as kubebuilder splits it: the process's settings (namespace, workers, loop
//! options, staleness guard, shard) are the builder's before this crate sees it
//! (`mgr.controller_managed_by(CONTROLLER_NAME)`, controller-runtime's
//! `ctrl.NewControllerManagedBy(mgr)`), and [`setup`] adds what is the operator's own,
//! its watches and its reconciler (`SetupWithManager`).

use apis::operator::v1::MyWeb;
use builder::{Builder, BuiltController, NoFor};
use cache::SharedInformerFactory;
use controller::ControllerOptions;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use record::EventRecorder;

use crate::CONTROLLER_NAME;
use crate::reconcile::{Listers, MyWebReconciler};

/// The MyWeb operator's controller, as the builder makes it.
pub type MyWebController = BuiltController<MyWebReconciler>;

/// How the MyWeb controller is set up: the process's settings and nothing of its own
/// (namespace, workers, loop options, shard; the default is every namespace, one
/// worker, every fix of the loop on). The same type as a manager's
/// `mgr.controller_options()`, so a binary hands those over as they are.
pub type MyWebControllerOptions = ControllerOptions<sharding::Shard>;

/// Builds the MyWeb controller on `factory`'s informers (shared with every other
/// controller in the process), writing through `client`, reporting through
/// `recorder`, set up with `options`: [`setup`] on a builder of its own, for a
/// controller run without a manager (tests, examples). Start the factory after
/// this, then [`run`](BuiltController::run) it.
pub fn new_controller(
    client: kube::Client,
    factory: &SharedInformerFactory,
    recorder: EventRecorder,
    options: MyWebControllerOptions,
) -> MyWebController {
    setup(
        Builder::new(CONTROLLER_NAME, client, factory).with_options(options),
        recorder,
    )
}

/// Completes the MyWeb controller on `builder`, which already holds the process's
/// settings (a manager's `mgr.controller_managed_by(CONTROLLER_NAME)`): its watches,
/// and a reconciler writing through the builder's client and reporting through
/// `recorder` (kubebuilder's `SetupWithManager`).
///
/// ```text
/// For(&MyWeb{}).Owns(&ConfigMap{}, builder.OnlyMetadata).Owns(&Deployment{}).Owns(&Service{}).Complete(r)
/// ```
///
/// Why only the ConfigMap is watched as metadata: the reconciler reads an owned
/// object from the cache for two things, whose it is and its UID
/// (`MyWebReconciler::ensure`), and never its content. It applies the ConfigMap's
/// page from the MyWeb's spec, and its drift correction is the apply that follows
/// any change the metadata watch reports (an edit of `data` changes the
/// resourceVersion, so it arrives). The page is the ConfigMap's bulk, so caching it
/// whole would be memory and decoding for nothing. The Deployment and the Service
/// stay whole: the Deployment's informer is the one other controllers in a process
/// share (the Foo controller's, `tests/e2e/shared_informer.rs`), where a metadata
/// one would be a second watch and cache of the same objects, and a Service is a
/// few hundred bytes, its metadata the larger part.
pub fn setup(builder: Builder<NoFor>, recorder: EventRecorder) -> MyWebController {
    // The staleness guard follows every watched kind: the reconciler applies the
    // ConfigMap, Deployment and Service and writes the MyWeb's status, and reports
    // those writes to the guard the loop checks.
    let freshness = builder.freshness_guard();
    let client = builder.client().clone();
    let builder = builder
        .for_::<MyWeb>()
        .owns_metadata::<ConfigMap>()
        .owns::<Deployment>()
        .owns::<Service>();
    // The reconciler reads the caches the watches above fill.
    let listers = Listers {
        webs: builder.lister(),
        config_maps: builder.metadata_lister(),
        deployments: builder.lister(),
        services: builder.lister(),
    };
    builder.complete(MyWebReconciler::new(client, listers, recorder).with_freshness(freshness))
}
