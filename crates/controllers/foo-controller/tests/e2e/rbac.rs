//! The controller runs as the ServiceAccount of deploy/sample-controller/rbac.yaml, with a
//! token from the TokenRequest API: if the ClusterRole misses a verb the controller
//! needs (create Deployments, update Foo status, patch Events...), this test fails.

use kube::api::{Api, Patch, PatchParams};
use testenv::TestEnv;

use super::*;

#[tokio::test]
async fn the_shipped_rbac_is_enough_to_run_the_controller() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(env.client()).await?;

    // Apply the manifests exactly as shipped (server-side apply: idempotent if another
    // test run applied them before).
    env.control_plane()
        .apply_shipped("sample-controller", &["namespace.yaml", "rbac.yaml"])?;

    // A short-lived token for the ServiceAccount, as the kubelet would mount it.
    let token =
        testenv::service_account_token(env.client(), "kube-controllers", "sample-controller")
            .await?;
    let as_controller = env.control_plane().client_with_token(&token).await?;

    // Not admin: the ServiceAccount may not, say, delete Deployments.
    let denied: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(as_controller.clone(), env.namespace());
    let err = denied
        .delete("anything", &Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );

    let _controller = RunningController::start(as_controller, env.namespace());
    let foo = create_foo(&env, "rbac", "rbac-deploy", 1).await?;
    wait_for_deployment(
        &env,
        "rbac-deploy",
        "Deployment created as the ServiceAccount",
        |d| controller::is_controlled_by(d, &foo),
    )
    .await?;
    wait_for_available(&env, "rbac", 1).await?; // foos/status update
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    foos.patch(
        "rbac",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"replicas": 2}})),
    )
    .await?;
    wait_for_deployment(
        &env,
        "rbac-deploy",
        "Deployment scaled as the ServiceAccount",
        |d| d.spec.replicas == Some(2),
    )
    .await?; // deployments update
    wait_for_event(&env, "rbac", "Synced").await?; // events create
    Ok(())
}
