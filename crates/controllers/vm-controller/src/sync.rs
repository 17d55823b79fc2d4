//! The VirtualMachine controller's `syncHandler`: converge one VirtualMachine with its
//! server.
//!
//! ```text
//!             (new object)
//!                  │ 5. finalizer + resources annotation (metadata patch)
//!                  ▼ 5. status Creating
//!              Creating ──5. create_server fails──▶ Failed ──retry with backoff──┐
//!                  │ 5. create_server (idempotent)     ▲                           │
//!                  ▼ 6. server_status                  └──────still failing────────┤
//!               Active ◀──────────────create succeeds───────────────────────────────┘
//!          ▲   │  4. every --usage-period: server_status -> usage, lastUpdateTime
//!          │   ├─ server_status fails ─▶ Unknown ─(driver back)─▶ Active
//!          │   └─ server gone ─▶ Creating (ServerVanished) ─▶ created again
//!     (delete) 2. deletionTimestamp set, at any phase:
//!               Terminating ── delete_server ── remove finalizer ──▶ object gone
//! ```
//!
//! (The numbers are those of the steps below.)
//!
//! One sync, step by step:
//!
//! 1. Read the VirtualMachine from the lister (the informer's cache). Gone? Nothing to
//!    do: a VirtualMachine with our finalizer cannot disappear before step 2 has
//!    removed it, after deleting the server.
//! 2. `deletionTimestamp` set -> finalize: status `Terminating`, `delete_server`
//!    (idempotent), remove the finalizer, done. Without our finalizer there is
//!    nothing to clean: it is added (step 5) before any server exists.
//! 3. Work out the server name ([`server_name`]) and [`ServerSpec`]. A spec that can
//!    never work is permanent: status `Failed`, Warning Event, no retry.
//! 4. A server that is already `Active` (or `Unknown`) is *observed*: usage and state
//!    into the status, then `RequeueAfter(--usage-period)`; a spec that no longer
//!    matches the created size is reported as `ResizeUnsupported` (see
//!    [`server`](crate::server)).
//! 5. Otherwise it is *created*: first the finalizer (and the size annotation) with a
//!    metadata patch, then status `Creating` (for a new object), then `create_server`.
//!    The driver's create is idempotent - a server of that name is returned, not made
//!    twice - so a crash anywhere in between (even after the driver created the server
//!    but before the status said so) is healed by simply running this again.
//! 6. `server_status`, then status `Active` with the server's id, state and usage, a
//!    Normal `Created` Event, and `RequeueAfter(--usage-period)`.
//!
//! A driver failure is written into the status (`Failed`, or `Unknown` for an existing
//! server that cannot be observed) with the reason, reported as a Warning Event, and
//! returned as an error, so the loop retries the key with exponential backoff; the
//! first sync after the driver recovers moves the VirtualMachine back to `Active`.
//! Where this differs from controller101 on purpose, the comment starts with "Better:".

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use apis::cloudnative::v1alpha1::{ServerStatus, VirtualMachine, VirtualMachinePhase};
use cache::{Lister, split_meta_namespace_key};
use controller::{Action, Freshness, SyncHandler};
use k8s_openapi::jiff::Timestamp;
use record::{EventRecorder, EventType};
use tracing::{info, warn};
use vm_driver::{Driver, DriverError, ServerId, ServerSpec};

use crate::error::{Error, Result};
use crate::finalizer::has_finalizer;
use crate::server::{recorded_matches_spec, recorded_resources, server_name, server_spec};
use crate::status::{new_status, server_status};

/// The field manager our writes are recorded under in `managedFields`.
pub const FIELD_MANAGER: &str = "vm-controller";
/// Default `--usage-period`: how often an `Active` VirtualMachine's usage is refreshed.
pub const DEFAULT_USAGE_PERIOD: Duration = Duration::from_secs(20);

/// Normal Event: the server was created (or found) and is `Active`.
pub const REASON_CREATED: &str = "Created";
/// Normal Event: the server was deleted and the finalizer removed.
pub const REASON_DELETED: &str = "Deleted";
/// Warning Event and status reason: `create_server` (or the first status read) failed.
pub const REASON_CREATE_FAILED: &str = "CreateFailed";
/// Warning Event and status reason: `delete_server` failed; retried.
pub const REASON_DELETE_FAILED: &str = "DeleteFailed";
/// Warning Event and status reason: an existing server could not be observed.
pub const REASON_STATUS_FAILED: &str = "StatusFailed";
/// Warning Event and status reason: `spec.resource` can never be created.
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";
/// Warning Event and status reason: `spec.resource` changed after creation.
pub const REASON_RESIZE_UNSUPPORTED: &str = "ResizeUnsupported";
/// Warning Event and status reason: an `Active` server disappeared; it is recreated.
pub const REASON_SERVER_VANISHED: &str = "ServerVanished";

/// Where [`VirtualMachineSyncer`] gets the time for `lastUpdateTime` (swap it in tests).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// What [`VirtualMachineSyncer::sync_vm`] reads and writes with: the VirtualMachine
/// lister, a client for writes, the driver, the event recorder, the usage period.
#[derive(Clone)]
pub struct VirtualMachineSyncer {
    pub(crate) client: kube::Client,
    pub(crate) vms: Lister<VirtualMachine>,
    pub(crate) driver: Arc<dyn Driver>,
    pub(crate) recorder: EventRecorder,
    pub(crate) usage_period: Duration,
    pub(crate) clock: Clock,
    pub(crate) freshness: Option<Freshness>,
}

impl fmt::Debug for VirtualMachineSyncer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualMachineSyncer")
            .field("usage_period", &self.usage_period)
            .finish_non_exhaustive()
    }
}

impl VirtualMachineSyncer {
    /// A syncer reading from `vms`, writing with `client`, driving `driver`, with the
    /// [`DEFAULT_USAGE_PERIOD`] and the system clock.
    pub fn new(
        client: kube::Client,
        vms: Lister<VirtualMachine>,
        driver: Arc<dyn Driver>,
        recorder: EventRecorder,
    ) -> Self {
        Self {
            client,
            vms,
            driver,
            recorder,
            usage_period: DEFAULT_USAGE_PERIOD,
            clock: Arc::new(Timestamp::now),
            freshness: None,
        }
    }

    /// Reports every write to `freshness` (see [`controller::freshness`]); the
    /// [`Controller`](controller::Controller) running this syncer must use the same
    /// guard.
    pub fn with_freshness(mut self, freshness: Option<Freshness>) -> Self {
        self.freshness = freshness;
        self
    }

    /// Tells the staleness guard that this sync wrote the VirtualMachine
    /// `namespace/name` (its key) at `resource_version` (and the pipeline view).
    pub(crate) fn wrote(&self, namespace: &str, name: &str, resource_version: Option<&str>) {
        controller::record_write_version::<VirtualMachine>(namespace, name, resource_version);
        if let (Some(freshness), Some(rv)) = (&self.freshness, resource_version) {
            freshness.wrote_version::<VirtualMachine>(&format!("{namespace}/{name}"), rv);
        }
    }

    /// Refresh the usage of `Active` VirtualMachines this often.
    pub fn with_usage_period(mut self, usage_period: Duration) -> Self {
        self.usage_period = usage_period;
        self
    }

    /// Use `clock` for `lastUpdateTime` (tests).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The usage refresh period.
    pub fn usage_period(&self) -> Duration {
        self.usage_period
    }

    /// Converges the VirtualMachine named by `key` (`namespace/name`). See the
    /// [module docs](self).
    pub async fn sync_vm(&self, key: &str) -> Result<Action> {
        let (namespace, name) = split_meta_namespace_key(key).map_err(Error::Key)?;

        // 1. The VirtualMachine, from the cache. We modify a copy, never the cached
        //    object other readers share.
        let vm = match self.vms.get(namespace, name) {
            Ok(vm) => (*vm).clone(),
            Err(err) if err.is_not_found() => {
                info!(key, "VirtualMachine in work queue no longer exists");
                return Ok(Action::Done);
            }
            Err(err) => return Err(Error::Key(err)),
        };

        // 2. Being deleted. Better: controller101 deletes the server from the informer's
        //    delete handler, which runs once, is lost on a crash, and cannot retry.
        if vm.metadata.deletion_timestamp.is_some() {
            return self.finalize(vm).await;
        }

        // 3. Name and size. These fail only for objects that can never work as they
        //    are: report, do not retry (the user's edit enqueues the object again).
        let spec = match server_name(&vm).and_then(|name| server_spec(&vm, &name)) {
            Ok(spec) => spec,
            Err(err) => return self.permanent(vm, err).await,
        };

        // 4. An existing server: observe it.
        let phase = vm.status.as_ref().map(|s| s.phase);
        let server = vm.status.as_ref().and_then(|s| s.server.clone());
        if let Some(server) = server
            && matches!(
                phase,
                Some(VirtualMachinePhase::Active | VirtualMachinePhase::Unknown)
            )
        {
            return self.observe(vm, &spec, server).await;
        }

        // 5. Create. The finalizer first: from now on a delete waits for us.
        let mut vm = self.ensure_metadata(vm, true).await?;
        if vm.status.is_none() {
            vm = self
                .update_status(
                    vm,
                    new_status(VirtualMachinePhase::Creating, None, None),
                    false,
                )
                .await?;
        }
        // Better: controller101 asks `IsServerExist` and then creates, a check-then-act
        // race; create is idempotent, so we just create.
        let id = match self.driver.create_server(&spec).await {
            Ok(id) => id,
            Err(source) => {
                let err = driver_error("create_server", &spec, source);
                return self
                    .fail(vm, VirtualMachinePhase::Failed, REASON_CREATE_FAILED, err)
                    .await;
            }
        };

        // 6. Observe it and say Active.
        let observed = match self.driver.server_status(&spec.name).await {
            Ok(observed) => observed,
            Err(source) => {
                let err = driver_error("server_status", &spec, source);
                return self
                    .fail(vm, VirtualMachinePhase::Failed, REASON_CREATE_FAILED, err)
                    .await;
            }
        };
        let active = new_status(
            VirtualMachinePhase::Active,
            None,
            Some(server_status(&id, &observed)),
        );
        let vm = self.update_status(vm, active, false).await?;
        info!(key, server = %spec.name, %id, "server is active");
        self.recorder.event(
            &vm,
            EventType::Normal,
            REASON_CREATED,
            format!("Server {} is active (id {id})", spec.name),
        );
        Ok(self.usage_refresh())
    }

    /// Step 4: refresh an existing server's state and usage.
    async fn observe(
        &self,
        vm: VirtualMachine,
        spec: &ServerSpec,
        server: ServerStatus,
    ) -> Result<Action> {
        // Someone may have removed the finalizer by hand; put it back (the size
        // annotation is frozen now: it records what the server was created with).
        let vm = self.ensure_metadata(vm, false).await?;
        let observed = match self.driver.server_status(&spec.name).await {
            Ok(observed) => observed,
            Err(source) if source.is_not_found() => {
                // Gone behind our back (deleted out of band, a fake driver restarted).
                // Back to Creating: the next sync (the status update's event) makes it
                // again, with the same name.
                let message = format!("server {} no longer exists; creating it again", spec.name);
                warn!(server = %spec.name, "{message}");
                self.recorder
                    .event(&vm, EventType::Warning, REASON_SERVER_VANISHED, &message);
                let creating = new_status(
                    VirtualMachinePhase::Creating,
                    Some(format!("{REASON_SERVER_VANISHED}: {message}")),
                    None,
                );
                self.update_status(vm, creating, false).await?;
                return Ok(Action::Done);
            }
            Err(source) => {
                let err = driver_error("server_status", spec, source);
                return self
                    .fail(vm, VirtualMachinePhase::Unknown, REASON_STATUS_FAILED, err)
                    .await;
            }
        };

        // Resizing is not supported: say so, keep the server as it is.
        let reason = match (recorded_matches_spec(&vm), recorded_resources(&vm)) {
            (Some(false), Some(created)) => Some(format!(
                "{REASON_RESIZE_UNSUPPORTED}: the server was created with cpu {}, memory {}, rootDisk {}; \
                 resizing is not supported, delete and re-create the VirtualMachine to resize",
                created.cpu.0, created.memory.0, created.root_disk.0
            )),
            _ => None,
        };
        let current_reason = vm.status.as_ref().and_then(|s| s.reason.clone());
        if let Some(reason) = &reason
            && current_reason.as_ref() != Some(reason)
        {
            self.recorder
                .event(&vm, EventType::Warning, REASON_RESIZE_UNSUPPORTED, reason);
        }

        let id = ServerId(server.id);
        let active = new_status(
            VirtualMachinePhase::Active,
            reason,
            Some(server_status(&id, &observed)),
        );
        self.update_status(vm, active, true).await?;
        // Better: controller101 waits for the informer's resync to come round; a
        // requeue is exact, per object, and independent of --resync-period.
        Ok(self.usage_refresh())
    }

    /// The next usage refresh: after --usage-period, at low priority (controller-
    /// runtime's `Result.Priority`), so that with many VMs the periodic refreshes
    /// never delay a user's change; the queue's starvation bound still gets every
    /// refresh through.
    fn usage_refresh(&self) -> Action {
        Action::requeue_after(self.usage_period).with_priority(workqueue::priority::LOW)
    }

    /// Step 2: the object is being deleted.
    async fn finalize(&self, vm: VirtualMachine) -> Result<Action> {
        if !has_finalizer(&vm) {
            // Never created a server (the finalizer comes first), or already cleaned.
            return Ok(Action::Done);
        }
        let name = server_name(&vm)?;
        let server = vm.status.as_ref().and_then(|s| s.server.clone());
        let vm = self
            .update_status(
                vm,
                new_status(VirtualMachinePhase::Terminating, None, server.clone()),
                false,
            )
            .await?;
        if let Err(source) = self.driver.delete_server(&name).await {
            let err = Error::Driver {
                operation: "delete_server",
                server: name,
                source: Box::new(source),
            };
            return self
                .fail(
                    vm,
                    VirtualMachinePhase::Terminating,
                    REASON_DELETE_FAILED,
                    err,
                )
                .await;
        }
        // Only now may the object go.
        self.recorder.event(
            &vm,
            EventType::Normal,
            REASON_DELETED,
            format!("Server {name} deleted"),
        );
        self.remove_finalizer(vm).await?;
        info!(server = %name, "server deleted; finalizer removed");
        Ok(Action::Done)
    }

    /// A transient failure: Warning Event, the phase and reason into the status (the
    /// server, if any, kept), and the error returned for a retry with backoff. A
    /// driver error that can never succeed ([`Error::is_permanent`]) is reported the
    /// same way but not retried.
    async fn fail(
        &self,
        vm: VirtualMachine,
        phase: VirtualMachinePhase,
        reason: &str,
        err: Error,
    ) -> Result<Action> {
        warn!(vm = ?vm.metadata.name, error = %err, "{reason}");
        self.recorder
            .event(&vm, EventType::Warning, reason, err.to_string());
        let server = vm.status.as_ref().and_then(|s| s.server.clone());
        let status = new_status(phase, Some(format!("{reason}: {err}")), server);
        // Better: controller101 leaves a failed VirtualMachine in Failed for good; we
        // report, then retry until the driver recovers.
        let recorded = self.update_status(vm, status, false).await;
        match recorded {
            // Reported for good; the user's edit brings the object back.
            Ok(_) if err.is_permanent() => Ok(Action::Done),
            // Not even reported: retry, so that the status says it eventually.
            Err(status_err) if err.is_permanent() => Err(status_err),
            Err(status_err) => {
                warn!(error = %status_err, "could not record the failure in the status");
                Err(err)
            }
            Ok(_) => Err(err),
        }
    }

    /// A problem with the object itself: `Failed` with the reason, a Warning Event, no
    /// retry.
    async fn permanent(&self, vm: VirtualMachine, err: Error) -> Result<Action> {
        self.fail(vm, VirtualMachinePhase::Failed, REASON_INVALID_SPEC, err)
            .await
    }
}

fn driver_error(operation: &'static str, spec: &ServerSpec, source: DriverError) -> Error {
    Error::Driver {
        operation,
        server: spec.name.clone(),
        source: Box::new(source),
    }
}

impl SyncHandler for VirtualMachineSyncer {
    type Error = Error;

    async fn sync(&self, key: &str) -> Result<Action> {
        self.sync_vm(key).await
    }
}
