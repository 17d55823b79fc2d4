//! The controller runs as the ServiceAccount of deploy/vm-controller/rbac.yaml, with a
//! token from the TokenRequest API: if the ClusterRole misses a verb the controller
//! needs (patch the finalizer, update the status, create Events...), this test fails.

use std::sync::Arc;
use std::time::Duration;

use kube::api::Api;
use vm_driver::FakeDriver;

use super::*;

#[tokio::test]
async fn the_shipped_rbac_is_enough_to_run_the_controller() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("vmc-rbac").await?;
    install_crds(env.client()).await?;

    // The manifests exactly as shipped (server-side apply: idempotent).
    env.control_plane()
        .apply_shipped("vm-controller", &["namespace.yaml", "rbac.yaml"])?;

    let token =
        testenv::service_account_token(env.client(), "kube-controllers", "vm-controller").await?;
    let as_controller = env.control_plane().client_with_token(&token).await?;

    // Not admin: the ServiceAccount may not delete VirtualMachines.
    let denied: Api<VirtualMachine> = Api::namespaced(as_controller.clone(), env.namespace());
    let err = denied
        .delete("anything", &Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );

    let driver = Arc::new(FakeDriver::new());
    let _controller = RunningController::start(
        as_controller,
        env.namespace(),
        driver.clone(),
        Duration::from_secs(1),
    );
    create_vm(&env, "rbac", "1", "64Mi", "1Gi").await?;
    // list/watch, patch (finalizer), update virtualmachines/status:
    wait_for_vm(&env, "rbac", "Active as the ServiceAccount", is_active).await?;
    wait_for_event(&env, "rbac", "Created").await?; // events create
    // patch (finalizer removal):
    delete_and_wait_gone(&env, "rbac").await?;
    assert_eq!(driver.server_count(), 0);
    Ok(())
}
