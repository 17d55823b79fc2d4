//! controller-runtime's builder, on this workspace's own informers, work queue and
//! sync loop.
//!
//! The second step of learning controllers: after writing sample-controller by hand
//! (crates/controllers/foo-controller: informers, handlers, queue, workers), kubebuilder users write
//!
//! ```go
//! ctrl.NewControllerManagedBy(mgr).For(&MyWeb{}).Owns(&ConfigMap{}).Owns(&Deployment{}).Complete(r)
//! ```
//!
//! and a level-triggered, idempotent `Reconcile(ctx, Request) (Result, error)`. This
//! crate is that step, built from the *same* parts the hand-wired controllers use, so
//! nothing is hidden: every builder call turns into informer, handler and queue calls
//! you can read in [`builder`](mod@builder).
//!
//! | controller-runtime | here | underneath (client-go parts, this workspace) |
//! |---|---|---|
//! | `pkg/builder`: `For`, `Owns`, `Watches`, `WithEventFilter`, `Complete` | [`Builder`] | `SharedInformerFactory::informer_for_api` + `add_event_handler` |
//! | `pkg/source.Kind` | one shared informer per kind and scope | `cache::SharedIndexInformer` (Reflector, DeltaFIFO, Indexer) |
//! | `builder.OnlyMetadata` (`Owns(&C{}, OnlyMetadata)`, `Watches(.., OnlyMetadata)`) | [`Builder::owns_metadata`], [`Builder::watches_metadata`], [`Builder::metadata_lister`] | `SharedInformerFactory::metadata_informer_for_api` (`cache::MetadataInformer`: `PartialObjectMeta<C>`) |
//! | `pkg/handler`: `EnqueueRequestForObject`, `EnqueueRequestForOwner`, `EnqueueRequestsFromMapFunc` | [`handler`] | `cache::EventHandler` + `RateLimitingQueue::add` |
//! | `pkg/predicate` | [`predicate`] | the resync check in sample-controller's `handleObject` |
//! | `pkg/reconcile`: `Request`, `Result`, `Reconciler` | [`Request`], [`Action`], [`Reconciler`] | `controller::SyncHandler` (key in, `Action` out) |
//! | `pkg/internal/controller` | [`BuiltController`] | `controller::Controller`: workers, backoff, panics contained, drain |
//!
//! # Example
//!
//! ```
//! use builder::{Action, Builder, Reconciler, Request};
//! use builder::predicate::GenerationChanged;
//! use cache::SharedInformerFactory;
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! struct Reconcile;
//! impl Reconciler for Reconcile {
//!     type Error = kube::Error;
//!     async fn reconcile(&self, request: &Request) -> Result<Action, kube::Error> {
//!         println!("make the world match {request}");
//!         Ok(Action::Done)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! # let client = controller::testing::FakeApi::new().client();
//! let factory = SharedInformerFactory::new(client.clone(), std::time::Duration::ZERO);
//! let controller = Builder::new("deployments", client, &factory)
//!     .namespace(Some("default"))
//!     .for_::<Deployment>()
//!     .owns::<ReplicaSet>()
//!     // Every Deployment named in a ConfigMap's data (a map function).
//!     .watches::<ConfigMap>(|cm| {
//!         let ns = cm.metadata.namespace.clone();
//!         cm.data.iter().flatten().map(|(_, name)| Request::new(ns.clone(), name.clone())).collect()
//!     })
//!     .with_event_filter(GenerationChanged)
//!     .workers(2)
//!     .complete(Reconcile);
//! assert_eq!(controller.workers(), 2);
//! assert!(!controller.has_synced()); // nothing listed yet: factory.start(&cancel) does that
//! # }
//! ```
//!
//! Then, as with the hand-wired controllers: `factory.start(&cancel)` and
//! `controller.run(cancel).await` (or `mgr.add(controller)`: a built controller is a
//! `manager::Runnable`, and the manager starts the factory).

#![forbid(unsafe_code)]

pub mod builder;
pub mod handler;
pub mod predicate;
pub mod reconcile;

pub use builder::{Builder, BuiltController, NoFor, Object, ScopedApi};
pub use controller::Action;
pub use predicate::Predicate;
pub use reconcile::{Reconciler, ReconcilerAdapter, Request};
