//! The API server is ready, serves the selected release and its discovery lists
//! the resources our controllers use.

use testenv::{Check, TestEnv, get_raw, wait_for};

use crate::TIMEOUT;

#[tokio::test]
async fn readyz_and_version() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    assert_eq!(get_raw(env.client(), "/readyz").await?, "ok");
    let verbose = get_raw(env.client(), "/readyz?verbose").await?;
    assert!(verbose.contains("[+]etcd ok"), "{verbose}");
    assert!(
        verbose.contains("[+]poststarthook/rbac/bootstrap-roles ok"),
        "{verbose}"
    );
    // The release hack/control-plane.sh selected (K8S_VERSION: newest by default,
    // `oldest` in CI's second pass), so a run on the wrong release cannot pass.
    let version = env.client().apiserver_version().await?;
    let selected = testenv::selected_kubernetes_version()?;
    assert_eq!(version.git_version, selected, "{version:?}");
    let minor = selected
        .trim_start_matches("v1.")
        .split('.')
        .next()
        .unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", minor),
        "{version:?}"
    );
    Ok(())
}

#[tokio::test]
async fn discovery_lists_deployments_and_leases() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let apps = env.client().list_api_group_resources("apps/v1").await?;
    let deployments = apps.resources.iter().find(|r| r.name == "deployments");
    let deployments = deployments.expect("apps/v1 serves deployments");
    assert_eq!(deployments.kind, "Deployment");
    assert!(deployments.namespaced);
    assert!(
        apps.resources
            .iter()
            .any(|r| r.name == "deployments/status")
    );

    let coordination = env
        .client()
        .list_api_group_resources("coordination.k8s.io/v1")
        .await?;
    let leases = coordination.resources.iter().find(|r| r.name == "leases");
    assert_eq!(
        leases.expect("coordination.k8s.io/v1 serves leases").kind,
        "Lease"
    );

    // The same through kubectl (the binary built with the control plane).
    let out = env
        .control_plane()
        .kubectl()
        .args(["api-resources", "-o", "name"])
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = String::from_utf8(out.stdout)?;
    for want in [
        "deployments.apps",
        "leases.coordination.k8s.io",
        "customresourcedefinitions.apiextensions.k8s.io",
    ] {
        assert!(
            names.lines().any(|l| l == want),
            "kubectl api-resources lacks {want}:\n{names}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn kwok_nodes_are_ready() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Node;
    let env = TestEnv::new().await?;
    let nodes = kube::Api::<Node>::all(env.client().clone());
    wait_for("two Ready kwok nodes", TIMEOUT, || async {
        let list = nodes.list(&Default::default()).await?;
        let ready: Vec<String> = list
            .items
            .iter()
            .filter(|n| {
                let conds = n.status.as_ref().and_then(|s| s.conditions.as_ref());
                conds.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        Ok::<_, kube::Error>(Check::ready_if(
            ready.len() >= 2,
            (),
            format!("ready nodes: {ready:?}"),
        ))
    })
    .await?;
    Ok(())
}
