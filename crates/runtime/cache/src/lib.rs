//! client-go's `tools/cache` in Rust: the reflector-backed, indexed, always converging
//! local copy of API objects that controllers read from, and the shared informers that
//! fan changes out to event handlers.
//!
//! | client-go                                   | here                          |
//! |---------------------------------------------|-------------------------------|
//! | `MetaNamespaceKeyFunc`, `SplitMetaNamespaceKey`, `ObjectName` | [`meta_namespace_key`], [`split_meta_namespace_key`], [`ObjectName`] |
//! | `ThreadSafeStore`, `Indexer`, `Indexers`     | [`Indexer`]                   |
//! | `GenericLister`, generated listers          | [`Lister`], [`NamespaceLister`] |
//! | `labels.Parse`, `labels.Selector`           | [`Selector`]                  |
//! | `Delta`, `DeltaType`, `DeletedFinalStateUnknown` | [`Delta`], [`DeltaType`], [`DeletedFinalStateUnknown`] (and [`DeletedObject`]) |
//! | `KeyListerGetter` (a FIFO's `KnownObjects`), `TransformFunc` | [`KeyListerGetter`], [`TransformFunc`] |
//! | `DeltaFIFO` | [`DeltaFifo`]                 |
//! | `RealFIFO` (the informers' queue since 1.33; with `AtomicFIFO`, 1.36's default) | [`RealFifo`] (plain or atomic), chosen by [`QueueKind`] |
//! | `ReplacedAllInfo`, `SyncAllInfo` (the atomic FIFO's entries) | [`ReplacedAll`], [`Popped`] |
//! | `Replace` of either FIFO (`reconcileReplacement`) | [`Replacement`], fed page by page |
//! | `ListerWatcher`, `NewFilteredListWatchFromClient` | [`ListerWatcher`], [`ApiListerWatcher`] |
//! | `Reflector`                                  | [`Reflector`]                 |
//! | `cache.MetricsProvider`, `SetReflectorMetricsProvider` | [`ReflectorMetricsProvider`], [`set_global_reflector_metrics_provider`] |
//! | `ResourceEventHandler(Funcs)`                | [`EventHandler`], [`EventHandlerFuncs`] |
//! | `SharedIndexInformer`                        | [`SharedIndexInformer`]       |
//! | `ResourceEventHandlerRegistration`, `HasSynced` | [`ResourceEventHandlerRegistration`] |
//! | `SharedInformerFactory`                      | [`SharedInformerFactory`]     |
//! | (none: one undecodable object fails the typed list) | [`Unreadable`], set aside by the [`unreadable`] rules |
//! | `metadatainformer`, the metadata client's `List`/`Watch` | [`MetadataInformer`] ([`SharedInformerFactory::metadata_informer_for`]), [`lister_watcher::metadata`] |
//! | `dynamicinformer`, `dynamiclister`, `GenericInformer` | [`DynamicInformer`] ([`SharedInformerFactory::dynamic_informer_for`]) |
//!
//! # A complete informer
//!
//! List and watch ConfigMaps, keep them in a cache, tell a handler about every change,
//! and read the cache through a lister. Against a cluster the source is
//! `ApiListerWatcher::new(Api::all(client))`; here a scripted source plays the API
//! server, so the example runs as it is. The scripted source is a test double from the
//! `testing` module, which only exists with the crate's `testing` feature (enable it
//! under `[dev-dependencies]`: `cache = { workspace = true, features = ["testing"] }`).
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//!
//! use cache::testing::ScriptedListerWatcher;
//! use cache::{EventHandlerFuncs, SharedIndexInformer, meta_namespace_key};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{ObjectMeta, WatchEvent};
//! use tokio_util::sync::CancellationToken;
//!
//! fn config_map(name: &str, rv: &str) -> ConfigMap {
//!     ConfigMap {
//!         metadata: ObjectMeta {
//!             namespace: Some("default".into()),
//!             name: Some(name.into()),
//!             resource_version: Some(rv.into()),
//!             ..Default::default()
//!         },
//!         ..Default::default()
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // The "API server": a list of two objects at resourceVersion 10, then a watch.
//! let source = ScriptedListerWatcher::new();
//! source.push_list_items(vec![config_map("a", "1"), config_map("b", "2")], "10");
//! let watch = source.push_watch_channel();
//!
//! let informer = SharedIndexInformer::new("configmaps", Arc::new(source), Duration::ZERO);
//! // What a controller's handlers do: turn every event into a key (for a workqueue).
//! let keys = Arc::new(Mutex::new(Vec::new()));
//! let registration = informer.add_event_handler(
//!     EventHandlerFuncs::new()
//!         .on_add({
//!             let keys = keys.clone();
//!             move |cm: &Arc<ConfigMap>, _| keys.lock().unwrap().push(meta_namespace_key(cm.as_ref()).unwrap())
//!         })
//!         .on_update({
//!             let keys = keys.clone();
//!             move |_, cm: &Arc<ConfigMap>| keys.lock().unwrap().push(meta_namespace_key(cm.as_ref()).unwrap())
//!         }),
//! );
//!
//! let stop = CancellationToken::new();
//! let run = tokio::spawn({
//!     let (informer, stop) = (informer.clone(), stop.clone());
//!     async move { informer.run(stop).await }
//! });
//! assert!(informer.wait_for_cache_sync(&stop).await);
//!
//! // A change arrives through the watch.
//! watch.send(Ok(WatchEvent::Modified(config_map("a", "11")))).unwrap();
//! while keys.lock().unwrap().len() < 3 {
//!     tokio::time::sleep(Duration::from_millis(5)).await;
//! }
//! assert!(registration.has_synced());
//!
//! // Workers read the latest state from the lister, never from the event.
//! let lister = informer.lister();
//! assert_eq!(lister.get("default", "a").unwrap().metadata.resource_version.as_deref(), Some("11"));
//! assert!(lister.get("default", "gone").unwrap_err().is_not_found());
//! assert_eq!(lister.namespaced("default").list(&cache::Selector::everything()).len(), 2);
//!
//! stop.cancel();
//! run.await.unwrap();
//! # }
//! ```
//!
//! # Metadata-only and dynamic informers
//!
//! The informer above caches whole objects of a kind known at compile time. Two
//! variants change one of those, and nothing else (same reflector, queue, indexer,
//! handlers, listers, factory):
//!
//! * **Metadata only** ([`metadata_informer`], client-go's `metadatainformer`):
//!   `factory.metadata_informer_for::<ConfigMap>()` lists and watches with
//!   `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,...`,
//!   so the API server sends each object's `metadata` alone, and caches
//!   `kube::core::PartialObjectMeta<ConfigMap>`. For owners that only need to know
//!   which objects they own and that one changed (the builder's `owns_metadata`), it
//!   saves the wire, the decoding and the memory of everything else: 1,000 ConfigMaps
//!   of 1 KiB each read less than half the bytes of the full informer, and no byte
//!   of their `data` (`tests/e2e_metadata_informer.rs`).
//! * **Dynamic** ([`dynamic_informer`], client-go's `dynamicinformer`):
//!   `factory.dynamic_informer_for(&api_resource)` for a kind known at run time (from
//!   discovery, configuration, a CRD installed after the process started), caching
//!   `kube::core::DynamicObject`s, JSON on the wire; its [`DynamicInformer::lister`]
//!   names the resource in NotFound errors.
//!
//! The factory keys informers by type and URL, so a kind's full, metadata-only and
//! dynamic informers are three informers (three watches), each shared by everyone
//! who asks for that form.

#![forbid(unsafe_code)]

pub mod delta;
pub mod delta_fifo;
pub mod dynamic_informer;
pub mod error;
pub mod factory;
pub mod informer_metrics;
pub mod informer_queue;
pub mod keys;
pub mod known_objects;
pub mod lister;
pub mod lister_watcher;
pub mod metadata_informer;
pub mod metrics;
mod population;
pub mod processor_listener;
pub mod real_fifo;
pub mod reflector;
pub mod registration;
pub mod replacement;
pub mod resource_version;
pub mod selector;
pub mod shard;
pub mod shared_informer;
mod steps;
pub mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod transform;
pub mod unreadable;

pub use delta::{DeletedFinalStateUnknown, DeletedObject, Delta, DeltaType};
pub use delta_fifo::DeltaFifo;
pub use dynamic_informer::DynamicInformer;
pub use error::{Error, Result};
pub use factory::{InformerOptions, ShardedInformer, SharedInformerFactory};
pub use informer_queue::{InformerQueue, QueueKind};
pub use keys::{
    ObjectName, deletion_handling_meta_namespace_key, meta_namespace_key, split_meta_namespace_key,
};
pub use known_objects::KeyListerGetter;
pub use lister::{Lister, NamespaceLister};
pub use lister_watcher::{
    ApiListerWatcher, DEFAULT_PAGE_SIZE, ListOptions, ListPage, ListerWatcher, WatchOptions,
    WatchStream, Wire,
};
pub use metadata_informer::{MetadataInformer, MetadataLister};
pub use metrics::{ReflectorMetricsProvider, set_global_reflector_metrics_provider};
pub use processor_listener::{EventHandler, EventHandlerFuncs};
pub use real_fifo::{DEFAULT_BATCH_SIZE, Popped, RealFifo, ReplacedAll};
pub use reflector::{BackoffConfig, Reflector, is_gone};
pub use registration::ResourceEventHandlerRegistration;
pub use replacement::Replacement;
pub use selector::Selector;
pub use shared_informer::SharedIndexInformer;
pub use store::{
    Incomparable, IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, OWNER_UID_INDEX,
    meta_namespace_index_func, owner_uid_index_func,
};
pub use transform::TransformFunc;
pub use unreadable::Unreadable;
