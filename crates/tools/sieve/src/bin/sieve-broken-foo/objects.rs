//! The objects of `sieve-broken-foo` (a test fixture, see its crate docs): the Foo type,
//! the Deployment a Foo asks for, and the small helpers the controller reads objects
//! with. Nothing in here is wrong on purpose; the bugs are in the controller.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::core::{ApiResource, GroupVersionKind, Object};
use serde::{Deserialize, Serialize};

/// A Foo's spec.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The Deployment's name (or, generated, its prefix).
    pub deployment_name: String,
    /// The Deployment's replicas.
    pub replicas: i32,
}

/// A Foo's status.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// The owned Deployments' available replicas.
    pub available_replicas: i32,
}

/// A Foo, typed over kube's generic object.
pub type Foo = Object<FooSpec, FooStatus>;

/// The Foo resource (samplecontroller.k8s.io/v1alpha1, `foos`).
pub fn foo_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("samplecontroller.k8s.io", "v1alpha1", "Foo");
    ApiResource::from_gvk_with_plural(&gvk, "foos")
}

/// `foo`'s Deployment: `spec.replicas` replicas of nginx, labelled and selected by
/// `app=nginx, controller=<foo>` as sample-controller's are, controlled by the Foo.
pub fn new_deployment(foo: &Foo, generate: bool) -> Deployment {
    let labels = BTreeMap::from([
        ("app".to_owned(), "nginx".to_owned()),
        ("controller".to_owned(), name(foo)),
    ]);
    let wanted = foo.spec.deployment_name.clone();
    let (fixed, generated) = if generate {
        (None, Some(format!("{wanted}-")))
    } else {
        (Some(wanted), None)
    };
    Deployment {
        metadata: ObjectMeta {
            name: fixed,
            generate_name: generated,
            owner_references: Some(vec![OwnerReference {
                api_version: "samplecontroller.k8s.io/v1alpha1".to_owned(),
                kind: "Foo".to_owned(),
                name: name(foo),
                uid: uid(foo),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(foo.spec.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".to_owned(),
                        image: Some("nginx:1.27".to_owned()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

/// Whether `deployment` has `foo` as its controller.
pub fn controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    let foo_uid = uid(foo);
    deployment
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == foo_uid)
}

/// An object's name.
pub fn name<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

/// An object's uid.
pub fn uid<K: kube::Resource>(object: &K) -> String {
    object.meta().uid.clone().unwrap_or_default()
}

/// `(name, object)`, for a cache.
pub fn keyed<K: kube::Resource>(object: K) -> (String, K) {
    (name(&object), object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn foo(replicas: i32) -> Foo {
        let mut foo = Foo::new(
            "web",
            &foo_resource(),
            FooSpec {
                deployment_name: "web-deploy".into(),
                replicas,
            },
        );
        foo.metadata.uid = Some("u-1".into());
        foo
    }

    #[test]
    fn the_deployment_is_named_or_generated_and_controlled_by_its_foo() {
        let named = new_deployment(&foo(3), false);
        assert_eq!(named.metadata.name.as_deref(), Some("web-deploy"));
        assert_eq!(named.metadata.generate_name, None);
        assert_eq!(named.spec.replicas, Some(3));
        assert!(controlled_by(&named, &foo(3)));
        let generated = new_deployment(&foo(1), true);
        assert_eq!(generated.metadata.name, None);
        assert_eq!(
            generated.metadata.generate_name.as_deref(),
            Some("web-deploy-")
        );
        let mut other = foo(1);
        other.metadata.uid = Some("u-2".into());
        assert!(
            !controlled_by(&generated, &other),
            "another Foo of the same name"
        );
    }
}
