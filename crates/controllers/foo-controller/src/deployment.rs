//! The Deployment a Foo asks for: sample-controller's `newDeployment`.

use std::collections::BTreeMap;

use apis::samplecontroller::v1alpha1::Foo;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::error::{Error, Result};

/// The image every Foo's Deployment runs (sample-controller's `nginx:latest`, pinned to
/// a tag so a rollout is reproducible).
pub const NGINX_IMAGE: &str = "nginx:1.27";

/// The labels of a Foo's Deployment and its Pods: `app=nginx`, `controller=<foo name>`,
/// as in sample-controller. The selector uses the same labels.
pub fn deployment_labels(foo: &Foo) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_string(), "nginx".to_string()),
        (
            "controller".to_string(),
            foo.metadata.name.clone().unwrap_or_default(),
        ),
    ])
}

/// A new Deployment for `foo`: named `spec.deploymentName`, in the Foo's namespace,
/// `spec.replicas` replicas of nginx, with a controller owner reference to the Foo so
/// that the Deployment's events find their way back to it and the garbage collector
/// deletes it with the Foo.
pub fn new_deployment(foo: &Foo) -> Result<Deployment> {
    let labels = deployment_labels(foo);
    let owner = controller::new_controller_ref(foo).map_err(Error::Owner)?;
    Ok(Deployment {
        metadata: ObjectMeta {
            name: Some(foo.spec.deployment_name.clone()),
            namespace: foo.metadata.namespace.clone(),
            owner_references: Some(vec![owner]),
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
                        name: "nginx".to_string(),
                        image: Some(NGINX_IMAGE.to_string()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    })
}

/// What the Foo controller keeps of a Deployment in its cache: the metadata (name,
/// owner references, resourceVersion), `spec.replicas` and `status`, which is all
/// that the sync and the Deployment handler read. The pod template, the selector and
/// the rest of the spec are dropped (left at their empty defaults).
///
/// Used as the Deployment informer's transform (client-go's `SetTransform`) when
/// [`FooControllerOptions::trim_deployment_cache`](crate::FooControllerOptions) is
/// set, as the `sample-controller` binary does. Why: a k8s-openapi `Container` is
/// about 2.3 KB even when nearly every field is empty (each optional part is stored
/// inline), so the template is half of a cached Deployment's bytes; at 5,000 Foos that
/// is about 14 MiB of the controller's memory (docs/benchmarks.md). The sync never
/// sends a cached Deployment back: it scales with a merge patch of `spec.replicas`
/// (see [`sync`](crate::sync)), so nothing is lost by not caching the rest.
pub fn trim_deployment(deployment: Deployment) -> Deployment {
    Deployment {
        metadata: deployment.metadata,
        spec: DeploymentSpec {
            replicas: deployment.spec.replicas,
            ..DeploymentSpec::default()
        },
        status: deployment.status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apis::samplecontroller::v1alpha1::FooSpec;
    use k8s_openapi::api::apps::v1::DeploymentStatus;

    #[test]
    fn the_deployment_is_owned_labelled_and_sized_by_the_foo() {
        let mut foo = Foo::new("example", FooSpec::new("example-deploy", 3));
        foo.metadata.namespace = Some("ns".into());
        foo.metadata.uid = Some("uid-1".into());
        let d = new_deployment(&foo).unwrap();
        assert_eq!(d.metadata.name.as_deref(), Some("example-deploy"));
        assert_eq!(d.metadata.namespace.as_deref(), Some("ns"));
        let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
                owner.controller
            ),
            ("Foo", "example", "uid-1", Some(true))
        );
        assert_eq!(owner.api_version, "samplecontroller.k8s.io/v1alpha1");
        let spec = d.spec;
        assert_eq!(spec.replicas, Some(3));
        let labels = spec.template.metadata.unwrap().labels.unwrap();
        assert_eq!(labels["app"], "nginx");
        assert_eq!(labels["controller"], "example");
        assert_eq!(spec.selector.match_labels.unwrap(), labels);
    }

    #[test]
    fn the_cache_keeps_metadata_replicas_and_status_only() {
        let mut foo = Foo::new("example", FooSpec::new("example-deploy", 3));
        foo.metadata.uid = Some("uid-1".into());
        let mut d = new_deployment(&foo).unwrap();
        d.metadata.resource_version = Some("42".into());
        d.status = Some(DeploymentStatus {
            available_replicas: Some(2),
            ..DeploymentStatus::default()
        });
        let trimmed = trim_deployment(d.clone());
        assert_eq!(trimmed.metadata, d.metadata);
        assert_eq!(trimmed.status, d.status);
        // Still owned by the Foo: the handler and the sync's ownership check agree.
        assert!(controller::is_controlled_by(&trimmed, &foo));
        let spec = trimmed.spec;
        assert_eq!(spec.replicas, Some(3));
        assert_eq!(spec.template, PodTemplateSpec::default());
        assert_eq!(spec.selector, LabelSelector::default());
    }

    #[test]
    fn a_foo_not_read_from_the_api_server_cannot_own_anything() {
        let foo = Foo::new("example", FooSpec::new("example-deploy", 1));
        assert!(matches!(new_deployment(&foo), Err(Error::Owner(_))));
    }
}
