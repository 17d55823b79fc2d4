//! Writing `.status`: through the status subresource, with optimistic concurrency,
//! and only when it says something new.
//!
//! * **Status subresource.** The CRD has `subresources.status`, so `.status` can only
//!   be written with `PUT .../virtualmachines/<name>/status` (`replace_status`), and
//!   that call ignores everything but `.status`. Metadata (the finalizer) is written
//!   separately ([`finalizer`](crate::finalizer)); nothing rides along.
//! * **Optimistic concurrency.** The object sent carries the resourceVersion we read;
//!   if the object changed since, the API server answers 409 Conflict, the sync
//!   returns the error and the key is retried through the queue (by then the informer
//!   has the newer object). Never a retry loop here, never a blind overwrite.
//! * **Only on change.** A status equal to the current one (ignoring
//!   `lastUpdateTime`) is not written, so an event storm costs no writes. The one
//!   exception is the usage refresh: an `Active` status whose `lastUpdateTime` is older
//!   than half the usage period is rewritten with a new timestamp even if the numbers
//!   are the same, so `lastUpdateTime` tells a reader how fresh the usage is.
//!   Better: controller101 refreshes usage when the informer's resync happens to
//!   re-deliver the object, and writes on every sync.

use std::time::Duration;

use apis::cloudnative::v1alpha1::{
    ResourceUsage, ServerStatus, VirtualMachine, VirtualMachinePhase, VirtualMachineStatus,
};
use controller::ApiError;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use tracing::debug;
use vm_driver::ServerId;

use crate::error::Result;
use crate::sync::{FIELD_MANAGER, VirtualMachineSyncer};

/// A status without `lastUpdateTime` (set when written).
pub fn new_status(
    phase: VirtualMachinePhase,
    reason: Option<String>,
    server: Option<ServerStatus>,
) -> VirtualMachineStatus {
    VirtualMachineStatus {
        phase,
        reason,
        server,
        last_update_time: None,
    }
}

/// `.status.server` from the driver's answer, usage rounded to 0.01 %.
pub fn server_status(id: &ServerId, observed: &vm_driver::ServerStatus) -> ServerStatus {
    let round = |x: f64| (x * 100.0).round() / 100.0;
    ServerStatus {
        id: id.to_string(),
        state: observed.state.to_string(),
        usage: ResourceUsage {
            cpu: round(observed.cpu_percent),
            memory: round(observed.memory_percent),
        },
    }
}

/// Whether `desired` differs from `current` in anything but `lastUpdateTime`.
pub fn status_differs(
    current: Option<&VirtualMachineStatus>,
    desired: &VirtualMachineStatus,
) -> bool {
    match current {
        None => true,
        Some(current) => {
            current.phase != desired.phase
                || current.reason != desired.reason
                || current.server != desired.server
        }
    }
}

/// Whether `current` was written longer than `max_age` before `now` (or never).
pub fn is_stale(current: Option<&VirtualMachineStatus>, now: Timestamp, max_age: Duration) -> bool {
    let Some(Time(written)) = current.and_then(|s| s.last_update_time.as_ref()) else {
        return true;
    };
    let age = now.duration_since(*written);
    age.is_negative() || age.unsigned_abs() >= max_age
}

impl VirtualMachineSyncer {
    /// Writes `desired` as `vm`'s status if it differs from the current one (see the
    /// [module docs](self)), or - with `refresh` - if the current one is older than
    /// half the usage period. Returns the object as written (new resourceVersion), or
    /// `vm` itself when nothing was written.
    pub(crate) async fn update_status(
        &self,
        vm: VirtualMachine,
        desired: VirtualMachineStatus,
        refresh: bool,
    ) -> Result<VirtualMachine> {
        let now = (self.clock)();
        let current = vm.status.as_ref();
        let stale = refresh && is_stale(current, now, self.usage_period / 2);
        if !status_differs(current, &desired) && !stale {
            return Ok(vm);
        }
        let namespace = vm.metadata.namespace.clone().unwrap_or_default();
        let name = vm.metadata.name.clone().unwrap_or_default();
        debug!(%namespace, %name, phase = ?desired.phase, reason = ?desired.reason, "updating status");
        let mut updated = vm;
        updated.status = Some(VirtualMachineStatus {
            last_update_time: Some(Time(now)),
            ..desired
        });
        let api: Api<VirtualMachine> = Api::namespaced(self.client.clone(), &namespace);
        let post = PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PostParams::default()
        };
        let written = api
            .replace_status(&name, &post, &updated)
            .await
            .map_err(|source| ApiError::new("update status", &namespace, &name, source))?;
        self.wrote(
            &namespace,
            &name,
            written.metadata.resource_version.as_deref(),
        );
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_driver::ServerState;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    #[test]
    fn usage_is_rounded_and_state_is_the_driver_string() {
        let observed = vm_driver::ServerStatus {
            state: ServerState::Running,
            cpu_percent: 12.3456,
            memory_percent: 99.999,
        };
        let s = server_status(&ServerId("id-1".into()), &observed);
        assert_eq!((s.id.as_str(), s.state.as_str()), ("id-1", "Running"));
        assert_eq!((s.usage.cpu, s.usage.memory), (12.35, 100.0));
    }

    #[test]
    fn differs_ignores_last_update_time() {
        let a = new_status(VirtualMachinePhase::Creating, None, None);
        let mut b = a.clone();
        b.last_update_time = Some(Time(at(5)));
        assert!(!status_differs(Some(&b), &a));
        assert!(status_differs(None, &a));
        let failed = new_status(VirtualMachinePhase::Failed, Some("x".into()), None);
        assert!(status_differs(Some(&a), &failed));
        let other_reason = new_status(VirtualMachinePhase::Failed, Some("y".into()), None);
        assert!(status_differs(Some(&failed), &other_reason));
    }

    #[test]
    fn staleness_is_age_against_the_limit() {
        let mut s = new_status(VirtualMachinePhase::Active, None, None);
        assert!(
            is_stale(Some(&s), at(100), Duration::from_secs(10)),
            "never written"
        );
        assert!(is_stale(None, at(100), Duration::from_secs(10)));
        s.last_update_time = Some(Time(at(95)));
        assert!(!is_stale(Some(&s), at(100), Duration::from_secs(10)));
        assert!(is_stale(Some(&s), at(105), Duration::from_secs(10)));
        // A timestamp from the future (clock skew between controllers) is rewritten.
        assert!(is_stale(Some(&s), at(90), Duration::from_secs(10)));
    }
}
