//! The informer event handler: how VirtualMachine changes become work-queue keys.
//!
//! * **add** (including every object of the initial list after a restart): enqueue.
//!   This is what makes a restarted controller pick up every VirtualMachine, whatever
//!   phase it was left in.
//! * **update**: enqueue when the object really changed (a new resourceVersion): a spec
//!   edit, a `deletionTimestamp`, our own status writes. Periodic resyncs re-deliver
//!   every object with the same resourceVersion; they are skipped, because the usage
//!   refresh is already scheduled per object with `RequeueAfter(--usage-period)` and a
//!   resync would only add a driver status call per object per resync period.
//! * **delete**: nothing to do. A VirtualMachine carrying our finalizer only
//!   disappears after the controller removed it, i.e. after its server was deleted;
//!   one without the finalizer never had a server.
//!
//! Handlers only compute keys and add them to the queue; the queue deduplicates, so a
//! burst of events for one object costs one sync.

use std::sync::Arc;

use apis::cloudnative::v1alpha1::VirtualMachine;
use cache::{DeletedObject, EventHandler, meta_namespace_key};
use controller::event_priority;
use tracing::{debug, warn};
use workqueue::{AddOpts, RateLimitingQueue};

/// VirtualMachine add/update -> enqueue its key.
#[derive(Debug, Clone)]
pub struct VirtualMachineHandler {
    queue: RateLimitingQueue<String>,
}

impl VirtualMachineHandler {
    /// A handler feeding `queue`.
    pub fn new(queue: RateLimitingQueue<String>) -> Self {
        Self { queue }
    }

    fn enqueue(&self, vm: &VirtualMachine, priority: i32) {
        match meta_namespace_key(vm) {
            Ok(key) => self.queue.add_with_opts(
                key,
                AddOpts {
                    priority,
                    ..AddOpts::default()
                },
            ),
            Err(err) => {
                warn!(error = %err, "cannot compute a key for a VirtualMachine; skipping it")
            }
        }
    }
}

impl EventHandler<VirtualMachine> for VirtualMachineHandler {
    fn on_add(&self, vm: &Arc<VirtualMachine>, is_in_initial_list: bool) {
        // Initial-list adds wait behind real changes (see controller::event_priority).
        self.enqueue(vm, event_priority::on_add(is_in_initial_list));
    }

    fn on_update(&self, old: &Arc<VirtualMachine>, new: &Arc<VirtualMachine>) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        self.enqueue(new, workqueue::priority::DEFAULT);
    }

    fn on_delete(&self, deleted: &DeletedObject<VirtualMachine>) {
        debug!(
            vm = ?deleted.object().and_then(|vm| vm.metadata.name.clone()),
            "VirtualMachine deleted"
        );
    }
}
