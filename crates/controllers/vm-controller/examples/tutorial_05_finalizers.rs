//! Tutorial chapter 5, finalizers and status: the VirtualMachine controller with the
//! fake driver (docs/tutorial/05-finalizers-and-status.md).
//!
//! The VirtualMachine controller owns something Kubernetes cannot see: a server behind
//! a driver, here the in-memory [`FakeDriver`]. The example runs the controller in a
//! namespace of its own and follows one VirtualMachine with a watch: the finalizer
//! goes on before the server is made, the status reports the phase (`Creating`, then
//! `Active` with the server), the usage is refreshed by a requeue, and a deletion
//! waits on the finalizer, phase `Terminating`, for as long as the driver cannot
//! delete the server; once it can, the finalizer comes off and the object goes.
//!
//! Mirrors cloud-native-taiwan/controller101 (`controller.go`: `New`, `Run`,
//! `syncHandler`, the finalizer and status updates; `pkg/driver`: the fake driver),
//! with its mistakes fixed (see crates/controllers/vm-controller/src/sync.rs, "Better:").
//!
//! ```sh
//! eval "$(bash hack/control-plane.sh up | grep '^export')"
//! cargo run -p vm-controller --example tutorial_05_finalizers
//! ```

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
use cache::SharedInformerFactory;
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use record::{BroadcasterOptions, EventBroadcaster};
use testenv::tutorial::{Example, Log};
use tokio_util::sync::CancellationToken;
use vm_controller::{CONTROLLER_NAME, FINALIZER, VirtualMachineControllerOptions, server_name};
use vm_driver::{FakeDriver, Operation};

/// How long any one wait may take before the example gives up.
const TIMEOUT: Duration = Duration::from_secs(60);

/// How often the controller refreshes an `Active` VirtualMachine's usage
/// (`--usage-period`; 20 s by default).
const USAGE_PERIOD: Duration = Duration::from_secs(1);

/// Polls `check` every 100 ms until it returns `Some`, for at most [`TIMEOUT`].
async fn wait_until<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("timed out after {TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What one version of the VirtualMachine shows: its finalizer, deletion, phase,
/// reason and server. The server's name (`<name>-<uid>`) is printed as `<server>`.
fn describe(vm: &VirtualMachine, server: &str) -> String {
    let mut parts = Vec::new();
    if vm.metadata.deletion_timestamp.is_some() {
        parts.push("deletionTimestamp set".to_string());
    }
    let finalizers = vm.metadata.finalizers.clone().unwrap_or_default();
    parts.push(format!("finalizers [{}]", finalizers.join(", ")));
    match &vm.status {
        None => parts.push("no status".to_string()),
        Some(status) => {
            parts.push(format!("phase {:?}", status.phase));
            if let Some(s) = &status.server {
                parts.push(format!("server {} {}", s.id, s.state));
            }
            if let Some(reason) = &status.reason {
                parts.push(format!("reason {:?}", reason.replace(server, "<server>")));
            }
        }
    }
    parts.join(", ")
}

/// A watch on the VirtualMachine, printing every change it delivers.
struct Trace {
    watch: BoxStream<'static, kube::Result<WatchEvent<VirtualMachine>>>,
    /// The server's name, printed as `<server>`.
    server: String,
    /// The last line printed: a version that looks the same is not printed again
    /// (the usage refresh writes the status every period).
    last: String,
}

impl Trace {
    /// Prints what the watch delivers, as [`describe`]d, until `done` holds for a
    /// version.
    async fn until(&mut self, log: &mut Log, done: impl Fn(&VirtualMachine) -> bool) -> Result<()> {
        let step = async {
            while let Some(event) = self.watch.next().await {
                match event.context("watching the VirtualMachine")? {
                    WatchEvent::Added(vm) | WatchEvent::Modified(vm) => {
                        let now = describe(&vm, &self.server);
                        if now != self.last {
                            log.say(format!("  watch: {now}"));
                            self.last = now;
                        }
                        if done(&vm) {
                            return Ok(());
                        }
                    }
                    WatchEvent::Deleted(_) => bail!("deleted before the state waited for"),
                    WatchEvent::Bookmark(_) => {}
                    WatchEvent::Error(e) => bail!("the watch failed: {e}"),
                }
            }
            bail!("the watch ended early")
        };
        tokio::time::timeout(TIMEOUT, step)
            .await
            .with_context(|| format!("nothing more within {TIMEOUT:?}"))?
    }
}

/// Waits for an Event of `reason` about the VirtualMachine `name` and returns
/// `Event <type> <reason>: <message>` (the server's name shown as `<server>`).
async fn wait_for_event(
    events: &Api<Event>,
    name: &str,
    reason: &str,
    server: &str,
) -> Result<String> {
    let selector =
        format!("involvedObject.kind=VirtualMachine,involvedObject.name={name},reason={reason}");
    wait_until(&format!("a {reason} Event about {name}"), || async {
        let found = events
            .list(&ListParams::default().fields(&selector))
            .await
            .context("listing Events")?;
        Ok(found.items.first().map(|e| {
            format!(
                "Event {} {}: {}",
                e.type_.as_deref().unwrap_or_default(),
                e.reason.as_deref().unwrap_or_default(),
                e.message.as_deref().unwrap_or_default()
            )
            .replace(server, "<server>")
        }))
    })
    .await
}

/// The example, in `namespace` (the CRDs must be installed); returns what it printed.
pub async fn run(client: Client, namespace: &str) -> Result<String> {
    let mut log = Log::default();
    let vms: Api<VirtualMachine> = Api::namespaced(client.clone(), namespace);
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);

    log.say("1. the controller, with the fake driver");
    let driver = Arc::new(FakeDriver::new());
    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    let broadcaster = EventBroadcaster::new(BroadcasterOptions::default());
    broadcaster
        .start_recording_to_sink(client.clone())
        .context("starting the Event broadcaster")?;
    let recorder = broadcaster.new_recorder(CONTROLLER_NAME, "tutorial");
    let options = VirtualMachineControllerOptions {
        usage_period: USAGE_PERIOD,
        namespace: Some(namespace.to_string()),
        ..VirtualMachineControllerOptions::default()
    };
    // controller101's New: the informer, its handler, the queue and the syncer; the
    // driver is the one thing it talks to besides the API server.
    let controller =
        vm_controller::new_controller(client.clone(), &factory, recorder, driver.clone(), options);
    let stop = CancellationToken::new();
    let _stop_on_return = stop.clone().drop_guard();
    factory.start(&stop);
    let running = tokio::spawn({
        let (controller, stop) = (controller.clone(), stop.clone());
        async move { controller.run(2, stop).await }
    });
    wait_until("the controller's informer to sync", || async {
        Ok(controller.has_synced().then_some(()))
    })
    .await?;
    log.say(format!(
        "  synced; the driver has {} servers; usage refreshed every {USAGE_PERIOD:?}",
        driver.server_count()
    ));

    log.say("");
    log.say("2. a VirtualMachine: the finalizer first, then the server, then the status");
    let vm = VirtualMachine::new(
        "web",
        VirtualMachineSpec {
            resource: VirtualMachineResource::new("1", "64Mi", "1Gi"),
        },
    );
    let created = vms
        .create(&PostParams::default(), &vm)
        .await
        .context("creating VirtualMachine web")?;
    let server = server_name(&created).context("the server's name")?;
    log.say("  created VirtualMachine web: cpu 1, memory 64Mi, rootDisk 1Gi");
    // Watch from the version we created, so every write after it is seen in order.
    let version = created
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let watch = vms
        .watch(
            &WatchParams::default().fields("metadata.name=web"),
            &version,
        )
        .await
        .context("watching VirtualMachine web")?
        .boxed();
    let mut trace = Trace {
        watch,
        server: server.clone(),
        last: String::new(),
    };
    let active = |vm: &VirtualMachine| vm.status.as_ref().is_some_and(|s| s.server.is_some());
    trace.until(&mut log, active).await?;
    let fake = driver.server(&server).context("the driver has no server")?;
    log.say(format!(
        "  the driver: server {} ({} CPU, {} MiB), named <name>-<uid>: <server>",
        fake.id,
        fake.spec.cpus,
        fake.spec.memory_bytes >> 20
    ));
    log.say(format!(
        "  {}",
        wait_for_event(&events, "web", vm_controller::REASON_CREATED, &server).await?
    ));

    log.say("");
    log.say("3. usage: refreshed by a requeue every usage period, no event needed");
    driver.set_usage(&server, 12.5, 40.0);
    log.say("  the driver now reports cpu 12.5%, memory 40%");
    let usage = wait_until("the usage in the status", || async {
        let vm = vms.get("web").await?;
        let usage = vm
            .status
            .and_then(|s| s.server)
            .map(|s| s.usage)
            .filter(|u| u.cpu == 12.5);
        Ok(usage)
    })
    .await?;
    log.say(format!(
        "  status.server.usage: cpu {}, memory {}",
        usage.cpu, usage.memory
    ));

    log.say("");
    log.say("4. deletion waits on the finalizer until the server is gone");
    driver.fail_next(Operation::Delete, u32::MAX);
    log.say("  the driver fails every delete_server from now on");
    vms.delete("web", &DeleteParams::default())
        .await
        .context("deleting VirtualMachine web")?;
    log.say(format!(
        "  deleted VirtualMachine web (it carries {FINALIZER})"
    ));
    let delete_failed = |vm: &VirtualMachine| {
        vm.status
            .as_ref()
            .and_then(|s| s.reason.as_deref())
            .is_some_and(|r| r.starts_with(vm_controller::REASON_DELETE_FAILED))
    };
    trace.until(&mut log, delete_failed).await?;
    let still = vms.get_opt("web").await?.is_some();
    log.say(format!(
        "  VirtualMachine web still exists: {still}; the driver still has the server: {}",
        driver.server(&server).is_some()
    ));
    driver.clear_faults();
    log.say(
        "  the driver works again (clear_faults); the controller's next retry deletes the server",
    );
    // (Not the watch: while the driver failed, every retry wrote `Terminating` and
    // then the failure again, a number of times that depends on timing.)
    wait_until("VirtualMachine web to go", || async {
        Ok(vms.get_opt("web").await?.is_none().then_some(()))
    })
    .await?;
    log.say("  VirtualMachine web: gone (the finalizer was removed after delete_server)");
    log.say(format!(
        "  the driver: {} servers (created {}, deleted {})",
        driver.server_count(),
        driver.servers_created(),
        driver.servers_deleted()
    ));
    log.say(format!(
        "  {}",
        wait_for_event(&events, "web", vm_controller::REASON_DELETED, &server).await?
    ));

    stop.cancel();
    running
        .await
        .context("the controller task")?
        .context("running the controller")?;
    broadcaster.shutdown(Duration::from_secs(5)).await;
    Ok(log.text())
}

/// Installs the CRDs, then runs the example in a namespace of its own, deleted at the
/// end whatever happened (`testenv::tutorial::main`).
#[tokio::main]
async fn main() -> ExitCode {
    testenv::tutorial::main(
        "tutorial-05",
        &apis::crds(),
        |example: Example| async move { run(example.client, &example.namespace).await },
    )
    .await
}
