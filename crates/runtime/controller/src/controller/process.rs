//! One turn of a worker: sample-controller's `processNextWorkItem`, step by step.
//!
//! [`Controller::process_next`] reads as client-go's steps: get a key, sync it, forget
//! it or requeue it with backoff, done. What this runtime adds is a named step of its
//! own, each with a short doc saying why:
//!
//! 1. **get** a key from the queue (waiting if there is none);
//! 2. **admit by shard** ([`Controller::admit_by_shard`]): a replica of a sharded group
//!    syncs only its own keys (see [`crate::gate`]);
//! 3. **wait for fresh caches** ([`Controller::caches_fresh`]): a key whose last sync
//!    wrote something the informers have not seen yet is parked, not synced against the
//!    stale cache (see [`crate::freshness`]);
//! 4. **sync it, observed** ([`Controller::sync_observed`]): the [`SyncHandler`], with
//!    the pipeline trace, the span, the timeout, the per-poll fence of a sharded replica
//!    and the reconcile metrics around it;
//! 5. **forget or requeue** it ([`Controller::forget_or_requeue`]): forget on success,
//!    requeue when asked, retry with backoff on an error, a panic or a timeout.
//!
//! The key is marked `done` when the [`WorkItem`](workqueue::WorkItem) guard drops at the
//! end of [`Controller::process_next`], on every path: client-go's `defer queue.Done(key)`.
//!
//! The synchronous steps are `#[inline(always)]`, so that naming them costs nothing; the
//! sync step's own future costs 36-40 instructions a turn over the one-function loop this
//! replaced, about 1 % of a turn whose sync does nothing (`examples/loop_cost.rs` under
//! callgrind; docs/benchmarks.md, the converge section's History).

use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::FutureExt;
use tracing::{Instrument, debug, error, info_span, warn};
use workqueue::{AddOpts, RateLimitingQueue};

use super::{Controller, retry_opts};
use crate::gate::{Admission, Pass};
use crate::metrics;
use crate::outcome::{self, Outcome, panic_message};
use crate::steps;
use crate::sync_clock::SyncClock;
use crate::sync_handler::{Action, SyncHandler};

/// What [`Controller::admit_by_shard`] decided for a key.
enum Shard {
    /// This replica's key (or the controller is not sharded): sync it, holding the
    /// pass, if there is one, until the sync ends.
    Ours(Option<Pass>),
    /// Another replica's key: forgotten, its owner syncs it.
    Theirs,
}

/// A sync that ran to an outcome: what [`Controller::sync_observed`] hands to
/// [`Controller::forget_or_requeue`].
struct Synced<E> {
    outcome: Outcome<E>,
    /// Measured once, when the sync ended: the metrics, the trace and the log line
    /// report the same figure.
    elapsed: Duration,
    clock: SyncClock,
    /// The object the gate placed the key by (see [`Pass::object`]).
    object_hash: Option<u64>,
}

impl<H: SyncHandler> Controller<H> {
    /// [`process_next_work_item`](Self::process_next_work_item) on worker number
    /// `worker` (for the pipeline trace): one turn of a worker; `false` once the queue
    /// has shut down and is empty.
    pub(super) async fn process_next(&self, worker: usize) -> bool {
        // Get a key. Its guard marks it done when dropped at the end of this function,
        // on every path (even a panic), so the key can be handed out again.
        let Some(item) = self.queue.get().await else {
            return false;
        };
        let key: &String = &item;
        // Retries keep the priority the key was queued with (controller-runtime's
        // reconcileHandler does the same): a low-priority catch-up key that fails
        // does not jump ahead of real changes by failing.
        let priority = item.priority();
        let traced: Arc<str> = Arc::from(key.as_str());
        steps::took(&self.name, &traced, worker);

        let Shard::Ours(pass) = self.admit_by_shard(key, &traced) else {
            return true;
        };
        if !self.caches_fresh(key, &traced, priority) {
            return true;
        }
        let Some(synced) = self.sync_observed(key, &traced, worker, pass).await else {
            return true; // The pass was revoked: abandoned and forgotten.
        };
        self.forget_or_requeue(key, &traced, priority, synced);
        true
    }

    /// Admit by shard: a replica of a sharded group syncs only its own keys. Another
    /// replica's key is forgotten, with no retry and no backoff: its owner syncs it
    /// (see [`crate::gate`]).
    #[inline(always)]
    fn admit_by_shard(&self, key: &String, traced: &Arc<str>) -> Shard {
        match self.gate.as_ref().map(|gate| gate.admit(key)) {
            Some(Admission::Skip) => {
                self.queue.forget(key);
                steps::requeued(&self.name, traced, "not_this_shard", 0);
                debug!(controller = %self.name, key = %key, "skipped: another replica's shard");
                Shard::Theirs
            }
            Some(Admission::Admit(pass)) => Shard::Ours(Some(pass)),
            None => Shard::Ours(None),
        }
    }

    /// Wait for fresh caches (`true` without a staleness guard): `false` when the
    /// informers have not yet seen the key's last write. The key is then parked (a
    /// small task puts it back once they have, or with backoff after the bound) and
    /// this worker moves on; syncing against that stale cache would undo the write (see
    /// [`Freshness::check_or_park`](crate::freshness::Freshness::check_or_park)).
    #[inline(always)]
    fn caches_fresh(&self, key: &str, traced: &Arc<str>, priority: i32) -> bool {
        let fresh = match &self.freshness {
            None => true,
            Some(freshness) => freshness.check_or_park(&self.name, key, priority, &self.queue),
        };
        if !fresh {
            steps::requeued(&self.name, traced, "parked", 0);
        }
        fresh
    }

    /// Sync it, observed: the [`SyncHandler`] on `key`, with the pipeline trace and the
    /// in-flight gauge, a `sync` span carrying the key through every log line (RUST_LOG
    /// shows the same trip as the pipeline view), the sync scope that lets the HTTP
    /// client attribute the sync's API writes to the key, panics caught, the
    /// `--reconcile-timeout` (see [`crate::outcome`]), the per-poll clock
    /// ([`crate::sync_clock`]) and the reconcile metrics. `None` when a sharded
    /// replica's pass was revoked mid-sync: it must stop at once, so the sync is
    /// abandoned and the key forgotten (see [`crate::gate`]).
    async fn sync_observed(
        &self,
        key: &String,
        traced: &Arc<str>,
        worker: usize,
        pass: Option<Pass>,
    ) -> Option<Synced<H::Error>> {
        // The object the gate placed the key by (the hash of its uid): logged with the
        // sync, since a name deleted and created again is another object (see
        // crate::gate::Pass::for_object).
        let object_hash = pass.as_ref().and_then(Pass::object);
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
            self.queue.forget(key);
            steps::sync_ended(&self.name, traced, "revoked", elapsed, None);
            warn!(controller = %self.name, key = %key, ?elapsed, "sync abandoned: this replica no longer holds the key's shard");
            return None;
        };
        let result = outcome.result();
        // controller_runtime_reconcile_total / _errors_total / _time_seconds, when a
        // metrics registry is installed (one atomic load otherwise).
        metrics::observe_reconcile(&self.name, result, elapsed);
        steps::sync_ended(
            &self.name,
            traced,
            result.as_str(),
            elapsed,
            outcome.message(),
        );
        Some(Synced {
            outcome,
            elapsed,
            clock,
            object_hash,
        })
    }

    /// Forget or requeue: success forgets the key (its next failure starts from the
    /// base delay); a requeue forgets it and puts it back after its delay, at the
    /// sync's priority or the key's own; an error, a panic or a timeout puts it back
    /// with backoff (a transient error, a 409 or the API server restarting, heals
    /// itself on a later try).
    #[inline(always)]
    fn forget_or_requeue(
        &self,
        key: &String,
        traced: &Arc<str>,
        priority: i32,
        synced: Synced<H::Error>,
    ) {
        let Synced {
            outcome,
            elapsed,
            clock,
            object_hash,
        } = synced;
        match outcome {
            Outcome::Synced(Action::Done) => {
                self.queue.forget(key);
                debug!(
                    controller = %self.name,
                    key = %key,
                    ?elapsed,
                    started_at = %clock.started_at(),
                    last_poll_at = %clock.last_poll_at(),
                    object_hash,
                    "synced"
                );
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
                debug!(
                    controller = %self.name,
                    key = %key,
                    ?elapsed,
                    started_at = %clock.started_at(),
                    last_poll_at = %clock.last_poll_at(),
                    ?after,
                    priority,
                    object_hash,
                    "synced; requeued"
                );
            }
            Outcome::Failed(err) => {
                self.retry(key, traced, priority, "error");
                error!(
                    controller = %self.name,
                    key = %key,
                    retries = self.queue.num_requeues(key),
                    error = %err,
                    "error syncing; requeuing"
                );
            }
            Outcome::Panicked(panic) => {
                self.retry(key, traced, priority, "panic");
                error!(
                    controller = %self.name,
                    key = %key,
                    retries = self.queue.num_requeues(key),
                    panic = %panic_message(&*panic),
                    "panic while syncing (a bug); treated as an error and requeued"
                );
            }
            Outcome::TimedOut(after) => {
                // The worker is free again; the key retries with backoff, like an error.
                self.retry(key, traced, priority, "timeout");
                error!(
                    controller = %self.name,
                    key = %key,
                    retries = self.queue.num_requeues(key),
                    timeout = ?after,
                    "{}; requeuing", outcome::timeout_message(after)
                );
            }
        }
    }

    /// Puts `key` back with backoff at `priority` and records why (`error`, `panic`,
    /// `timeout`) in the trace.
    fn retry(&self, key: &String, traced: &Arc<str>, priority: i32, why: &'static str) {
        self.queue.add_with_opts(key, retry_opts(priority));
        steps::requeued(&self.name, traced, why, retries(&self.queue, key));
    }
}

/// Milliseconds of `d`, for a step.
fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The key's failed tries so far, for a step.
fn retries(queue: &RateLimitingQueue<String>, key: &String) -> i64 {
    i64::from(queue.num_requeues(key))
}
