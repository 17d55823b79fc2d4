//! From informer events to requests: controller-runtime's `handler` package.
//!
//! Every watch of a builder-made controller is one informer event handler (a
//! [`EnqueueHandler`]) that does two things, in this order:
//!
//! 1. asks the [predicates](crate::predicate) whether the event matters;
//! 2. maps the object to zero or more [`Request`]s and adds their keys to the work
//!    queue, which deduplicates them.
//!
//! The mapping is the only thing that differs between `for_`, `owns` and `watches`:
//!
//! | builder call | map function | controller-runtime handler |
//! |---|---|---|
//! | `for_::<K>()` | [`request_for_object`]: the object itself | `EnqueueRequestForObject` |
//! | `owns::<C>()` | [`request_for_owner`]: the `K` that *controls* it | `EnqueueRequestForOwner(..., OnlyControllerOwner())` |
//! | `watches::<W>(f)` | your `f` | `EnqueueRequestsFromMapFunc(f)` |
//!
//! An update maps both the old and the new object, so an object whose owner changed
//! wakes up both owners. In sample-controller this is the hand-written `enqueueFoo` and
//! `handleObject`; compare crates/controllers/foo-controller/src/handlers.rs.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use cache::{DeletedObject, EventHandler};
use controller::{controller_owner_key, event_priority};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use tracing::{trace, warn};
use workqueue::{AddOpts, RateLimitingQueue};

use crate::predicate::BoxPredicate;
use crate::reconcile::Request;

/// A map from an object to the requests it should trigger.
pub type MapFn<K> = Arc<dyn Fn(&K) -> Vec<Request> + Send + Sync>;

/// The object itself: controller-runtime's `EnqueueRequestForObject`, what `for_` uses.
///
/// ```
/// use builder::handler::request_for_object;
/// use builder::Request;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// cm.metadata.name = Some("web".into());
/// assert_eq!(request_for_object(&cm), [Request::new(Some("default"), "web")]);
/// ```
pub fn request_for_object<K: Resource>(obj: &K) -> Vec<Request> {
    let meta = obj.meta();
    match &meta.name {
        Some(name) => vec![Request::new(
            meta.namespace.as_deref().filter(|ns| !ns.is_empty()),
            name.clone(),
        )],
        None => Vec::new(),
    }
}

/// The `O` that controls `obj` through its controller ownerReference (`controller:
/// true`, same API group and kind as `O`): controller-runtime's
/// `EnqueueRequestForOwner(scheme, mapper, &O{}, handler.OnlyControllerOwner())`, what
/// `owns` uses. Other owner references (not the controller, or of another kind) map to
/// nothing.
///
/// Unlike sample-controller's `handleObject`, the owner is not looked up in a lister:
/// a request for an owner that is gone costs one reconcile that finds nothing, and the
/// handler stays independent of the owner's cache (controller-runtime makes the same
/// choice).
///
/// ```
/// use builder::handler::request_for_owner;
/// use builder::Request;
/// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
///
/// let mut rs = ReplicaSet::default();
/// rs.metadata.namespace = Some("default".into());
/// rs.metadata.owner_references = Some(vec![OwnerReference {
///     api_version: "apps/v1".into(),
///     kind: "Deployment".into(),
///     name: "web".into(),
///     uid: "1234".into(),
///     controller: Some(true),
///     ..Default::default()
/// }]);
/// assert_eq!(request_for_owner::<Deployment, _>(&rs), [Request::new(Some("default"), "web")]);
/// ```
pub fn request_for_owner<O, K>(obj: &K) -> Vec<Request>
where
    O: Resource<DynamicType = ()>,
    O::Scope: 'static,
    K: Resource,
{
    controller_owner_key::<O, K>(obj)
        .and_then(|key| Request::from_key(&key).ok())
        .into_iter()
        .collect()
}

/// The informer event handler behind every watch: predicates, then the map, then the
/// queue. See the [module docs](self).
pub struct EnqueueHandler<K> {
    queue: RateLimitingQueue<String>,
    map: MapFn<K>,
    predicates: Vec<BoxPredicate>,
}

impl<K> fmt::Debug for EnqueueHandler<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnqueueHandler")
            .field("predicates", &self.predicates.len())
            .finish_non_exhaustive()
    }
}

impl<K> EnqueueHandler<K>
where
    K: Resource,
    K::DynamicType: Default,
{
    /// A handler feeding `queue` with `map`'s requests for events that pass every
    /// predicate.
    pub fn new(
        queue: RateLimitingQueue<String>,
        map: MapFn<K>,
        predicates: Vec<BoxPredicate>,
    ) -> Self {
        Self {
            queue,
            map,
            predicates,
        }
    }

    fn passes(&self, check: impl Fn(&BoxPredicate) -> bool) -> bool {
        self.predicates.iter().all(check)
    }

    fn enqueue<'a>(&self, event: &str, priority: i32, objects: impl IntoIterator<Item = &'a K>)
    where
        K: 'a,
    {
        let requests: BTreeSet<Request> = objects
            .into_iter()
            .flat_map(|obj| (self.map)(obj))
            .collect();
        for request in requests {
            trace!(event, kind = %K::kind(&Default::default()), %request, "enqueue");
            self.queue.add_with_opts(
                request.key(),
                AddOpts {
                    priority,
                    ..AddOpts::default()
                },
            );
        }
    }
}

fn meta<K: Resource>(obj: &K) -> &ObjectMeta {
    obj.meta()
}

impl<K> EventHandler<K> for EnqueueHandler<K>
where
    K: Resource + Send + Sync + 'static,
    K::DynamicType: Default,
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if self.passes(|p| p.create(meta(&**obj))) {
            // Initial-list adds wait behind real changes (controller-runtime's
            // WithLowPriorityWhenUnchanged; see controller::event_priority).
            let priority = event_priority::on_add(is_in_initial_list);
            self.enqueue("add", priority, [&**obj]);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if self.passes(|p| p.update(meta(&**old), meta(&**new))) {
            // A resync (same resourceVersion) waits behind real changes too.
            let priority = event_priority::on_update(&**old, &**new);
            self.enqueue("update", priority, [&**old, &**new]);
        }
    }

    fn on_delete(&self, deleted: &DeletedObject<K>) {
        // A tombstone still carries the last state the cache knew, owner references
        // and labels included.
        let Some(obj) = deleted.object() else {
            warn!(kind = %K::kind(&Default::default()), "tombstone without an object; cannot map it to a request");
            return;
        };
        if self.passes(|p| p.delete(meta(&**obj))) {
            self.enqueue("delete", workqueue::priority::DEFAULT, [&**obj]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::{GenerationChanged, LabelSelectorPredicate};
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn owner_ref(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller: Some(controller),
            ..Default::default()
        }
    }

    fn config_map(name: &str, owners: Vec<OwnerReference>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some(name.into());
        cm.metadata.owner_references = Some(owners);
        cm.metadata.resource_version = Some("1".into());
        cm.metadata.generation = Some(1);
        cm
    }

    #[test]
    fn owner_mapping_follows_only_the_controller_reference_of_the_right_kind() {
        let req = |name: &str| vec![Request::new(Some("ns"), name)];
        let controlled = config_map("a", vec![owner_ref("apps/v1", "Deployment", "web", true)]);
        assert_eq!(request_for_owner::<Deployment, _>(&controlled), req("web"));

        // A plain (non-controller) owner reference is not enough.
        let owned = config_map("b", vec![owner_ref("apps/v1", "Deployment", "web", false)]);
        assert!(request_for_owner::<Deployment, _>(&owned).is_empty());

        // Controlled by another kind, or by the same kind name in another group.
        let other_kind = config_map("c", vec![owner_ref("apps/v1", "ReplicaSet", "web", true)]);
        assert!(request_for_owner::<Deployment, _>(&other_kind).is_empty());
        let other_group = config_map(
            "d",
            vec![owner_ref("example.com/v1", "Deployment", "x", true)],
        );
        assert!(request_for_owner::<Deployment, _>(&other_group).is_empty());

        // Several references: the controller one wins, whatever its position.
        let several = config_map(
            "e",
            vec![
                owner_ref("apps/v1", "Deployment", "not-controller", false),
                owner_ref("apps/v1", "Deployment", "controller", true),
            ],
        );
        assert_eq!(
            request_for_owner::<Deployment, _>(&several),
            req("controller")
        );

        // Cluster-scoped owner: the request has no namespace.
        let ns_owned = config_map("f", vec![owner_ref("v1", "Namespace", "team-a", true)]);
        assert_eq!(
            request_for_owner::<Namespace, _>(&ns_owned),
            [Request::new(None::<String>, "team-a")]
        );
        assert!(request_for_owner::<Deployment, _>(&config_map("g", vec![])).is_empty());
    }

    fn handler(
        map: MapFn<ConfigMap>,
        predicates: Vec<BoxPredicate>,
    ) -> (EnqueueHandler<ConfigMap>, RateLimitingQueue<String>) {
        let queue = RateLimitingQueue::with_default_rate_limiter("handler-test");
        (EnqueueHandler::new(queue.clone(), map, predicates), queue)
    }

    async fn drain(queue: &RateLimitingQueue<String>) -> Vec<String> {
        let mut keys = Vec::new();
        while !queue.is_empty() {
            let item = queue.get().await.unwrap();
            keys.push((*item).clone());
        }
        keys.sort();
        keys
    }

    #[tokio::test]
    async fn an_owner_change_wakes_both_owners() {
        let (h, queue) = handler(Arc::new(request_for_owner::<ReplicaSet, _>), vec![]);
        let old = config_map("cm", vec![owner_ref("apps/v1", "ReplicaSet", "old", true)]);
        let mut new = config_map("cm", vec![owner_ref("apps/v1", "ReplicaSet", "new", true)]);
        new.metadata.resource_version = Some("2".into());
        h.on_update(&Arc::new(old), &Arc::new(new));
        assert_eq!(drain(&queue).await, ["ns/new", "ns/old"]);
    }

    #[tokio::test]
    async fn map_functions_give_zero_or_more_requests_and_duplicates_collapse() {
        let fan_out: MapFn<ConfigMap> = Arc::new(|cm: &ConfigMap| {
            let n: usize = cm.data.as_ref().map_or(0, |d| d.len());
            (0..n)
                .map(|i| Request::new(Some("ns"), format!("web-{i}")))
                .collect()
        });
        let (h, queue) = handler(fan_out, vec![]);
        let mut cm = config_map("cm", vec![]);
        h.on_add(&Arc::new(cm.clone()), false);
        assert!(drain(&queue).await.is_empty(), "no data: no request");
        cm.data = Some([("a".into(), "1".into()), ("b".into(), "2".into())].into());
        let cm = Arc::new(cm);
        h.on_update(&cm, &cm);
        assert_eq!(drain(&queue).await, ["ns/web-0", "ns/web-1"]);
        h.on_delete(&DeletedObject::Object(cm));
        assert_eq!(drain(&queue).await, ["ns/web-0", "ns/web-1"]);
    }

    #[tokio::test]
    async fn predicates_filter_before_the_map() {
        let (h, queue) = handler(
            Arc::new(request_for_object::<ConfigMap>),
            vec![
                Arc::new(GenerationChanged),
                Arc::new(LabelSelectorPredicate::parse("app=web").unwrap()),
            ],
        );
        let mut cm = config_map("cm", vec![]);
        h.on_add(&Arc::new(cm.clone()), true);
        assert!(drain(&queue).await.is_empty(), "labels do not match");

        cm.metadata.labels = Some([("app".into(), "web".into())].into());
        let old = Arc::new(cm.clone());
        h.on_add(&old, true);
        assert_eq!(drain(&queue).await, ["ns/cm"]);

        cm.metadata.resource_version = Some("2".into()); // e.g. a status write
        h.on_update(&old, &Arc::new(cm.clone()));
        assert!(drain(&queue).await.is_empty(), "generation unchanged");

        cm.metadata.generation = Some(2);
        h.on_update(&old, &Arc::new(cm.clone()));
        assert_eq!(drain(&queue).await, ["ns/cm"]);
    }
}
