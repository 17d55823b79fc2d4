//! The controller with a FakeDriver the test holds: lifecycle, usage refresh, fault
//! injection, and a kill in the middle of a creation.

use std::sync::Arc;
use std::time::Duration;

use apis::cloudnative::v1alpha1::{ResourceUsage, VirtualMachinePhase};
use futures::StreamExt;
use kube::api::{WatchEvent, WatchParams};
use vm_controller::{ANNOTATION_RESOURCES, FINALIZER, server_name};
use vm_driver::{FakeDriver, Operation};

use super::*;

const USAGE_PERIOD: Duration = Duration::from_secs(1);

#[tokio::test]
async fn a_vm_becomes_active_with_finalizer_and_usage_and_delete_cleans_up() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("vmc-fake").await?;
    install_crds(env.client()).await?;
    let driver = Arc::new(FakeDriver::new());
    let _controller = RunningController::start(
        env.client().clone(),
        env.namespace(),
        driver.clone(),
        USAGE_PERIOD,
    );

    create_vm(&env, "web", "1", "64Mi", "1Gi").await?;
    let vm = wait_for_vm(&env, "web", "web Active", is_active).await?;

    assert!(
        vm_controller::has_finalizer(&vm),
        "{:?}",
        vm.metadata.finalizers
    );
    assert!(
        vm.metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key(ANNOTATION_RESOURCES)
    );
    let name = server_name(&vm)?;
    let server = driver.server(&name).expect("the driver has the server");
    let status = vm.status.clone().unwrap();
    assert_eq!(status.server.as_ref().unwrap().id, server.id.as_str());
    assert_eq!(status.server.as_ref().unwrap().state, "Running");
    assert!(status.last_update_time.is_some());
    assert_eq!((server.spec.cpus, server.spec.memory_bytes), (1, 64 << 20));
    wait_for_event(&env, "web", "Created").await?;

    // Usage is refreshed every usage period, with no event to trigger it.
    driver.set_usage(&name, 12.5, 40.0);
    wait_for_vm(&env, "web", "usage 12.5/40 in the status", |vm| {
        vm.status
            .as_ref()
            .and_then(|s| s.server.as_ref())
            .map(|s| &s.usage)
            == Some(&ResourceUsage {
                cpu: 12.5,
                memory: 40.0,
            })
    })
    .await?;

    delete_and_wait_gone(&env, "web").await?;
    assert_eq!(driver.server_count(), 0, "the server went with the object");
    assert_eq!(driver.servers_deleted(), 1);
    assert_eq!(driver.servers_created(), 1);
    Ok(())
}

#[tokio::test]
async fn a_failing_driver_makes_the_vm_failed_then_active_when_it_heals() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("vmc-fail").await?;
    install_crds(env.client()).await?;
    let driver = Arc::new(FakeDriver::new());
    driver.fail_next(Operation::Create, 3);

    // Watch from before the creation, so every status write is seen in order.
    let api = vms(&env);
    let created = create_vm(&env, "flaky", "1", "64Mi", "1Gi").await?;
    let rv = created.metadata.resource_version.clone().unwrap();
    let mut watch = api
        .watch(&WatchParams::default().fields("metadata.name=flaky"), &rv)
        .await?
        .boxed();
    let _controller = RunningController::start(
        env.client().clone(),
        env.namespace(),
        driver.clone(),
        USAGE_PERIOD,
    );

    let mut phases = Vec::new();
    let mut failed_reason = None;
    tokio::time::timeout(TIMEOUT, async {
        while let Some(event) = watch.next().await {
            if let WatchEvent::Modified(vm) = event? {
                let Some(status) = vm.status else { continue };
                if phases.last() != Some(&status.phase) {
                    phases.push(status.phase);
                }
                if status.phase == VirtualMachinePhase::Failed {
                    failed_reason = status.reason.clone();
                }
                if status.phase == VirtualMachinePhase::Active {
                    return Ok::<_, anyhow::Error>(());
                }
            }
        }
        anyhow::bail!("watch ended early; phases {phases:?}")
    })
    .await
    .map_err(|_| anyhow::anyhow!("no Active within {TIMEOUT:?}"))??;

    assert_eq!(
        phases,
        [
            VirtualMachinePhase::Creating,
            VirtualMachinePhase::Failed,
            VirtualMachinePhase::Active
        ]
    );
    let reason = failed_reason.unwrap();
    assert!(reason.starts_with("CreateFailed: "), "{reason}");
    assert!(reason.contains("injected fault"), "{reason}");
    wait_for_event(&env, "flaky", "CreateFailed").await?;
    let active = wait_for_vm(&env, "flaky", "Active, reason cleared", is_active).await?;
    assert_eq!(active.status.unwrap().reason, None);
    assert_eq!(
        driver.calls(Operation::Create),
        4,
        "3 failures, then success"
    );
    assert_eq!(driver.servers_created(), 1);

    delete_and_wait_gone(&env, "flaky").await?;
    assert_eq!(driver.server_count(), 0);
    Ok(())
}

#[tokio::test]
async fn a_controller_killed_mid_creation_and_restarted_makes_exactly_one_server()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("vmc-kill").await?;
    install_crds(env.client()).await?;
    let driver = Arc::new(FakeDriver::new());
    // Every driver call takes 3 s: the create completes, then the controller is killed
    // while it waits for the server's status, before it can write Active.
    driver.set_latency(Duration::from_secs(3));
    let first = RunningController::start(
        env.client().clone(),
        env.namespace(),
        driver.clone(),
        USAGE_PERIOD,
    );
    create_vm(&env, "crashy", "1", "64Mi", "1Gi").await?;

    // Poll (not sleep-and-hope) for the moment the server exists.
    tokio::time::timeout(TIMEOUT, async {
        while driver.server_count() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("the driver never created the server"))?;
    first.kill().await;

    let vm = vms(&env).get("crashy").await?;
    let status = vm.status.clone().unwrap();
    assert_eq!(
        status.phase,
        VirtualMachinePhase::Creating,
        "killed before Active was written"
    );
    assert!(status.server.is_none());
    assert!(
        vm.metadata
            .finalizers
            .unwrap()
            .contains(&FINALIZER.to_string())
    );
    assert_eq!(driver.servers_created(), 1);

    // A new controller instance, same driver (the cloud outlives the controller).
    driver.set_latency(Duration::ZERO);
    let _second = RunningController::start(
        env.client().clone(),
        env.namespace(),
        driver.clone(),
        USAGE_PERIOD,
    );
    let vm = wait_for_vm(&env, "crashy", "crashy Active", is_active).await?;
    assert_eq!(vm.status.unwrap().server.unwrap().id, "fake-1");
    assert_eq!(driver.servers_created(), 1, "exactly one server");
    assert_eq!(driver.server_count(), 1);

    delete_and_wait_gone(&env, "crashy").await?;
    assert_eq!(driver.server_count(), 0);
    Ok(())
}
