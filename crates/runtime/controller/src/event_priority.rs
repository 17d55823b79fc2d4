//! Which events wait at the back of the line: controller-runtime's
//! `handler.WithLowPriorityWhenUnchanged` (pkg/handler/eventhandler.go), for event
//! handlers that feed a priority queue.
//!
//! After a restart or a relist, the initial list delivers an "add" for every object
//! that exists, thousands of keys at once; a resync re-delivers every object as an
//! "update" with an unchanged resourceVersion. None of them is news: they are there
//! to catch what might have been missed. If they stand in line in front of the one
//! object a user has just changed, that user waits for the whole catch-up. Giving
//! them [`workqueue::priority::LOW`] lets a real change pass them; the queue still
//! syncs every one of them, only later.
//!
//! With a plain FIFO queue (the `--fifo-queue` switch, client-go's behaviour) the
//! priority is ignored, so a handler can always use these.
//!
//! ```
//! use controller::event_priority::{on_add, on_update};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::ObjectMeta;
//! use workqueue::priority::{DEFAULT, LOW};
//!
//! let at = |rv: &str| ConfigMap {
//!     metadata: ObjectMeta { resource_version: Some(rv.into()), ..Default::default() },
//!     ..Default::default()
//! };
//! assert_eq!(on_add(true), LOW); // from the initial list
//! assert_eq!(on_add(false), DEFAULT); // created while we watch
//! assert_eq!(on_update(&at("7"), &at("7")), LOW); // a resync: nothing changed
//! assert_eq!(on_update(&at("7"), &at("8")), DEFAULT); // a real change
//! ```

use kube::Resource;
use workqueue::priority::{DEFAULT, LOW};

/// The priority of an add event: [`LOW`] when it comes from the initial list
/// (`is_in_initial_list`), [`DEFAULT`] otherwise.
pub fn on_add(is_in_initial_list: bool) -> i32 {
    if is_in_initial_list { LOW } else { DEFAULT }
}

/// The priority of an update event: [`LOW`] when the resourceVersion did not change
/// (a resync, or a relist re-delivering an object), [`DEFAULT`] otherwise.
pub fn on_update<K: Resource>(old: &K, new: &K) -> i32 {
    if old.meta().resource_version == new.meta().resource_version {
        LOW
    } else {
        DEFAULT
    }
}
