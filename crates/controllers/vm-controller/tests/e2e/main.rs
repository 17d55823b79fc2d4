//! The VirtualMachine controller end to end on the real control plane (etcd +
//! kube-apiserver + kube-controller-manager, from crates/dev/testenv).
//!
//! Each test gets its own namespace and runs its own controller in-process (a tokio
//! task) watching only that namespace, with a driver the test holds: a `FakeDriver` to
//! count servers and inject faults, or a `QemuDriver` on a temporary state directory.

mod conversion;
mod fake;
mod qemu;
mod rbac;
mod tutorial;
mod webhook;

#[allow(dead_code)] // `main` and its namespace helpers serve `cargo run` only
#[path = "../../examples/tutorial_05_finalizers.rs"]
mod tutorial_05;

#[allow(dead_code)] // `main` and its namespace helpers serve `cargo run` only
#[path = "../../examples/tutorial_08_webhooks.rs"]
mod tutorial_08;

use std::sync::Arc;
use std::time::Duration;

use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
use cache::SharedInformerFactory;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, DeleteParams, PostParams};
use record::{BroadcasterOptions, EventBroadcaster};
use testenv::{Check, TestEnv, wait_for};
use tokio_util::sync::CancellationToken;
use vm_controller::{CONTROLLER_NAME, VirtualMachineControllerOptions};
use vm_driver::Driver;

pub use conversion::install_crds;

/// Generous: a loaded 2-core CI machine runs several test binaries at once.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// A VirtualMachine controller running in the background until stopped, killed or
/// dropped.
pub struct RunningController {
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningController {
    /// Starts the informer, the event broadcaster and the controller for `namespace`,
    /// talking to the API server as `client` and creating servers with `driver`.
    pub fn start(
        client: kube::Client,
        namespace: &str,
        driver: Arc<dyn Driver>,
        usage_period: Duration,
    ) -> Self {
        let cancel = CancellationToken::new();
        let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
        let events = EventBroadcaster::new(BroadcasterOptions::default());
        events
            .start_recording_to_sink(client.clone())
            .expect("start the event broadcaster");
        let recorder = events.new_recorder(CONTROLLER_NAME, "e2e");
        let options = VirtualMachineControllerOptions {
            usage_period,
            namespace: Some(namespace.to_string()),
            ..Default::default()
        };
        let controller = vm_controller::new_controller(client, &factory, recorder, driver, options);
        factory.start(&cancel);
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                controller.run(2, cancel).await.expect("controller run");
                events.shutdown(Duration::from_secs(5)).await;
            }
        });
        Self {
            cancel,
            task: Some(task),
        }
    }

    /// Kills the controller: its workers stop wherever they are (mid-sync, mid-driver
    /// call), without draining - what a SIGKILL or an OOM kill does to a process.
    pub async fn kill(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        self.cancel.cancel(); // the informer tasks
    }
}

impl Drop for RunningController {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The VirtualMachine API of the test's namespace.
pub fn vms(env: &TestEnv) -> Api<VirtualMachine> {
    Api::namespaced(env.client().clone(), env.namespace())
}

/// Creates a VirtualMachine of `cpu`, `memory`, `root_disk`.
pub async fn create_vm(
    env: &TestEnv,
    name: &str,
    cpu: &str,
    memory: &str,
    root_disk: &str,
) -> anyhow::Result<VirtualMachine> {
    let vm = VirtualMachine::new(
        name,
        VirtualMachineSpec {
            resource: VirtualMachineResource::new(cpu, memory, root_disk),
        },
    );
    Ok(vms(env).create(&PostParams::default(), &vm).await?)
}

/// Waits until the VirtualMachine `name` exists and `check` holds for it.
pub async fn wait_for_vm(
    env: &TestEnv,
    name: &str,
    what: &str,
    check: impl Fn(&VirtualMachine) -> bool,
) -> anyhow::Result<VirtualMachine> {
    let seen = |vm: &VirtualMachine| {
        format!(
            "status={:?} finalizers={:?}",
            vm.status, vm.metadata.finalizers
        )
    };
    Ok(testenv::wait_for_object(&vms(env), name, what, TIMEOUT, check, seen).await?)
}

/// Whether `vm` is Active with a server.
pub fn is_active(vm: &VirtualMachine) -> bool {
    vm.status.as_ref().is_some_and(|s| {
        s.phase == apis::cloudnative::v1alpha1::VirtualMachinePhase::Active && s.server.is_some()
    })
}

/// Deletes the VirtualMachine `name` and waits until the object is gone (which needs
/// the controller to remove its finalizer).
pub async fn delete_and_wait_gone(env: &TestEnv, name: &str) -> anyhow::Result<()> {
    let api = vms(env);
    api.delete(name, &DeleteParams::default()).await?;
    wait_for(&format!("VirtualMachine {name} gone"), TIMEOUT, || async {
        let vm = api.get_opt(name).await?;
        let seen = format!("{:?}", vm.as_ref().map(|vm| &vm.status));
        Ok::<_, kube::Error>(Check::ready_if(vm.is_none(), (), seen))
    })
    .await?;
    Ok(())
}

/// Waits for an Event with `reason` about the VirtualMachine `name`, and returns it.
pub async fn wait_for_event(env: &TestEnv, name: &str, reason: &str) -> anyhow::Result<Event> {
    let (client, ns) = (env.client(), env.namespace());
    Ok(testenv::wait_for_event(client, ns, "VirtualMachine", name, reason, TIMEOUT).await?)
}
