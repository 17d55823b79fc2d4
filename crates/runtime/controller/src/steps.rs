//! The loop's steps in the [`pipeline`] trace: what the queue did with a key, which
//! worker took it, how its sync went, and why it went back in line.
//!
//! The informer's steps (FIFO, indexer, handlers) are recorded by the cache crate.
//! API writes are reported by the sync handlers themselves ([`record_write`]), with
//! the object the API server returned: the place that knows a write happened and what
//! it produced. (An HTTP-client layer cannot do it: kube's client hands every request
//! to a buffer task, where the sync's task-local scope is out of sight.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pipeline::{Stage, Step};
use workqueue::{AddOutcome, QueueObserver, RateLimitingQueue};

/// Records every add to a controller's queue as a [`Stage::Queue`] step: `queued`,
/// `raised`, `dirty`, `deduped` (n = priority), or `delayed` (n = milliseconds).
pub(crate) struct QueueSteps {
    pub(crate) controller: Arc<str>,
}

impl QueueObserver<String> for QueueSteps {
    fn added(&self, key: &String, priority: i32, outcome: AddOutcome) {
        pipeline::record(|| {
            Step::new(
                Stage::Queue,
                self.controller.clone(),
                Arc::from(key.as_str()),
                outcome.name(),
            )
            .n(i64::from(priority))
        });
    }

    fn delayed(&self, key: &String, delay: Duration, _priority: i32) {
        pipeline::record(|| {
            Step::new(
                Stage::Queue,
                self.controller.clone(),
                Arc::from(key.as_str()),
                "delayed",
            )
            .n(millis(delay))
        });
    }
}

/// Worker `worker` (numbered from 0) took `key`; n is the worker's number.
pub(crate) fn took(controller: &Arc<str>, key: &Arc<str>, worker: usize) {
    pipeline::record(|| {
        Step::new(Stage::Worker, controller.clone(), key.clone(), "took")
            .n(i64::try_from(worker).unwrap_or(i64::MAX))
    });
}

/// The sync of `key` started.
pub(crate) fn sync_started(controller: &Arc<str>, key: &Arc<str>) {
    pipeline::record(|| Step::new(Stage::Sync, controller.clone(), key.clone(), "started"));
}

/// The sync of `key` ended with `result` after `elapsed` (n = milliseconds); an error
/// or panic carries its message.
pub(crate) fn sync_ended(
    controller: &Arc<str>,
    key: &Arc<str>,
    result: &'static str,
    elapsed: Duration,
    message: Option<String>,
) {
    pipeline::record(|| {
        let step =
            Step::new(Stage::Sync, controller.clone(), key.clone(), result).n(millis(elapsed));
        match message {
            Some(message) => step.text(message),
            None => step,
        }
    });
}

/// `key` was put back in the queue because of `reason` (`error`, `panic`,
/// `requeue_after`, `parked`); n is its number of failed tries so far, or the
/// requeue-after delay in milliseconds.
pub(crate) fn requeued(controller: &Arc<str>, key: &Arc<str>, reason: &'static str, n: i64) {
    pipeline::record(|| Step::new(Stage::Requeue, controller.clone(), key.clone(), reason).n(n));
}

/// Records that the running sync wrote `obj` (a create, update, patch or status
/// update; pass what the API server returned) as a [`Stage::Write`] step of the key
/// being synced: `what` is the object's kind, the text its `namespace/name` and new
/// resourceVersion. Outside a sync (see [`pipeline::in_sync`]) it records nothing.
///
/// The controllers call it next to [`Freshness::wrote`](crate::Freshness::wrote),
/// for every write, whether or not the staleness guard is on.
pub fn record_write<K: kube::Resource>(obj: &K) {
    let meta = obj.meta();
    record_write_version::<K>(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        meta.resource_version.as_deref(),
    );
}

/// [`record_write`] for a write that answered with a version but not a whole `K` (a
/// metadata-only patch, for example).
pub fn record_write_version<K>(namespace: &str, name: &str, resource_version: Option<&str>) {
    if !pipeline::enabled() {
        return;
    }
    let Some(scope) = pipeline::current_sync() else {
        return;
    };
    let text = format!(
        "{namespace}/{name} resourceVersion {}",
        resource_version.unwrap_or("?")
    );
    let what = pipeline::short_type_name::<K>();
    pipeline::record(|| Step::new(Stage::Write, scope.controller, scope.key, what).text(text));
}

/// Registers the page's queue depth and syncs-in-flight readers for `controller`;
/// they answer for as long as the returned guard lives (the controller's `run`).
pub(crate) fn register_gauges(
    controller: &str,
    queue: &RateLimitingQueue<String>,
    in_flight: &Arc<AtomicUsize>,
) -> Arc<()> {
    let alive = Arc::new(());
    let (running, queue) = (Arc::downgrade(&alive), queue.clone());
    pipeline::gauges().register(controller, Stage::Queue, "depth", move || {
        running.upgrade().map(|_| count(queue.len()))
    });
    let (running, in_flight) = (Arc::downgrade(&alive), Arc::clone(in_flight));
    pipeline::gauges().register(controller, Stage::Sync, "in_flight", move || {
        running
            .upgrade()
            .map(|_| count(in_flight.load(Ordering::Relaxed)))
    });
    alive
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
