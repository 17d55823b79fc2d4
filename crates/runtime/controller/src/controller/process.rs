//! One turn of a worker: sample-controller's `processNextWorkItem`, step by step.
//!
//! [`Controller::process_next`] reads as client-go's four steps; what this runtime adds
//! to each is a named step below it, with its own doc:
//!
//! 1. **get** a key from the queue (waiting if there is none);
//! 2. **admit** it ([`Controller::admit`]): is it this replica's (sharding), and are the
//!    caches fresh enough to sync it (the staleness guard)?
//! 3. **sync** it ([`Controller::sync_observed`]): the [`SyncHandler`], with the
//!    pipeline trace, the span, the timeout, the per-poll fence of a sharded replica and
//!    the reconcile metrics around it;
//! 4. **forget or requeue** it ([`Controller::settle`]): forget on success, requeue when
//!    asked, retry with backoff on an error, a panic or a timeout.
//!
//! The key is marked `done` when the [`WorkItem`](workqueue::WorkItem) guard drops at the
//! end of [`Controller::process_next`], on every path.

use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::FutureExt;
use tracing::{Instrument, debug, error, info_span, warn};
use workqueue::AddOpts;

use super::{Controller, millis, retries, retry_opts};
use crate::gate::{Admission, Pass};
use crate::metrics;
use crate::outcome::{self, Outcome, panic_message};
use crate::steps;
use crate::sync_clock::SyncClock;
use crate::sync_handler::{Action, SyncHandler};

/// What [`Controller::admit`] decided for a key.
enum Admit {
    /// Sync it now, holding the shard's pass (if sharded) until the sync ends.
    Sync(Option<Pass>),
    /// Not now: another replica's key (forgotten) or parked until the caches catch up.
    Done,
}

impl<H: SyncHandler> Controller<H> {
    /// [`process_next_work_item`](Self::process_next_work_item) on worker number
    /// `worker` (for the pipeline trace): one turn of a worker; `false` once the queue
    /// has shut down.
    pub(super) async fn process_next(&self, worker: usize) -> bool {
        // 1. Get a key. Its guard marks it done when dropped, on every path.
        let Some(item) = self.queue.get().await else {
            return false;
        };
        let (key, priority) = (&*item, item.priority());
        let traced: Arc<str> = Arc::from(key.as_str());
        steps::took(&self.name, &traced, worker);

        // 2. Admit it.
        let Admit::Sync(pass) = self.admit(key, &traced, priority) else {
            return true;
        };

        // 3. Sync it.
        let Some((outcome, clock)) = self.sync_observed(key, &traced, worker, pass).await else {
            return true;
        };

        // 4. Forget it, or put it back.
        self.settle(key, &traced, priority, outcome, &clock);
        true
    }

    /// Step 2: a sharded replica syncs only its own keys (another replica's is forgotten:
    /// its owner syncs it, no retry, no backoff; see [`crate::gate`]); with a staleness
    /// guard, a key whose last write the informers have not seen yet is parked until they
    /// have (see [`crate::freshness`]).
    fn admit(&self, key: &String, traced: &Arc<str>, priority: i32) -> Admit {
        let pass = match self.gate.as_ref().map(|gate| gate.admit(key)) {
            Some(Admission::Skip) => {
                self.queue.forget(key);
                steps::requeued(&self.name, traced, "not_this_shard", 0);
                debug!(controller = %self.name, key = %key, "skipped: another replica's shard");
                return Admit::Done;
            }
            Some(Admission::Admit(pass)) => Some(pass),
            None => None,
        };
        if !self.is_fresh(key, priority) {
            steps::requeued(&self.name, traced, "parked", 0);
            return Admit::Done;
        }
        Admit::Sync(pass)
    }

    /// Step 3: runs the [`SyncHandler`] on `key` and observes it: the pipeline trace and
    /// the in-flight gauge, a `sync` span carrying the key through every log line, the
    /// sync scope that attributes its API writes to the key, panics caught, the
    /// `--reconcile-timeout` (see [`crate::outcome`]), the per-poll clock
    /// ([`crate::sync_clock`]) and the reconcile metrics. `None` when a sharded
    /// replica's pass was revoked mid-sync: the sync is abandoned and the key forgotten.
    async fn sync_observed(
        &self,
        key: &String,
        traced: &Arc<str>,
        worker: usize,
        pass: Option<Pass>,
    ) -> Option<(Outcome, SyncClock)> {
        let span = info_span!("sync", controller = %self.name, key = %key, worker);
        let scope = pipeline::SyncScope {
            controller: Arc::clone(&self.name),
            key: Arc::clone(traced),
        };
        steps::sync_started(&self.name, traced);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let mut clock = SyncClock::start();
        let sync = pipeline::in_sync(
            scope,
            AssertUnwindSafe(self.handler.sync(key))
                .catch_unwind()
                .instrument(span),
        );
        let sync = outcome::with_timeout(self.reconcile_timeout, sync);
        // The clock notes when each poll begins, before the pass checks it.
        let outcome = match pass {
            None => Some(clock.run(pin!(sync)).await),
            Some(pass) => clock.run(pin!(pass.run(sync))).await,
        };
        let elapsed = clock.elapsed();
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let Some(outcome) = outcome else {
            // Revoked: this replica must stop at once (see crate::gate).
            self.queue.forget(key);
            steps::sync_ended(&self.name, traced, "revoked", elapsed, None);
            warn!(controller = %self.name, key = %key, ?elapsed, "sync abandoned: this replica no longer holds the key's shard");
            return None;
        };
        let result = outcome.result();
        metrics::observe_reconcile(&self.name, result, elapsed);
        steps::sync_ended(
            &self.name,
            traced,
            result.as_str(),
            elapsed,
            outcome.message(),
        );
        Some((outcome, clock))
    }

    /// Step 4: success forgets the key (its next failure starts from the base delay); a
    /// requeue puts it back after its delay, at the sync's priority or the key's own; an
    /// error, a panic or a timeout puts it back with backoff at the key's priority (a
    /// transient error, a 409 or the API server restarting, heals itself on a later try).
    fn settle(
        &self,
        key: &String,
        traced: &Arc<str>,
        priority: i32,
        outcome: Outcome,
        clock: &SyncClock,
    ) {
        let elapsed = clock.elapsed();
        match outcome {
            Outcome::Synced(Action::Done) => {
                self.queue.forget(key);
                debug!(controller = %self.name, key = %key, ?elapsed, started_at = %clock.started_at(),
                    last_poll_at = %clock.last_poll_at(), "synced");
            }
            Outcome::Synced(action) => {
                let after = action.requeue().unwrap_or_default();
                let priority = action.priority().unwrap_or(priority);
                self.queue.forget(key);
                steps::requeued(&self.name, traced, "requeue_after", millis(after));
                let opts = AddOpts {
                    after,
                    priority,
                    ..AddOpts::default()
                };
                self.queue.add_with_opts(key, opts);
                debug!(controller = %self.name, key = %key, ?elapsed, started_at = %clock.started_at(),
                    last_poll_at = %clock.last_poll_at(), ?after, priority, "synced; requeued");
            }
            Outcome::Failed(err) => {
                self.retry(key, traced, priority, "error");
                error!(controller = %self.name, key = %key, retries = self.queue.num_requeues(key),
                    error = %err, "error syncing; requeuing");
            }
            Outcome::Panicked(panic) => {
                self.retry(key, traced, priority, "panic");
                error!(controller = %self.name, key = %key, retries = self.queue.num_requeues(key),
                    panic = %panic_message(&*panic),
                    "panic while syncing (a bug); treated as an error and requeued");
            }
            Outcome::TimedOut(after) => {
                self.retry(key, traced, priority, "timeout");
                error!(controller = %self.name, key = %key, retries = self.queue.num_requeues(key),
                    timeout = ?after, "{}; requeuing", outcome::timeout_message(after));
            }
        }
    }

    /// Puts `key` back with backoff at `priority`, and records why (`error`, `panic`,
    /// `timeout`) in the trace.
    fn retry(&self, key: &String, traced: &Arc<str>, priority: i32, why: &'static str) {
        self.queue.add_with_opts(key, retry_opts(priority));
        steps::requeued(&self.name, traced, why, retries(&self.queue, key));
    }
}
