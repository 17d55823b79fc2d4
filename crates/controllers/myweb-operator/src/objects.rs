//! The three objects a MyWeb asks for, as pure functions of the MyWeb: kubebuilder's
//! `configMapForMyWeb`, `deploymentForMyWeb` and `serviceForMyWeb`.
//!
//! Each returns the object's **apply configuration**: only the fields this operator
//! owns, no `status`, no defaults the API server fills in. Server-side apply records
//! those fields as owned by our field manager, and every reconcile sends the same
//! configuration again, so "desired state" is exactly these functions. Fields we leave
//! out (the Deployment's `strategy`, the Service's `clusterIP`...) stay with the API
//! server's defaults or with whoever set them.
//!
//! All three carry the name of the MyWeb, live in its namespace, and have a controller
//! ownerReference to it, so the garbage collector deletes them with it.

use std::collections::BTreeMap;

use apis::operator::v1::MyWeb;
use controller::new_controller_ref;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, PodSpec, PodTemplateSpec, Service,
    ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The key of the page in the ConfigMap, and so the file nginx serves.
pub const INDEX_HTML: &str = "index.html";
/// Where nginx serves files from; the ConfigMap is mounted there.
pub const NGINX_HTML_ROOT: &str = "/usr/share/nginx/html";
/// The pod template annotation holding the page's SHA-256: a new page changes the
/// template, so the Deployment rolls its pods (a mounted ConfigMap is updated in place
/// by the kubelet only eventually, and not at all for `subPath` mounts).
pub const PAGE_CHECKSUM_ANNOTATION: &str = "operator.k8s-summit.org/page-sha256";
/// The ConfigMap annotation holding the `metadata.generation` of the MyWeb it was
/// last applied from: the operator's fence against acting on a stale cache (see
/// "Stale caches" in [`reconcile`](crate::reconcile)).
pub const WEB_GENERATION_ANNOTATION: &str = "operator.k8s-summit.org/generation";
/// The container port nginx listens on.
pub const HTTP_PORT: i32 = 80;
/// Replicas of the web server. The tutorial runs one; the operator owns the field,
/// so a `kubectl scale` is put back.
pub const REPLICAS: i32 = 1;

/// The labels the pods carry and the Service selects (`app.kubernetes.io/*`).
pub fn selector_labels(web: &MyWeb) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "myweb".to_string()),
        (
            "app.kubernetes.io/instance".to_string(),
            web.metadata.name.clone().unwrap_or_default(),
        ),
    ])
}

/// The labels of the three objects: the selector labels plus `managed-by`.
fn object_labels(web: &MyWeb) -> BTreeMap<String, String> {
    let mut labels = selector_labels(web);
    labels.insert(
        "app.kubernetes.io/managed-by".to_string(),
        crate::CONTROLLER_NAME.to_string(),
    );
    labels
}

/// Name, namespace, labels and the controller ownerReference. Fails when the MyWeb
/// has no name or UID (it was not read from the API server).
fn object_meta(web: &MyWeb) -> Result<ObjectMeta> {
    Ok(ObjectMeta {
        name: web.metadata.name.clone(),
        namespace: web.metadata.namespace.clone(),
        labels: Some(object_labels(web)),
        owner_references: Some(vec![new_controller_ref(web).map_err(Error::OwnerRef)?]),
        ..ObjectMeta::default()
    })
}

/// The hex SHA-256 of the page.
pub fn page_checksum(page: &str) -> String {
    Sha256::digest(page.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The generation a ConfigMap says it was applied from ([`WEB_GENERATION_ANNOTATION`]);
/// 0 when it says none (made by an operator from before the annotation).
pub fn applied_generation(meta: &ObjectMeta) -> i64 {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(WEB_GENERATION_ANNOTATION))
        .and_then(|g| g.parse().ok())
        .unwrap_or(0)
}

/// The ConfigMap holding the page as `index.html`, annotated with the MyWeb's
/// generation ([`WEB_GENERATION_ANNOTATION`]).
pub fn config_map(web: &MyWeb) -> Result<ConfigMap> {
    let mut metadata = object_meta(web)?;
    metadata.annotations = Some(BTreeMap::from([(
        WEB_GENERATION_ANNOTATION.to_string(),
        web.metadata.generation.unwrap_or(0).to_string(),
    )]));
    Ok(ConfigMap {
        metadata,
        data: Some(BTreeMap::from([(
            INDEX_HTML.to_string(),
            web.spec.page_content_html.clone(),
        )])),
        ..ConfigMap::default()
    })
}

/// The Deployment running `spec.image` with the ConfigMap mounted at nginx's html root.
pub fn deployment(web: &MyWeb) -> Result<Deployment> {
    let name = web.metadata.name.clone().unwrap_or_default();
    let pod = PodSpec {
        containers: vec![Container {
            name: "web".to_string(),
            image: Some(web.spec.image.clone()),
            ports: Some(vec![ContainerPort {
                name: Some("http".to_string()),
                container_port: HTTP_PORT,
                // Part of the list's merge key under server-side apply: always set it.
                protocol: Some("TCP".to_string()),
                ..ContainerPort::default()
            }]),
            volume_mounts: Some(vec![VolumeMount {
                name: "page".to_string(),
                mount_path: NGINX_HTML_ROOT.to_string(),
                read_only: Some(true),
                ..VolumeMount::default()
            }]),
            ..Container::default()
        }],
        volumes: Some(vec![Volume {
            name: "page".to_string(),
            config_map: Some(ConfigMapVolumeSource {
                name: name.clone(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        }]),
        ..PodSpec::default()
    };
    Ok(Deployment {
        metadata: object_meta(web)?,
        spec: DeploymentSpec {
            replicas: Some(REPLICAS),
            selector: LabelSelector {
                match_labels: Some(selector_labels(web)),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(selector_labels(web)),
                    annotations: Some(BTreeMap::from([(
                        PAGE_CHECKSUM_ANNOTATION.to_string(),
                        page_checksum(&web.spec.page_content_html),
                    )])),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    })
}

/// The NodePort Service exposing the pods on `spec.nodePortNumber`.
pub fn service(web: &MyWeb) -> Result<Service> {
    Ok(Service {
        metadata: object_meta(web)?,
        spec: Some(ServiceSpec {
            type_: Some("NodePort".to_string()),
            selector: Some(selector_labels(web)),
            ports: Some(vec![ServicePort {
                name: Some("http".to_string()),
                // `port` and `protocol` are the list's merge key under server-side
                // apply: always set both.
                port: HTTP_PORT,
                protocol: Some("TCP".to_string()),
                target_port: Some(IntOrString::String("http".to_string())),
                node_port: Some(web.spec.node_port_number),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apis::operator::v1::MyWebSpec;

    fn web() -> MyWeb {
        let mut web = MyWeb::new("site", MyWebSpec::new("nginx:1.27", 30123, "<h1>hi</h1>"));
        web.metadata.namespace = Some("ns".into());
        web.metadata.uid = Some("uid-site".into());
        web
    }

    #[test]
    fn every_object_is_named_after_the_web_and_controlled_by_it() {
        let web = web();
        let metas = [
            config_map(&web).unwrap().metadata,
            deployment(&web).unwrap().metadata,
            service(&web).unwrap().metadata,
        ];
        for meta in metas {
            assert_eq!(meta.name.as_deref(), Some("site"));
            assert_eq!(meta.namespace.as_deref(), Some("ns"));
            let owner = &meta.owner_references.unwrap()[0];
            assert_eq!(
                (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
                ("MyWeb", "uid-site", Some(true))
            );
            assert_eq!(
                meta.labels.unwrap()["app.kubernetes.io/managed-by"],
                "myweb-operator"
            );
        }
    }

    #[test]
    fn a_web_without_a_uid_has_no_objects() {
        let mut web = web();
        web.metadata.uid = None;
        assert!(matches!(config_map(&web), Err(Error::OwnerRef(_))));
    }

    #[test]
    fn the_page_reaches_the_config_map_and_its_checksum_the_pod_template() {
        let mut web = web();
        let cm = config_map(&web).unwrap();
        assert_eq!(cm.data.unwrap()[INDEX_HTML], "<h1>hi</h1>");
        let checksum = |web: &MyWeb| {
            deployment(web)
                .unwrap()
                .spec
                .template
                .metadata
                .unwrap()
                .annotations
                .unwrap()[PAGE_CHECKSUM_ANNOTATION]
                .clone()
        };
        let before = checksum(&web);
        assert_eq!(before, page_checksum("<h1>hi</h1>"));
        assert_eq!(before.len(), 64);
        web.spec.page_content_html = "<h1>bye</h1>".into();
        assert_ne!(checksum(&web), before);
    }

    #[test]
    fn the_deployment_serves_the_config_map_with_the_image() {
        let d = deployment(&web()).unwrap();
        let spec = d.spec;
        assert_eq!(spec.replicas, Some(REPLICAS));
        let template_labels = spec.template.metadata.unwrap().labels.unwrap();
        assert_eq!(spec.selector.match_labels.unwrap(), template_labels);
        let pod = spec.template.spec.unwrap();
        assert_eq!(pod.containers[0].image.as_deref(), Some("nginx:1.27"));
        let mount = &pod.containers[0].volume_mounts.as_ref().unwrap()[0];
        assert_eq!(mount.mount_path, NGINX_HTML_ROOT);
        let volume = &pod.volumes.unwrap()[0];
        assert_eq!(volume.name, mount.name);
        assert_eq!(volume.config_map.as_ref().unwrap().name, "site");
    }

    #[test]
    fn the_service_is_a_node_port_selecting_the_pods() {
        let web = web();
        let spec = service(&web).unwrap().spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        assert_eq!(spec.selector.unwrap(), selector_labels(&web));
        let port = &spec.ports.unwrap()[0];
        assert_eq!(port.node_port, Some(30123));
        assert_eq!(port.protocol.as_deref(), Some("TCP"));
    }
}
