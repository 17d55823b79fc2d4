//! The controller sync loop: sample-controller's `Run` / `runWorker` /
//! `processNextWorkItem`, written once so every controller shares it.
//!
//! # Where this sits
//!
//! ```text
//!  API server ──list/watch──▶ informer (cache crate) ──event handlers──▶ queue.add(key)
//!                                  │                                         │
//!                                  ▼                                         ▼
//!                             lister (cache)  ◀──── reads ──── SyncHandler::sync(key)  ◀── Controller workers
//!                                                                    │
//!                                                                    └──writes──▶ API server
//! ```
//!
//! A controller is the pair on the right: a [`SyncHandler`] (your code: "make the world
//! look like this object says") and a [`Controller`] (the loop: wait for caches, N
//! workers, retries with backoff, panics contained, graceful drain). The informers and
//! listers come from the `cache` crate, the queue from the `workqueue` crate.
//!
//! # Modules
//!
//! - [`sync_handler`]: the [`SyncHandler`] trait and [`Action`] (done, or requeue after
//!   a duration), with the rules a handler must follow.
//! - [`controller`]: the loop itself, narrated step by step.
//! - [`informer_synced`]: "have the caches been filled?" ([`InformerSynced`],
//!   [`wait_for_cache_sync`]): no worker starts before they have.
//! - [`freshness`]: the staleness guard - a key's next sync waits until the informers
//!   have seen its last write (client-go 1.36, KEP-5647).
//! - [`gate`]: the per-key "is this replica's?" check of sharded controllers
//!   ([`SyncGate`], implemented by the `sharding` crate).
//! - [`event_priority`]: initial-list and resync events at low priority
//!   (controller-runtime's `WithLowPriorityWhenUnchanged`).
//! - [`loop_options`]: the staleness guard, the priority queue and the coalescing
//!   backoff, on by default, each with a switch back to client-go's behaviour.
//! - [`controller_options`]: what a process hands each of its controllers as one
//!   value ([`ControllerOptions`]: namespace, workers, loop options, shard), so no
//!   binary passes them one by one.
//! - [`owner`]: controller owner references (`GetControllerOf`, `IsControlledBy`,
//!   `NewControllerRef`).
//! - [`error`]: the loop's [`Error`], and [`ApiError`], the failed API call a sync
//!   handler returns ("was it a 409?" answered in one place).
//! - [`expected`]: the API answers that are expected states, not failures (a create
//!   refused in a terminating namespace, a write to an object already gone), classified
//!   once for every controller.
//! - [`metrics`]: the hook the loop reports each sync to (controller-runtime's
//!   `controller_runtime_reconcile_*`), implemented by the `metrics` crate; off and free
//!   until an observer is installed.
//! - `testing` (with the `testing` cargo feature, for tests only): `FakeApi`, a
//!   recording in-process API for unit tests of sync handlers (client-go's fake
//!   clientset actions). Tests enable it under `[dev-dependencies]`:
//!   `controller = { workspace = true, features = ["testing"] }`.
//!
//! What a *binary* needs around its controllers (flags, the API client, logs, signals,
//! Events, metrics and health servers, leader election) is the `manager` crate; this
//! one depends only on the `workqueue`, `cache` and `pipeline` crates and the Kubernetes types.
//!
//! # A whole controller, minus the informer
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use controller::{Action, Controller, SyncHandler};
//! use tokio_util::sync::CancellationToken;
//! use workqueue::RateLimitingQueue;
//!
//! /// Fails the first sync of every key, then succeeds: the loop retries it.
//! #[derive(Default)]
//! struct Flaky { calls: AtomicUsize }
//!
//! impl SyncHandler for Flaky {
//!     type Error = String;
//!     async fn sync(&self, key: &str) -> Result<Action, String> {
//!         if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
//!             return Err(format!("{key}: transient failure"));
//!         }
//!         Ok(Action::Done)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let queue = RateLimitingQueue::with_default_rate_limiter("flaky");
//! let controller = Controller::new("flaky", queue.clone(), Flaky::default());
//! queue.add("default/a".to_string());
//!
//! let cancel = CancellationToken::new();
//! let run = tokio::spawn({
//!     let (controller, cancel) = (controller.clone(), cancel.clone());
//!     async move { controller.run(1, cancel).await }
//! });
//! // The first sync fails; the retry comes 5 ms later and succeeds.
//! while controller.handler().calls.load(Ordering::SeqCst) < 2 {
//!     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
//! }
//! cancel.cancel();
//! run.await.unwrap().unwrap();
//! assert_eq!(queue.num_requeues(&"default/a".to_string()), 0); // forgotten on success
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod controller;
pub mod controller_options;
pub mod error;
pub mod event_priority;
pub mod expected;
pub mod freshness;
pub mod gate;
pub mod informer_synced;
pub mod loop_options;
pub mod metrics;
mod outcome;
pub mod owner;
mod steps;
mod sync_clock;
pub mod sync_handler;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use controller::{Controller, DEFAULT_DRAIN_TIMEOUT};
pub use controller_options::ControllerOptions;
pub use error::{ApiError, Error, Result};
pub use freshness::{DEFAULT_FRESHNESS_TIMEOUT, Freshness, FreshnessOutcome};
pub use gate::{Admission, Pass, SyncGate};
pub use informer_synced::{InformerSynced, registration_synced, wait_for_cache_sync};
pub use loop_options::{Backoff, LoopOptions, SHARD_GROUP_MAX_RETRY_DELAY};
pub use owner::{
    controller_owner_key, get_controller_of, is_controlled_by, new_controller_ref,
    owner_still_exists,
};
pub use steps::{record_write, record_write_version};
pub use sync_handler::{Action, SyncHandler};
