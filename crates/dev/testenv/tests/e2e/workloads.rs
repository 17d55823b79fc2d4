//! A Deployment becomes available: kube-controller-manager creates the
//! ReplicaSet and Pods, kube-scheduler binds them to kwok Nodes, kwok marks
//! them Running/Ready, and the Deployment status reports it.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use testenv::{Check, TestEnv, wait_for};

use crate::TIMEOUT;

const REPLICAS: i32 = 3;

#[tokio::test]
async fn deployment_becomes_available_on_kwok_nodes() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("deploy").await?;
    let deployments = Api::<Deployment>::namespaced(env.client().clone(), env.namespace());
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "web" },
        "spec": {
            "replicas": REPLICAS,
            "selector": { "matchLabels": { "app": "web" } },
            "template": {
                "metadata": { "labels": { "app": "web" } },
                "spec": { "containers": [{ "name": "web", "image": "registry.k8s.io/pause:3.10" }] }
            }
        }
    }))?;
    let created = deployments
        .create(&PostParams::default(), &deployment)
        .await?;

    let status: DeploymentStatus = wait_for("deployment web available", TIMEOUT, || async {
        let d = deployments.get("web").await?;
        let s = d.status.clone().unwrap_or_default();
        let done = s.observed_generation >= d.metadata.generation
            && s.replicas == Some(REPLICAS)
            && s.updated_replicas == Some(REPLICAS)
            && s.ready_replicas == Some(REPLICAS)
            && s.available_replicas == Some(REPLICAS);
        Ok::<_, kube::Error>(Check::ready_if(done, s.clone(), format!("{s:?}")))
    })
    .await?;
    let available = status.conditions.unwrap_or_default();
    assert!(
        available
            .iter()
            .any(|c| c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True")),
        "{available:?}"
    );

    // One ReplicaSet, controlled by the Deployment.
    let selector = ListParams::default().labels("app=web");
    let sets = Api::<ReplicaSet>::namespaced(env.client().clone(), env.namespace())
        .list(&selector)
        .await?;
    assert_eq!(
        sets.items.len(),
        1,
        "{:?}",
        sets.items.iter().map(|r| r.name_any()).collect::<Vec<_>>()
    );
    let rs = &sets.items[0];
    let owner = rs
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true));
    assert_eq!(
        owner.map(|o| o.uid.as_str()),
        created.metadata.uid.as_deref()
    );

    // REPLICAS Pods, controlled by it, bound to kwok Nodes, Running and Ready.
    let pods = Api::<Pod>::namespaced(env.client().clone(), env.namespace())
        .list(&selector)
        .await?;
    assert_eq!(pods.items.len(), REPLICAS as usize);
    for pod in &pods.items {
        let owner = pod
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true));
        assert_eq!(owner.map(|o| o.uid.as_str()), rs.metadata.uid.as_deref());
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        assert!(
            node.starts_with("kwok-node-"),
            "pod {} on node {node:?}",
            pod.name_any()
        );
        let status = pod.status.clone().unwrap_or_default();
        assert_eq!(status.phase.as_deref(), Some("Running"), "{status:?}");
        let conditions = status.conditions.unwrap_or_default();
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True"),
            "{conditions:?}"
        );
    }
    Ok(())
}
