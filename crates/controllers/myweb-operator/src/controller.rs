//! Wiring, with the builder: the whole of sample-controller's `NewController` in one
//! expression. Compare crates/controllers/foo-controller/src/controller.rs, which writes the same
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

/// How the MyWeb controller is set up.
#[derive(Debug, Clone)]
pub struct MyWebControllerOptions {
    /// Watch only this namespace (`None`: every namespace).
    pub namespace: Option<String>,
    /// How many MyWebs are reconciled at once (controller-runtime's
    /// `MaxConcurrentReconciles`); default 1.
    pub workers: usize,
    /// The loop's staleness guard, queue order and backoff (every fix on by
    /// default; the binary's flags choose).
    pub loop_options: LoopOptions,
    /// This replica's shard membership (`--shard-group`): only the MyWebs whose UID
    /// hashes into its ranges, and the objects they own, are cached and reconciled.
    pub shard: Option<sharding::Shard>,
}

impl Default for MyWebControllerOptions {
    fn default() -> Self {
        Self {
            namespace: None,
            workers: 1,
            loop_options: LoopOptions::default(),
            shard: None,
        }
    }
}

/// Builds the MyWeb controller on `factory`'s informers (shared with every other
/// controller in the process), writing through `client` and reporting through
/// `recorder`. Start the factory after this, then [`run`](BuiltController::run) it.
///
/// ```text
/// For(&MyWeb{}).Owns(&ConfigMap{}).Owns(&Deployment{}).Owns(&Service{}).Complete(r)
/// ```
pub fn new_controller(
    client: kube::Client,
    factory: &SharedInformerFactory,
    recorder: EventRecorder,
    options: MyWebControllerOptions,
) -> MyWebController {
    // The staleness guard follows every watched kind: the reconciler applies the
    // ConfigMap, Deployment and Service and writes the MyWeb's status.
    let freshness = options.loop_options.freshness();
    let builder = Builder::new(CONTROLLER_NAME, client.clone(), factory)
        .namespace(options.namespace.as_deref())
        .loop_options(options.loop_options)
        .freshness(freshness.clone())
        .shard(options.shard.as_ref())
        .for_::<MyWeb>()
        .owns::<ConfigMap>()
        .owns::<Deployment>()
        .owns::<Service>()
        .workers(options.workers);
    // The reconciler reads the caches the watches above fill.
    let listers = Listers {
        webs: builder.lister(),
        config_maps: builder.lister(),
        deployments: builder.lister(),
        services: builder.lister(),
    };
    builder.complete(MyWebReconciler::new(client, listers, recorder).with_freshness(freshness))
}
