//! Listers: client-go's generated listers and `GenericLister`
//! (tools/cache/listers.go).
//!
//! A lister is the read side of an informer's cache, shaped the way controllers ask
//! questions: "get Foo `default/foo`", "list the Deployments in `default` with label
//! `app=foo`". A miss is an [`Error::NotFound`], which callers test with
//! [`Error::is_not_found`], exactly like `errors.IsNotFound(err)` in Go: in a sync
//! handler, "not found in the lister" means "deleted, stop processing".

use std::fmt;
use std::sync::Arc;

use kube::Resource;

use crate::error::{Error, Result};
use crate::keys::split_meta_namespace_key;
use crate::selector::Selector;
use crate::store::{Indexer, NAMESPACE_INDEX};

/// The resource name used in NotFound errors: `plural.group`, or `plural` for the
/// core group (e.g. `deployments.apps`, `configmaps`), as apimachinery prints it.
fn resource_name<K: Resource>(dyntype: &K::DynamicType) -> String {
    let (plural, group) = (K::plural(dyntype), K::group(dyntype));
    if group.is_empty() {
        plural.into_owned()
    } else {
        format!("{plural}.{group}")
    }
}

/// Reads one kind of object from an informer's cache: client-go's generated
/// `<Kind>Lister` (and `GenericLister`). A cheap-to-clone handle over the informer's
/// [`Indexer`]; objects come back as the cache's own `Arc<K>`, never copied.
///
/// ```
/// use std::sync::Arc;
/// use cache::{Indexer, Lister, Selector, meta_namespace_key};
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kube::api::ObjectMeta;
///
/// let indexer = Indexer::with_namespace_index();
/// let deploy = Deployment {
///     metadata: ObjectMeta {
///         namespace: Some("default".into()),
///         name: Some("web".into()),
///         labels: Some([("app".to_string(), "web".to_string())].into()),
///         ..Default::default()
///     },
///     ..Default::default()
/// };
/// indexer.add(meta_namespace_key(&deploy).unwrap(), Arc::new(deploy));
///
/// let lister = Lister::<Deployment>::new(indexer);
/// assert!(lister.get("default", "web").is_ok());
/// let err = lister.get("default", "gone").unwrap_err();
/// assert!(err.is_not_found());
/// assert_eq!(err.to_string(), r#"deployments.apps "gone" not found"#);
///
/// let app_web: Selector = "app=web".parse().unwrap();
/// assert_eq!(lister.namespaced("default").list(&app_web).len(), 1);
/// assert!(lister.namespaced("other").list(&app_web).is_empty());
/// ```
pub struct Lister<K> {
    indexer: Indexer<K>,
    resource: String,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: self.indexer.clone(),
            resource: self.resource.clone(),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl<K: Resource<DynamicType = ()> + Send + Sync + 'static> Lister<K> {
    /// A lister over `indexer`.
    pub fn new(indexer: Indexer<K>) -> Self {
        Self::with_dynamic_type(indexer, &())
    }
}

impl<K: Resource + Send + Sync + 'static> Lister<K> {
    /// A lister over `indexer` of a kind known at run time: `dyntype` is the
    /// [`ApiResource`](kube::core::ApiResource) of a `DynamicObject` (client-go's
    /// `dynamiclister.New(indexer, gvr)`), which names the resource in NotFound errors.
    pub fn with_dynamic_type(indexer: Indexer<K>, dyntype: &K::DynamicType) -> Self {
        Self {
            indexer,
            resource: resource_name::<K>(dyntype),
        }
    }

    /// The object `namespace/name` (`namespace` empty for cluster-scoped kinds), or
    /// [`Error::NotFound`].
    pub fn get(&self, namespace: &str, name: &str) -> Result<Arc<K>> {
        let key = if namespace.is_empty() {
            name.to_string()
        } else {
            format!("{namespace}/{name}")
        };
        self.indexer
            .get_by_key(&key)
            .ok_or_else(|| Error::NotFound {
                resource: self.resource.clone(),
                name: name.to_string(),
            })
    }

    /// The object under a `namespace/name` (or `name`) key, as taken from a
    /// workqueue. [`Error::InvalidKey`] for a malformed key, [`Error::NotFound`] for
    /// a miss.
    pub fn get_by_key(&self, key: &str) -> Result<Arc<K>> {
        let (namespace, name) = split_meta_namespace_key(key)?;
        self.get(namespace, name)
    }

    /// Every object whose labels match `selector` (all of them for
    /// [`Selector::everything`]), in no particular order.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let mut all = self.indexer.list();
        if !selector.is_empty() {
            all.retain(|obj| selector.matches_object(obj.as_ref()));
        }
        all
    }

    /// A lister for one namespace: client-go's `Lister.<Kinds>(namespace)`.
    pub fn namespaced(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            lister: self.clone(),
            namespace: namespace.to_string(),
        }
    }

    /// The cache behind this lister.
    pub fn indexer(&self) -> &Indexer<K> {
        &self.indexer
    }
}

/// Reads one namespace of one kind of object: client-go's `<Kind>NamespaceLister`.
/// Made by [`Lister::namespaced`].
pub struct NamespaceLister<K> {
    lister: Lister<K>,
    namespace: String,
}

impl<K> Clone for NamespaceLister<K> {
    fn clone(&self) -> Self {
        Self {
            lister: self.lister.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<K> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("resource", &self.lister.resource)
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> NamespaceLister<K> {
    /// The object `name` in this namespace, or [`Error::NotFound`].
    pub fn get(&self, name: &str) -> Result<Arc<K>> {
        self.lister.get(&self.namespace, name)
    }

    /// Every object in this namespace whose labels match `selector`. Uses the
    /// namespace index ([`NAMESPACE_INDEX`]) when the cache has one, so the cost is
    /// the size of the namespace, not of the cache; without it, scans and filters
    /// (client-go's `ListAllByNamespace` does the same).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let candidates = match self
            .lister
            .indexer
            .by_index(NAMESPACE_INDEX, &self.namespace)
        {
            Ok(in_namespace) => in_namespace,
            Err(_) => self
                .lister
                .indexer
                .list()
                .into_iter()
                .filter(|obj| obj.meta().namespace.as_deref().unwrap_or("") == self.namespace)
                .collect(),
        };
        candidates
            .into_iter()
            .filter(|obj| selector.matches_object(obj.as_ref()))
            .collect()
    }
}
