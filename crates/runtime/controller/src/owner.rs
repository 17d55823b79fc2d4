//! Owner references: how a controller marks what it created as its own.
//!
//! A Deployment created by the Foo controller carries an `ownerReference` to its Foo
//! with `controller: true`. That one field does three jobs:
//!
//! - **Garbage collection.** When the Foo is deleted, kube-controller-manager's
//!   garbage collector deletes the Deployment (and `blockOwnerDeletion: true` lets a
//!   foreground deletion of the Foo wait for it).
//! - **Routing events back.** When the Deployment changes, the controller's handler
//!   reads the controller reference ([`get_controller_of`]) to find which Foo to
//!   enqueue (sample-controller's `handleObject`).
//! - **Not touching what is not ours.** Before updating an object, the controller
//!   checks [`is_controlled_by`]; an object with the right name but another (or no)
//!   controller is reported, never modified (sample-controller's `ErrResourceExists`).
//!
//! At most one owner reference may have `controller: true`; the API server enforces it.
//! These are apimachinery's `metav1.GetControllerOf`, `metav1.IsControlledBy` and
//! `metav1.NewControllerRef`.

use std::any::TypeId;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

use crate::error::{Error, Result};

/// The owner reference with `controller: true`, if any: apimachinery's
/// `metav1.GetControllerOf`.
pub fn get_controller_of<K: Resource>(obj: &K) -> Option<&OwnerReference> {
    obj.meta()
        .owner_references
        .as_deref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

/// Whether `obj`'s controller reference points at `owner` (compared by UID, so an
/// owner deleted and re-created under the same name is a different owner):
/// apimachinery's `metav1.IsControlledBy`.
pub fn is_controlled_by<K: Resource, O: Resource>(obj: &K, owner: &O) -> bool {
    match (get_controller_of(obj), owner.meta().uid.as_deref()) {
        (Some(r), Some(uid)) => r.uid == uid,
        _ => false,
    }
}

/// Whether `owner`, as a cache holds it, still exists on the API server: one GET by
/// name through `api`, and the same UID (an owner deleted and created again under the
/// name is another owner). `Ok(false)` when it is gone.
///
/// For a controller about to *create* an object for an owner its cache still holds:
/// each informer applies its own watch stream, so the deletion events of an owner's
/// objects (the garbage collector's work after the owner was deleted) can queue the
/// owner before the owner's own `DELETED` reached its cache. A create then would make
/// an object for an owner that is gone (Sieve's deleted-owner finding,
/// docs/reliability.md). client-go has no such call; the Foo controller and the MyWeb
/// operator make it only before recreating what an owner they reconciled before lost,
/// so the steady state never pays for it.
pub async fn owner_still_exists<K>(api: &kube::Api<K>, owner: &K) -> kube::Result<bool>
where
    K: Resource + Clone + std::fmt::Debug + k8s_openapi::serde::de::DeserializeOwned,
{
    let name = owner.meta().name.as_deref().unwrap_or_default();
    let found = api.get_opt(name).await?;
    Ok(found.is_some_and(|found| found.meta().uid == owner.meta().uid))
}

/// A controller owner reference to `owner` (`controller: true`,
/// `blockOwnerDeletion: true`): apimachinery's `metav1.NewControllerRef`, with the
/// API version and kind taken from the type.
///
/// Fails with [`Error::MissingOwnerField`] when `owner` has no name or UID (it was not
/// read from the API server), because a reference without a UID would dangle.
///
/// ```
/// use controller::new_controller_ref;
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let mut owner = Deployment::default();
/// owner.metadata.name = Some("web".into());
/// owner.metadata.uid = Some("1234".into());
/// let r = new_controller_ref(&owner).unwrap();
/// assert_eq!((r.api_version.as_str(), r.kind.as_str()), ("apps/v1", "Deployment"));
/// assert_eq!(r.controller, Some(true));
/// ```
pub fn new_controller_ref<O: Resource<DynamicType = ()>>(owner: &O) -> Result<OwnerReference> {
    let meta = owner.meta();
    let missing = |field: &'static str| Error::MissingOwnerField {
        kind: O::kind(&()).to_string(),
        field,
    };
    Ok(OwnerReference {
        api_version: O::api_version(&()).to_string(),
        kind: O::kind(&()).to_string(),
        name: meta.name.clone().ok_or_else(|| missing("metadata.name"))?,
        uid: meta.uid.clone().ok_or_else(|| missing("metadata.uid"))?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The `namespace/name` key of the owner of kind `O` that controls `obj`, or `None`
/// when `obj` has no controller or its controller is of another kind (API group and
/// kind compared; the version is ignored, as the garbage collector does).
///
/// This is the first half of sample-controller's `handleObject`; the caller then looks
/// the owner up in its lister and enqueues the key only if the owner exists.
pub fn controller_owner_key<O, K>(obj: &K) -> Option<String>
where
    O: Resource<DynamicType = ()>,
    O::Scope: 'static,
    K: Resource,
{
    let r = get_controller_of(obj)?;
    if r.kind != O::kind(&()) || group_of(&r.api_version) != O::group(&()) {
        return None;
    }
    // Owners live in the namespace of what they own (cross-namespace owner references
    // are not allowed); cluster-scoped owners have no namespace.
    Some(match obj.meta().namespace.as_deref() {
        Some(ns) if !ns.is_empty() && is_namespaced::<O>() => format!("{ns}/{}", r.name),
        _ => r.name.clone(),
    })
}

/// Whether `O` is a namespaced kind (its `Scope` is `NamespaceResourceScope`).
fn is_namespaced<O: Resource>() -> bool
where
    O::Scope: 'static,
{
    TypeId::of::<O::Scope>() == TypeId::of::<NamespaceResourceScope>()
}

/// The group part of an `apiVersion` ("apps/v1" -> "apps", "v1" -> "").
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn deployment(ns: &str, name: &str, uid: &str) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.namespace = Some(ns.into());
        d.metadata.name = Some(name.into());
        d.metadata.uid = Some(uid.into());
        d
    }

    fn owned_by(mut cm: ConfigMap, refs: Vec<OwnerReference>) -> ConfigMap {
        cm.metadata.owner_references = Some(refs);
        cm
    }

    fn cm(ns: &str) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some("child".into());
        c
    }

    #[test]
    fn controller_ref_is_the_one_with_controller_true() {
        let owner = deployment("ns", "web", "u1");
        let mut not_controller = new_controller_ref(&owner).unwrap();
        not_controller.controller = None;
        not_controller.uid = "other".into();
        let child = owned_by(
            cm("ns"),
            vec![not_controller, new_controller_ref(&owner).unwrap()],
        );
        assert_eq!(get_controller_of(&child).unwrap().uid, "u1");
        assert!(is_controlled_by(&child, &owner));
        assert_eq!(
            controller_owner_key::<Deployment, _>(&child).as_deref(),
            Some("ns/web")
        );
    }

    #[test]
    fn same_name_different_uid_is_not_the_controller() {
        let owner = deployment("ns", "web", "u1");
        let child = owned_by(cm("ns"), vec![new_controller_ref(&owner).unwrap()]);
        let recreated = deployment("ns", "web", "u2");
        assert!(!is_controlled_by(&child, &recreated));
    }

    #[test]
    fn no_controller_or_other_kind_gives_no_key() {
        assert!(get_controller_of(&cm("ns")).is_none());
        assert!(!is_controlled_by(&cm("ns"), &deployment("ns", "web", "u1")));
        let owner = deployment("ns", "web", "u1");
        let child = owned_by(cm("ns"), vec![new_controller_ref(&owner).unwrap()]);
        // Owned by a Deployment, asked for a ConfigMap owner.
        assert_eq!(controller_owner_key::<ConfigMap, _>(&child), None);
        // Same kind name in another group is another kind.
        let mut foreign = new_controller_ref(&owner).unwrap();
        foreign.api_version = "example.com/v1".into();
        let child = owned_by(cm("ns"), vec![foreign]);
        assert_eq!(controller_owner_key::<Deployment, _>(&child), None);
    }

    #[test]
    fn owner_without_uid_is_an_error_not_a_dangling_reference() {
        let mut owner = deployment("ns", "web", "u1");
        owner.metadata.uid = None;
        let err = new_controller_ref(&owner).unwrap_err();
        assert!(err.to_string().contains("metadata.uid"), "{err}");
    }

    #[test]
    fn cluster_scoped_owner_key_has_no_namespace() {
        use k8s_openapi::api::core::v1::Namespace;
        let mut owner = Namespace::default();
        owner.metadata.name = Some("team-a".into());
        owner.metadata.uid = Some("n1".into());
        let child = owned_by(cm("team-a"), vec![new_controller_ref(&owner).unwrap()]);
        assert_eq!(
            controller_owner_key::<Namespace, _>(&child).as_deref(),
            Some("team-a")
        );
    }

    #[test]
    fn group_of_core_and_named_groups() {
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(
            group_of("samplecontroller.k8s.io/v1alpha1"),
            "samplecontroller.k8s.io"
        );
    }

    /// Gone (404), deleted and created again (another UID), still there: one GET each.
    #[tokio::test]
    async fn an_owner_still_exists_only_with_its_name_and_uid() {
        use crate::testing::FakeApi;
        let cached = deployment("ns", "web", "u1");
        let api = FakeApi::new();
        let deployments: kube::Api<Deployment> = kube::Api::namespaced(api.client(), "ns");

        // FakeApi answers a get nobody scripted with 404.
        assert!(!owner_still_exists(&deployments, &cached).await.unwrap());
        let replaced = deployment("ns", "web", "u2");
        api.respond_next(
            "get",
            "deployments",
            serde_json::to_value(&replaced).unwrap(),
        );
        assert!(!owner_still_exists(&deployments, &cached).await.unwrap());
        api.respond_next("get", "deployments", serde_json::to_value(&cached).unwrap());
        assert!(owner_still_exists(&deployments, &cached).await.unwrap());
        api.fail_next("get", "deployments", 503, "ServiceUnavailable");
        assert!(owner_still_exists(&deployments, &cached).await.is_err());
        assert_eq!(api.action_names(), ["get deployments"; 4]);
    }
}
