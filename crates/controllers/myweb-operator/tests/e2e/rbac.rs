//! The operator runs as the ServiceAccount of deploy/myweb-operator/rbac.yaml, with a
//! token from the TokenRequest API: if the ClusterRole misses a verb the operator
//! needs (watch Services, create ConfigMaps, apply Deployments, patch MyWeb status,
//! create Events...), the MyWeb never becomes Ready and this test fails; if it grants
//! deletes the operator never does, the 403 checks fail.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::DeleteParams;
use testenv::TestEnv;

use super::*;

/// Asserts that deleting `name` through `api` is forbidden (403), not merely missing.
async fn assert_forbidden_delete<K>(api: &Api<K>, what: &str) -> anyhow::Result<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let err = api
        .delete("anything", &DeleteParams::default())
        .await
        .map(|_| ())
        .expect_err("the ServiceAccount may delete");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "delete {what}: {err}"
    );
    Ok(())
}

#[tokio::test]
async fn the_shipped_rbac_is_enough_to_run_the_operator() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;

    // The manifests exactly as shipped (server-side apply: idempotent).
    env.control_plane()
        .apply_shipped("myweb-operator", &["namespace.yaml", "rbac.yaml"])?;
    // A short-lived token for the ServiceAccount, as the kubelet would mount it.
    let token =
        testenv::service_account_token(env.client(), "kube-controllers", "myweb-operator").await?;
    let as_operator = env.control_plane().client_with_token(&token).await?;

    // Not admin: the garbage collector deletes, the operator never does.
    let ns = env.namespace();
    assert_forbidden_delete(
        &Api::<Deployment>::namespaced(as_operator.clone(), ns),
        "deployments",
    )
    .await?;
    assert_forbidden_delete(
        &Api::<Service>::namespaced(as_operator.clone(), ns),
        "services",
    )
    .await?;
    assert_forbidden_delete(
        &Api::<ConfigMap>::namespaced(as_operator.clone(), ns),
        "configmaps",
    )
    .await?;
    assert_forbidden_delete(&Api::<MyWeb>::namespaced(as_operator.clone(), ns), "mywebs").await?;

    let _operator = RunningOperator::start(as_operator, ns);
    let name = "rbac";
    let web = create_web(&env, name, "nginx", ports::RBAC, "<p>least privilege</p>").await?;
    // watch + create of all three kinds.
    wait_for_objects(&env, &web).await?;
    // Ready needs a later reconcile that applied (patched) all three, then the status
    // patch; the Ready Event needs events create.
    wait_for_ready(&env, name).await?;
    wait_for_event(&env, name, "Ready").await?;

    // A spec change goes through apply as the ServiceAccount too.
    patch_spec(
        &env,
        name,
        serde_json::json!({ "pageContentHtml": "<p>v2</p>" }),
    )
    .await?;
    wait_for_object::<ConfigMap>(&env, name, "the v2 page applied", |c| {
        page_of(c).as_deref() == Some("<p>v2</p>")
    })
    .await?;
    wait_for_ready(&env, name).await?;
    Ok(())
}
