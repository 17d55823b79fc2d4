//! Metadata-only informers: client-go's `metadatainformer`
//! (`metadata/metadatainformer`, `NewFilteredMetadataInformer`,
//! `SharedInformerFactory.ForResource` on a metadata client), and
//! controller-runtime's `builder.OnlyMetadata`.
//!
//! A metadata-only informer caches [`PartialObjectMeta<K>`]: the object's `metadata`
//! (name, namespace, UID, labels, annotations, owner references, resourceVersion,
//! generation, finalizers, deletion timestamp) and nothing else. The API server cuts
//! the rest off before it sends anything (see [`crate::lister_watcher::metadata`]), so
//! the wire, the decoder and the cache all carry a fraction of the bytes. It still
//! sees every add, update and delete of a `K` (an update of `data` alone changes the
//! resourceVersion, so it arrives as an update with the new version), which is all an
//! owner needs to map a change back to itself, and all a garbage collector needs to
//! follow owner references.
//!
//! Typed by the full kind: a [`MetadataInformer<ConfigMap>`] is a
//! `SharedIndexInformer<PartialObjectMeta<ConfigMap>>`, so its lister
//! ([`MetadataLister`]) answers `configmaps "x" not found`, its handlers, indexers
//! (namespace, owner UID), selectors and the freshness guard work exactly as for
//! the typed informer, and the factory keeps it apart from the full `ConfigMap`
//! informer: one metadata watch per (kind, scope, filters), shared by everyone who
//! asks for metadata, and never mixed with the full objects' cache.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! # let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
//! # let client = kube::Client::try_from(config).unwrap();
//! use std::time::Duration;
//! use cache::SharedInformerFactory;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let factory = SharedInformerFactory::new(client, Duration::ZERO);
//! let metadata = factory.metadata_informer_for::<ConfigMap>();
//! // Shared with everyone who asks for ConfigMaps' metadata ...
//! assert_eq!(metadata.name(), factory.metadata_informer_for::<ConfigMap>().name());
//! assert_eq!(metadata.name(), "ConfigMap metadata");
//! // ... and apart from the full objects' informer.
//! assert_eq!(factory.informer_for::<ConfigMap>().name(), "ConfigMap");
//! # }
//! ```

use std::fmt;

use kube::core::PartialObjectMeta;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use crate::factory::{InformerOptions, SharedInformerFactory};
use crate::lister::Lister;
use crate::shared_informer::SharedIndexInformer;

/// A metadata-only informer of `K`: the cache holds each object's metadata alone
/// (client-go's metadata informer). See the [module docs](self).
pub type MetadataInformer<K> = SharedIndexInformer<PartialObjectMeta<K>>;

/// The lister of a [`MetadataInformer`] (client-go's `cache.GenericLister` over
/// `*metav1.PartialObjectMetadata`).
pub type MetadataLister<K> = Lister<PartialObjectMeta<K>>;

impl SharedInformerFactory {
    /// The shared metadata-only informer for every `K` in the cluster (all
    /// namespaces): client-go's `metadatainformer.NewSharedInformerFactory(..).ForResource(gvr)`.
    /// One per process, whoever asks, and never the full-object informer of
    /// [`informer_for`](Self::informer_for).
    pub fn metadata_informer_for<K>(&self) -> MetadataInformer<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        self.metadata_informer_for_api(Api::all(self.client().clone()), InformerOptions::default())
    }

    /// The shared metadata-only informer for the objects `api` covers (build it with
    /// `Api::<PartialObjectMeta<K>>::all`, `::namespaced`, ...), filtered by `options`
    /// (label and field selectors, shards: as for full objects). The same
    /// (kind, URL, options) always gets the same informer.
    pub fn metadata_informer_for_api<K>(
        &self,
        api: Api<PartialObjectMeta<K>>,
        options: InformerOptions,
    ) -> MetadataInformer<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        self.informer_for_api(api, options)
    }
}
