//! Drift: someone changes or deletes an object the operator owns, and the next
//! reconcile (triggered by the owned object's watch event) puts it back. The
//! ConfigMap's watch is metadata-only (`owns_metadata`): an edit of its `data` and its
//! deletion must reach the operator all the same.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::DeleteParams;
use testenv::TestEnv;

use super::*;

/// Patch parameters of a human with `kubectl` (another field manager than the
/// operator's).
fn as_manager(manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(manager.to_string()),
        ..PatchParams::default()
    }
}

#[tokio::test]
async fn an_edited_config_map_gets_its_page_back() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;
    let _operator = RunningOperator::start(env.client().clone(), env.namespace());

    let name = "edited";
    let page = "<h1>the real page</h1>";
    let web = create_web(&env, name, "nginx", ports::DRIFT_CONFIG_MAP, page).await?;
    let (cm, _, _) = wait_for_objects(&env, &web).await?;

    // `kubectl edit`: the page changed, and an annotation the operator never sends.
    let edit = serde_json::json!({
        "metadata": {"annotations": {"edited-by": "someone"}},
        "data": {"index.html": "<h1>defaced</h1>"}
    });
    let edited = api::<ConfigMap>(&env)
        .patch(name, &as_manager("kubectl-edit"), &Patch::Merge(&edit))
        .await?;
    assert_eq!(page_of(&edited).as_deref(), Some("<h1>defaced</h1>"));

    let restored = wait_for_object::<ConfigMap>(&env, name, "the page put back", |c| {
        page_of(c).as_deref() == Some(page)
    })
    .await?;
    // The same object, corrected in place; what the operator does not own is left.
    assert_eq!(restored.metadata.uid, cm.metadata.uid);
    assert_eq!(
        restored
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("edited-by"))
            .map(String::as_str),
        Some("someone")
    );
    assert!(controller::is_controlled_by(&restored, &web));
    Ok(())
}

/// The operator watches ConfigMaps as metadata only (`owns_metadata`): the delete
/// still reaches it, through the metadata watch, well before a resync would.
#[tokio::test]
async fn a_deleted_config_map_is_recreated_with_its_page() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;
    let _operator = RunningOperator::start(env.client().clone(), env.namespace());

    let name = "reborn";
    let page = "<h1>still here</h1>";
    let web = create_web(&env, name, "nginx", ports::DRIFT_CONFIG_MAP_DELETED, page).await?;
    let (first, _, _) = wait_for_objects(&env, &web).await?;

    let deleted_at = std::time::Instant::now();
    api::<ConfigMap>(&env)
        .delete(name, &DeleteParams::default())
        .await?;
    let second = wait_for_object::<ConfigMap>(&env, name, "ConfigMap recreated", |c| {
        c.metadata.uid.is_some()
            && c.metadata.uid != first.metadata.uid
            && controller::is_controlled_by(c, &web)
    })
    .await?;
    let took = deleted_at.elapsed();
    assert_eq!(page_of(&second).as_deref(), Some(page));
    // The delete event did it, not the resync (RESYNC, 30 s) that would also notice.
    assert!(took < RESYNC, "recreated after {took:?}");
    Ok(())
}

#[tokio::test]
async fn a_deleted_service_is_recreated() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;
    let _operator = RunningOperator::start(env.client().clone(), env.namespace());

    let name = "phoenix";
    let web = create_web(&env, name, "nginx", ports::DRIFT_SERVICE, "<p>hi</p>").await?;
    let (_, _, first) = wait_for_objects(&env, &web).await?;

    api::<Service>(&env)
        .delete(name, &DeleteParams::default())
        .await?;
    let second = wait_for_object::<Service>(&env, name, "Service recreated", |s| {
        s.metadata.uid.is_some()
            && s.metadata.uid != first.metadata.uid
            && controller::is_controlled_by(s, &web)
    })
    .await?;
    assert_eq!(node_port_of(&second), Some(ports::DRIFT_SERVICE));
    assert_eq!(
        second.spec.as_ref().and_then(|s| s.type_.as_deref()),
        Some("NodePort")
    );
    Ok(())
}

#[tokio::test]
async fn a_scaled_deployment_is_scaled_back() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;
    let _operator = RunningOperator::start(env.client().clone(), env.namespace());

    let name = "scaled";
    let web = create_web(&env, name, "nginx", ports::DRIFT_DEPLOYMENT, "<p>one</p>").await?;
    let (_, first, _) = wait_for_objects(&env, &web).await?;
    assert_eq!(first.spec.replicas, Some(1));

    // `kubectl scale --replicas=3`, as another field manager.
    let scale = serde_json::json!({"spec": {"replicas": 3}});
    let scaled = api::<Deployment>(&env)
        .patch(name, &as_manager("kubectl-scale"), &Patch::Merge(&scale))
        .await?;
    assert_eq!(scaled.spec.replicas, Some(3));

    let back = wait_for_object::<Deployment>(&env, name, "Deployment back at 1 replica", |d| {
        d.spec.replicas == Some(1)
    })
    .await?;
    assert_eq!(back.metadata.uid, first.metadata.uid);
    // And the page is served again by that one replica.
    wait_for_ready(&env, name).await?;
    Ok(())
}
