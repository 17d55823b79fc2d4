//! Dynamic informers: client-go's `dynamicinformer` (`NewFilteredDynamicInformer`,
//! `DynamicSharedInformerFactory.ForResource`) and `dynamiclister`.
//!
//! A typed informer needs its kind at compile time. Generic controllers do not have
//! it: a garbage collector or a policy engine learns the resources it watches from
//! discovery or from its configuration, a CRD may be installed long after the process
//! started, and a "GVK -> informer" cache must be able to make an informer for any of
//! them. A dynamic informer takes the kind as a value, a [`kube::core::ApiResource`]
//! (group, version, kind, plural, the `apiVersion` string), and caches
//! [`DynamicObject`]s: typed metadata, everything else a `serde_json::Value`.
//!
//! Everything below the type is the same machinery as for typed informers: the
//! [`ApiListerWatcher`](crate::ApiListerWatcher) with its pager and watch stream,
//! streaming lists, label and field selectors, `strip_managed_fields`, sharding, the
//! indexer with its namespace index, handlers, resync. Two things differ:
//!
//! * the wire is always JSON: protobuf needs a decoder per Go type, and a
//!   `DynamicObject` has no Go type (client-go's dynamic client is JSON-only too;
//!   the lister-watcher finds no protobuf decoder for it and asks for JSON);
//! * the lister needs the resource to name it in NotFound errors, so the factory hands
//!   out a [`DynamicInformer`] (client-go's `GenericInformer`: `Informer()` and
//!   `Lister()`) rather than a bare informer.
//!
//! The factory shares one dynamic informer per resource URL (group, version, plural
//! and namespace) and options, and never mixes it with a typed informer of the same
//! kind: `DynamicObject` is a type of its own.
//!
//! ```no_run
//! # async fn example(client: kube::Client) {
//! use std::time::Duration;
//! use cache::SharedInformerFactory;
//! use kube::core::{ApiResource, GroupVersionKind};
//! use tokio_util::sync::CancellationToken;
//!
//! let factory = SharedInformerFactory::new(client, Duration::ZERO);
//! let cancel = CancellationToken::new();
//! factory.start(&cancel);
//! // Later, once a CRD for widgets.example.com is served:
//! let widgets = ApiResource::from_gvk_with_plural(
//!     &GroupVersionKind::gvk("example.com", "v1", "Widget"),
//!     "widgets",
//! );
//! let informer = factory.dynamic_informer_for(&widgets);
//! factory.start(&cancel); // starts the new informer, leaves the running ones alone
//! informer.informer().wait_for_cache_sync(&cancel).await;
//! let widget = informer.lister().get("default", "w1");
//! # let _ = widget;
//! # }
//! ```

use std::fmt;

use kube::Api;
use kube::core::{ApiResource, DynamicObject};

use crate::factory::{InformerOptions, SharedInformerFactory};
use crate::lister::Lister;
use crate::shared_informer::SharedIndexInformer;

/// A dynamic informer and the resource it lists and watches: client-go's
/// `GenericInformer` (`Informer()`, `Lister()`). A cheap-to-clone handle.
#[derive(Clone)]
pub struct DynamicInformer {
    informer: SharedIndexInformer<DynamicObject>,
    resource: ApiResource,
}

impl fmt::Debug for DynamicInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicInformer")
            .field("informer", &self.informer)
            .field("api_version", &self.resource.api_version)
            .field("plural", &self.resource.plural)
            .finish()
    }
}

impl DynamicInformer {
    /// Pairs `informer` with the `resource` it serves (the factory does this; tests
    /// may over a scripted source).
    pub fn new(informer: SharedIndexInformer<DynamicObject>, resource: ApiResource) -> Self {
        Self { informer, resource }
    }

    /// The shared informer: handlers, `run`, `wait_for_cache_sync`, the indexer.
    pub fn informer(&self) -> &SharedIndexInformer<DynamicObject> {
        &self.informer
    }

    /// A lister over the informer's cache, naming the resource in its NotFound errors
    /// (`widgets.example.com "x" not found`): client-go's `dynamiclister`.
    pub fn lister(&self) -> Lister<DynamicObject> {
        Lister::with_dynamic_type(self.informer.indexer().clone(), &self.resource)
    }

    /// The resource (group, version, kind, plural).
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }
}

impl SharedInformerFactory {
    /// The shared dynamic informer for every object of `resource` in the cluster (all
    /// namespaces, or the cluster-scoped objects): client-go's
    /// `dynamicinformer.NewDynamicSharedInformerFactory(..).ForResource(gvr)`. One per
    /// resource per process, whoever asks. Ask [`start`](Self::start) again to run an
    /// informer asked for after the factory started.
    pub fn dynamic_informer_for(&self, resource: &ApiResource) -> DynamicInformer {
        let api = Api::all_with(self.client().clone(), resource);
        self.dynamic_informer_for_api(api, resource, InformerOptions::default())
    }

    /// The shared dynamic informer for the objects `api` covers (build it with
    /// `Api::all_with(client, &resource)`, `Api::namespaced_with(client, ns,
    /// &resource)`), filtered by `options`. The same (URL, options) always gets the
    /// same informer.
    pub fn dynamic_informer_for_api(
        &self,
        api: Api<DynamicObject>,
        resource: &ApiResource,
        options: InformerOptions,
    ) -> DynamicInformer {
        DynamicInformer::new(
            self.shared_informer(api, options, resource),
            resource.clone(),
        )
    }

    /// Stops and forgets the dynamic informer of every object of `resource` (the one
    /// [`dynamic_informer_for`](Self::dynamic_informer_for) hands out): see
    /// [`remove_informer`](Self::remove_informer). `false` if there was none.
    pub fn remove_dynamic_informer(&self, resource: &ApiResource) -> bool {
        let api = Api::<DynamicObject>::all_with(self.client().clone(), resource);
        self.remove_informer(&api, &InformerOptions::default())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use kube::core::{GroupVersionKind, ObjectMeta};

    use super::*;
    use crate::keys::meta_namespace_key;
    use crate::selector::Selector;

    fn widgets() -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        )
    }

    fn factory() -> SharedInformerFactory {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        SharedInformerFactory::new(kube::Client::try_from(config).unwrap(), Duration::ZERO)
    }

    #[tokio::test]
    async fn one_informer_per_resource_and_scope_named_after_its_kind() {
        let factory = factory();
        let a = factory.dynamic_informer_for(&widgets());
        let b = factory.dynamic_informer_for(&widgets());
        assert_eq!(a.informer().name(), "Widget");
        // The same informer: what one caches, the other sees.
        let mut obj = DynamicObject::new("w1", &widgets()).within("default");
        obj.metadata.labels = Some([("tier".to_string(), "gold".to_string())].into());
        a.informer()
            .indexer()
            .add(meta_namespace_key(&obj).unwrap(), Arc::new(obj));
        assert_eq!(b.lister().list(&Selector::everything()).len(), 1);

        // Another resource, or another namespace, is another informer.
        let gadgets = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
            "gadgets",
        );
        let c = factory.dynamic_informer_for(&gadgets);
        assert!(c.lister().list(&Selector::everything()).is_empty());
        let in_ns = factory.dynamic_informer_for_api(
            Api::namespaced_with(factory.client().clone(), "default", &widgets()),
            &widgets(),
            InformerOptions::default(),
        );
        assert_eq!(in_ns.informer().name(), "Widget in default");
        assert!(in_ns.lister().list(&Selector::everything()).is_empty());
    }

    #[tokio::test]
    async fn the_lister_reads_by_namespace_and_labels_and_names_the_resource() {
        let informer = factory().dynamic_informer_for(&widgets());
        for (ns, name, tier) in [("a", "w1", "gold"), ("a", "w2", "tin"), ("b", "w3", "gold")] {
            let obj = DynamicObject {
                metadata: ObjectMeta {
                    namespace: Some(ns.into()),
                    name: Some(name.into()),
                    labels: Some([("tier".to_string(), tier.to_string())].into()),
                    ..ObjectMeta::default()
                },
                ..DynamicObject::new(name, &widgets())
            };
            informer
                .informer()
                .indexer()
                .add(meta_namespace_key(&obj).unwrap(), Arc::new(obj));
        }
        let lister = informer.lister();
        let gold: Selector = "tier=gold".parse().unwrap();
        assert_eq!(lister.list(&gold).len(), 2);
        assert_eq!(lister.namespaced("a").list(&gold).len(), 1);
        assert_eq!(
            lister.namespaced("a").list(&Selector::everything()).len(),
            2
        );
        assert_eq!(
            lister.get("b", "w3").unwrap().metadata.name.as_deref(),
            Some("w3")
        );
        let missing = lister.get("b", "w1").unwrap_err();
        assert!(missing.is_not_found());
        assert_eq!(missing.to_string(), r#"widgets.example.com "w1" not found"#);
    }
}
