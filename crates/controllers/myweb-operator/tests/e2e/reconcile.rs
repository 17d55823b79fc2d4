//! The happy path: the tutorial's MyWeb gets a ConfigMap, a Deployment and a NodePort
//! Service controlled by it, kube-controller-manager and kwok roll the Deployment out,
//! and the MyWeb reports Ready; then every spec field propagates.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::ListParams;
use sha2::{Digest, Sha256};
use testenv::{Check, TestEnv, wait_for};

use super::*;

/// The pod template annotation holding the page's SHA-256.
const CHECKSUM: &str = "operator.k8s-summit.org/page-sha256";

/// The lowercase hex SHA-256 of `page`, computed here independently of the operator.
fn sha256_hex(page: &str) -> String {
    Sha256::digest(page.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The tutorial's example MyWeb, deploy/myweb-operator/myweb.yaml.
fn shipped_example() -> anyhow::Result<MyWeb> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../deploy/myweb-operator/myweb.yaml");
    Ok(serde_yaml::from_str(&std::fs::read_to_string(path)?)?)
}

#[tokio::test]
async fn the_tutorial_web_gets_its_objects_and_becomes_ready() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;
    let _operator = RunningOperator::start(env.client().clone(), env.namespace());

    // deploy/myweb-operator/myweb.yaml, as shipped, in the test's namespace.
    let mut example = shipped_example()?;
    example.metadata.namespace = Some(env.namespace().to_string());
    let (name, want) = ("myweb-sample", example.spec.clone());
    assert_eq!(example.metadata.name.as_deref(), Some(name));
    assert!(want.image.starts_with("nginx"), "{want:?}");
    assert!(!want.page_content_html.is_empty());
    let web = webs(&env).create(&PostParams::default(), &example).await?;
    let uid = web.metadata.uid.clone().expect("the API server sets a uid");
    let (cm, deployment, service) = wait_for_objects(&env, &web).await?;

    // Every object: one ownerReference, the MyWeb's controller reference.
    for (kind, meta) in [
        ("ConfigMap", &cm.metadata),
        ("Deployment", &deployment.metadata),
        ("Service", &service.metadata),
    ] {
        let owners = meta.owner_references.clone().unwrap_or_default();
        assert_eq!(owners.len(), 1, "{kind}: {owners:?}");
        let owner = &owners[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
                owner.controller,
                owner.block_owner_deletion,
            ),
            (
                "operator.k8s-summit.org/v1",
                "MyWeb",
                name,
                uid.as_str(),
                Some(true),
                Some(true)
            ),
            "{kind}"
        );
    }

    // The ConfigMap holds the page.
    assert_eq!(page_of(&cm), Some(want.page_content_html.clone()));

    // The Deployment runs the image with the ConfigMap mounted at nginx's html root,
    // and the page's checksum in its pod template.
    let spec = deployment.spec.clone();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(image_of(&deployment), Some(want.image.clone()));
    assert_eq!(
        template_annotation(&deployment, CHECKSUM),
        Some(sha256_hex(&want.page_content_html))
    );
    let pod = spec.template.spec.clone().expect("pod spec");
    let mount = pod.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == "/usr/share/nginx/html")
        .expect("a mount at /usr/share/nginx/html");
    let volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .expect("the mounted volume");
    assert_eq!(
        volume.config_map.as_ref().map(|c| c.name.as_str()),
        Some(name),
        "the volume is the MyWeb's ConfigMap"
    );

    // The Service is a NodePort on the asked port, selecting the Deployment's pods.
    let service_spec = service.spec.clone().expect("Service spec");
    assert_eq!(service_spec.type_.as_deref(), Some("NodePort"));
    assert_eq!(node_port_of(&service), Some(want.node_port_number));
    let selector = service_spec.selector.clone().unwrap_or_default();
    assert!(!selector.is_empty(), "the Service selects something");
    let template_labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    for (key, value) in &selector {
        assert_eq!(template_labels.get(key), Some(value), "pods carry {key}");
    }

    // kwok runs the pods: the MyWeb becomes Ready for its generation.
    let ready = wait_for_ready(&env, name).await?;
    let condition = ready_condition(&ready);
    assert!(
        condition
            .message
            .contains(&want.node_port_number.to_string()),
        "{condition:?}"
    );
    let status = ready.status.clone().unwrap_or_default();
    assert!(status.completed);
    assert_eq!(status.observed_generation, ready.metadata.generation);
    let event = wait_for_event(&env, name, "Ready").await?;
    assert_eq!(event.type_.as_deref(), Some("Normal"));

    // The Service's selector finds a Ready pod serving the ConfigMap.
    let pods: Api<Pod> = api(&env);
    let label_selector = selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    wait_for("a Ready pod behind the Service", TIMEOUT, || async {
        let list = pods
            .list(&ListParams::default().labels(&label_selector))
            .await?;
        let ready = list.items.iter().filter(|p| pod_is_ready(p, name)).count();
        Ok::<_, kube::Error>(Check::ready_if(
            ready >= 1,
            (),
            format!("{} pods, {ready} ready", list.items.len()),
        ))
    })
    .await?;
    Ok(())
}

/// Whether `pod` is Ready and mounts the ConfigMap `config_map`.
fn pod_is_ready(pod: &Pod, config_map: &str) -> bool {
    let mounts = pod.spec.as_ref().is_some_and(|s| {
        s.volumes
            .iter()
            .flatten()
            .any(|v| v.config_map.as_ref().is_some_and(|c| c.name == config_map))
    });
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    mounts && ready
}

#[tokio::test]
async fn each_spec_field_propagates_to_its_object() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;
    let _operator = RunningOperator::start(env.client().clone(), env.namespace());

    let name = "changes";
    let web = create_web(&env, name, "nginx:1.27", ports::CHANGES, "<h1>v1</h1>").await?;
    let (cm, deployment, service) = wait_for_objects(&env, &web).await?;
    let first = wait_for_ready(&env, name).await?;
    let checksum_v1 = template_annotation(&deployment, CHECKSUM);
    assert_eq!(checksum_v1, Some(sha256_hex("<h1>v1</h1>")));

    // pageContentHtml -> the ConfigMap's index.html, and a new checksum in the pod
    // template (so the pods roll).
    patch_spec(
        &env,
        name,
        serde_json::json!({ "pageContentHtml": "<h1>v2</h1>" }),
    )
    .await?;
    wait_for_object::<ConfigMap>(&env, name, "ConfigMap with the v2 page", |c| {
        page_of(c).as_deref() == Some("<h1>v2</h1>")
    })
    .await?;
    let rolled =
        wait_for_object::<Deployment>(&env, name, "pod template with v2's checksum", |d| {
            template_annotation(d, CHECKSUM) == Some(sha256_hex("<h1>v2</h1>"))
        })
        .await?;
    assert_ne!(template_annotation(&rolled, CHECKSUM), checksum_v1);

    // image -> the container's image.
    patch_spec(&env, name, serde_json::json!({ "image": "nginx:1.28" })).await?;
    wait_for_object::<Deployment>(&env, name, "Deployment running nginx:1.28", |d| {
        image_of(d).as_deref() == Some("nginx:1.28")
    })
    .await?;

    // nodePortNumber -> the Service's nodePort.
    let moved = patch_spec(
        &env,
        name,
        serde_json::json!({ "nodePortNumber": ports::CHANGES_MOVED }),
    )
    .await?;
    wait_for_object::<Service>(&env, name, "Service on the new node port", |s| {
        node_port_of(s) == Some(ports::CHANGES_MOVED)
    })
    .await?;

    // Three spec changes, three new generations; the status catches up with the last
    // one once the new template is rolled out.
    assert_eq!(
        moved.metadata.generation,
        first.metadata.generation.map(|g| g + 3)
    );
    let ready = wait_for_ready(&env, name).await?;
    assert_eq!(ready.metadata.generation, moved.metadata.generation);

    // Changed in place, never recreated.
    let uid = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| m.uid.clone();
    let (cm2, deployment2, service2) = wait_for_objects(&env, &web).await?;
    assert_eq!(uid(&cm2.metadata), uid(&cm.metadata));
    assert_eq!(uid(&deployment2.metadata), uid(&deployment.metadata));
    assert_eq!(uid(&service2.metadata), uid(&service.metadata));
    assert_eq!(page_of(&cm2).as_deref(), Some("<h1>v2</h1>"));
    assert_eq!(image_of(&deployment2).as_deref(), Some("nginx:1.28"));
    assert_eq!(node_port_of(&service2), Some(ports::CHANGES_MOVED));
    Ok(())
}
