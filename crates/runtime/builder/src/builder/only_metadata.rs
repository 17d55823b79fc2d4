//! Watches that cache metadata only: controller-runtime's `builder.OnlyMetadata`
//! (`Owns(&corev1.ConfigMap{}, builder.OnlyMetadata)`, `Watches(.., builder.OnlyMetadata)`).
//!
//! `owns::<C>()` caches every `C` whole, although mapping a `C` to its owner reads
//! nothing but the controller ownerReference. When the reconciler does not read the
//! rest from the cache either (it applies the desired object and reads the API
//! server's answer, say), the whole object is memory, decoding and bandwidth spent
//! for nothing: `owns_metadata::<C>()` watches `C` through the factory's metadata-only
//! informer instead ([`cache::MetadataInformer`]: the API server sends each object's
//! `metadata` alone). It still hears every add, update and delete, maps them to the
//! owner exactly as `owns` does, and its cache is read with
//! [`metadata_lister`](Builder::metadata_lister). The informer is the one every
//! metadata-only watch of `C` in the process shares, and not the full-object one: a
//! process that asks for both lists and watches `C` twice, which is why a kind that
//! some controller caches whole anyway gains nothing from a metadata watch.
//!
//! Underneath it is the same watch of another type: `PartialObjectMeta<C>` is an
//! [`Object`] of its own (the same kind, scope and URL), so everything `owns` does
//! (predicates, sharding by the controller's UID, the staleness guard) applies
//! unchanged. A reconciler reporting its writes to the guard reports them for
//! `PartialObjectMeta<C>` (`Freshness::wrote_version::<PartialObjectMeta<C>>`): that
//! is the informer that has to catch up.

use cache::MetadataLister;
use kube::core::PartialObjectMeta;

use super::{Builder, Object};
use crate::predicate::BoxPredicate;
use crate::reconcile::Request;

impl<K: Object> Builder<K>
where
    K::Scope: 'static,
{
    /// Objects of kind `C` that a `K` controls, cached as metadata only
    /// (controller-runtime's `Owns(&C{}, builder.OnlyMetadata)`): a change to one
    /// enqueues the `K` named by its controller ownerReference, as
    /// [`owns`](Self::owns) does: the same watch over `PartialObjectMeta<C>`, through
    /// the factory's metadata-only informer (`cache::MetadataInformer`), read with
    /// [`metadata_lister`](Builder::metadata_lister). Worth it when the reconciler reads
    /// nothing but metadata of `C` from the cache and no other controller in the
    /// process caches `C` whole (that would be a second watch of the same objects).
    pub fn owns_metadata<C: Object>(self) -> Self {
        self.owns::<PartialObjectMeta<C>>()
    }

    /// [`owns_metadata`](Self::owns_metadata), with predicates for this watch only.
    pub fn owns_metadata_with<C: Object>(self, predicates: Vec<BoxPredicate>) -> Self {
        self.owns_with::<PartialObjectMeta<C>>(predicates)
    }

    /// Any kind `W`, cached as metadata only and mapped to zero or more requests by
    /// `map` (controller-runtime's `Watches(&W{}, handler, builder.OnlyMetadata)`):
    /// for example "the MyWeb named in this Secret's annotation".
    pub fn watches_metadata<W: Object>(
        self,
        map: impl Fn(&PartialObjectMeta<W>) -> Vec<Request> + Send + Sync + 'static,
    ) -> Self {
        self.watches::<PartialObjectMeta<W>>(map)
    }

    /// [`watches_metadata`](Self::watches_metadata), with predicates for this watch
    /// only.
    pub fn watches_metadata_with<W: Object>(
        self,
        map: impl Fn(&PartialObjectMeta<W>) -> Vec<Request> + Send + Sync + 'static,
        predicates: Vec<BoxPredicate>,
    ) -> Self {
        self.watches_with::<PartialObjectMeta<W>>(map, predicates)
    }
}

impl<K> Builder<K> {
    /// The lister of the shared metadata-only informer for `C` in this builder's
    /// scope: the cache [`owns_metadata`](Builder::owns_metadata) and
    /// [`watches_metadata`](Builder::watches_metadata) of `C` fill.
    pub fn metadata_lister<C: Object>(&self) -> MetadataLister<C> {
        self.lister::<PartialObjectMeta<C>>()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use cache::{EventHandler, SharedInformerFactory, meta_namespace_key};
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::core::{ObjectMeta, PartialObjectMetaExt};

    use super::*;
    use crate::handler::{EnqueueHandler, request_for_owner};

    fn factory() -> SharedInformerFactory {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        SharedInformerFactory::new(kube::Client::try_from(config).unwrap(), Duration::ZERO)
    }

    fn owned_config_map() -> PartialObjectMeta<ConfigMap> {
        ObjectMeta {
            namespace: Some("default".into()),
            name: Some("page".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                uid: "1234".into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        }
        .into_response_partial()
    }

    #[tokio::test]
    async fn the_metadata_lister_is_the_factorys_metadata_informer_not_the_full_one() {
        let factory = factory();
        let builder = Builder::new("web", factory.client().clone(), &factory)
            .namespace(Some("default"))
            .for_::<Deployment>()
            .owns_metadata::<ConfigMap>();
        let lister = builder.metadata_lister::<ConfigMap>();
        let shared = factory.metadata_informer_for_api::<ConfigMap>(
            kube::Api::namespaced(factory.client().clone(), "default"),
            cache::InformerOptions::default(),
        );
        let cm = owned_config_map();
        shared
            .indexer()
            .add(meta_namespace_key(&cm).unwrap(), Arc::new(cm));
        assert!(lister.get("default", "page").is_ok());
        // The full-object cache of ConfigMaps is another informer, still empty.
        assert!(
            builder
                .lister::<ConfigMap>()
                .get("default", "page")
                .is_err()
        );
    }

    #[tokio::test]
    async fn owned_metadata_maps_to_the_owner_as_owns_does() {
        let queue = workqueue::RateLimitingQueue::with_default_rate_limiter("test");
        let handler = EnqueueHandler::new(
            queue.clone(),
            Arc::new(request_for_owner::<Deployment, PartialObjectMeta<ConfigMap>>),
            Vec::new(),
        );
        handler.on_add(&Arc::new(owned_config_map()), false);
        assert_eq!(queue.len(), 1);
        let item = queue.try_get().unwrap();
        assert_eq!(item.item(), "default/web");
    }
}
