//! Waiting for quiescence while the controller runs: the crash point's restart, exits
//! the run did not cause, the withheld event's release, and the stale restart.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::process::Controller;
use super::{RunError, Timing};
use crate::plan;
use crate::proxy::SieveProxy;

/// Waits for quiescence, restarting the controller after the plan's crash.
pub(super) struct Watcher<'a> {
    pub(super) proxy: &'a SieveProxy,
    pub(super) controller: &'a mut Controller,
    /// The replica the crash hook killed ([`NOT_CRASHED`]: none).
    pub(super) crashed: &'a AtomicUsize,
    /// Each replica's command line.
    pub(super) commands: &'a [Vec<String>],
    pub(super) env: &'a [(String, String)],
    pub(super) dir: &'a Path,
    pub(super) timing: Timing,
    pub(super) exits: Vec<String>,
    pub(super) liveness: Vec<String>,
}

/// [`Watcher::crashed`] when no crash point killed a replica.
pub(super) const NOT_CRASHED: usize = usize::MAX;

/// A withheld event that nothing supersedes is released after this many quiet periods
/// even when the run never goes quiet ([`Recorder::release_withheld`]).
const WITHHELD_BOUND: u32 = 5;

/// How often the runner looks.
pub(super) const TICK: Duration = Duration::from_millis(100);
/// Restarts after exits the run did not cause, before it stops restarting.
const MAX_UNEXPECTED_EXITS: usize = 3;

impl Watcher<'_> {
    /// Starts every replica.
    pub(super) fn start_all(&mut self) -> Result<(), RunError> {
        for (replica, command) in self.commands.iter().enumerate() {
            self.controller
                .start(replica, command, self.env, self.dir)?;
        }
        Ok(())
    }

    /// Restarts a replica that exited: at once after the plan's crash point, else
    /// counted as an exit the run did not cause. `false`: stop waiting (too many such
    /// exits, or the restart failed). Also called while a step's operation waits (a
    /// recreate waits for the old object's finalizers, which only a restarted
    /// controller removes).
    pub(super) async fn restart_exited(&mut self, what: &str) -> bool {
        if let Some((replica, status)) = self.controller.exited() {
            if self
                .crashed
                .compare_exchange(replica, NOT_CRASHED, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                // The plan's crash point: start the successor at once.
                tracing::info!(
                    what,
                    replica,
                    "sieve: restarting the controller after the crash point"
                );
            } else {
                let who = if self.controller.replicas() > 1 {
                    format!("replica {replica} of the controller")
                } else {
                    "the controller".to_owned()
                };
                self.exits.push(format!("{what}: {who} exited: {status}"));
                if self.exits.len() > MAX_UNEXPECTED_EXITS {
                    self.controller.kill_all().await;
                    return false;
                }
            }
            self.controller.kill(replica).await;
            let command = &self.commands[replica];
            if let Err(e) = self.controller.start(replica, command, self.env, self.dir) {
                self.exits
                    .push(format!("{what}: restarting the controller: {e}"));
                return false;
            }
        }
        true
    }

    /// Releases a withheld event nothing superseded for [`WITHHELD_BOUND`] quiet periods,
    /// quiet or not: a controller busy for good on the state before it (found on the Go
    /// sample-controller: a deleted Foo it still saw, its Deployment created again each
    /// time the garbage collector removed it), or a step's operation waiting on it (a
    /// recreate waiting for the finalizer of a VM whose deletion the controller never
    /// saw).
    ///
    /// The bound counts from `waiting_since` (the start of the current wait: a step's
    /// operation, or a quiescence wait) or the withholding, whichever is later: a
    /// withheld event is held across steps (see [`quiescent`](Self::quiescent)), and time
    /// the run spent quiet between them is not time it spent busy on it.
    pub(super) fn release_long_withheld(&self, what: &str, waiting_since: Instant) {
        let recorder = self.proxy.interceptor();
        if recorder.withheld_for().is_some_and(|held| {
            held.min(waiting_since.elapsed()) >= self.timing.quiet * WITHHELD_BOUND
        }) && recorder.release_withheld()
        {
            tracing::info!(what, "sieve: releasing the withheld event (never quiet)");
        }
    }

    /// Waits until neither the trace nor the controller's requests have moved for the
    /// quiet period (and the controller has sent at least one request), or the bound.
    ///
    /// `release`: once quiet, release a withheld event nothing superseded
    /// ([`Recorder::release_withheld`](crate::proxy::Recorder::release_withheld)) and wait
    /// for quiet again. Only after the workload's last step: before it, a later step
    /// may still change the object, and its next event is what the controller must make
    /// do with (Sieve's unobserved state). Released at the end of the step it was
    /// withheld in, an `ADDED` arrives late but intact, and a controller that acts only
    /// on `ADDED` events is never caught (issue 57, A3).
    pub(super) async fn quiescent(&mut self, what: &str, release: bool) {
        let start = Instant::now();
        let mut last = (usize::MAX, u64::MAX);
        let mut since = Instant::now();
        loop {
            if !self.restart_exited(what).await {
                return;
            }
            self.release_long_withheld(what, start);
            let recorder = self.proxy.interceptor();
            let now = (recorder.len(), recorder.requests());
            if now != last {
                last = now;
                since = Instant::now();
            } else if now.1 > 0 && since.elapsed() >= self.timing.quiet {
                if release && self.proxy.interceptor().release_withheld() {
                    // The withheld event's object never changed again: let the
                    // controller relist, and wait for quiet once more.
                    tracing::info!(what, "sieve: releasing the withheld event (a relist)");
                    since = Instant::now();
                    continue;
                }
                return;
            }
            if start.elapsed() >= self.timing.step_bound {
                self.liveness.push(format!(
                    "{what}: not quiescent within {:?} (the controller kept writing or requesting)",
                    self.timing.step_bound
                ));
                return;
            }
            tokio::time::sleep(TICK).await;
        }
    }

    /// The state of `resources` in `namespace` once the garbage collector has removed
    /// what deleted owners left (its work, not the controller's; it also needs a while
    /// to discover a new CRD's resource) and every Deployment has rolled out (the
    /// deployment controller's and kwok's work, which under load can pause for longer
    /// than a quiet period: a MyWeb plan's status was taken mid-rollout in CI), and the
    /// controller is quiet again after what that made it do; up to the step bound (an
    /// owned object still waiting for the collector then is what the invariants
    /// report). `release`: as [`quiescent`](Self::quiescent)'s.
    pub(super) async fn settled_state(
        &mut self,
        cluster: &super::Cluster,
        resources: &[kube::core::ApiResource],
        namespace: &str,
        full_kinds: &[&str],
        release: bool,
    ) -> Result<Vec<serde_json::Value>, RunError> {
        let started = Instant::now();
        // The trace's length when the run was last quiet: anything recorded since (a
        // rollout's last status change after a pause longer than the quiet period, and
        // the controller's answer to it) means quiet again first, then a fresh list.
        let mut quiet_at = self.proxy.interceptor().len();
        loop {
            let mut state = Vec::new();
            for resource in resources {
                state.extend(cluster.list(resource, namespace).await?);
            }
            let out_of_time = started.elapsed() >= self.timing.step_bound;
            // Orphans the garbage collector has yet to remove, Deployments still rolling
            // out: the cluster's work, which the controller then reacts to.
            let waiting = !crate::invariants::check_end_state(&state, full_kinds).is_empty()
                || !crate::invariants::rolling_out(&state).is_empty();
            if waiting && !out_of_time {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            if self.proxy.interceptor().len() != quiet_at && !out_of_time {
                self.quiescent("garbage collection and rollouts", release)
                    .await;
                quiet_at = self.proxy.interceptor().len();
                continue;
            }
            return Ok(state);
        }
    }

    /// The stale-state perturbation after step `at_step`: a restart whose lists are
    /// served at the resourceVersion of the end of step `at_step - 1`.
    pub(super) async fn restart_stale(&mut self, at_step: usize) -> Result<(), RunError> {
        let recorder = self.proxy.interceptor();
        let rv = plan::versions_at_step_ends(&recorder.trace())
            .into_iter()
            .find(|(step, _)| *step == at_step - 1)
            .and_then(|(_, rv)| rv);
        let Some(rv) = rv else {
            // Nothing seen by then: nothing to serve stale (the plan is not reached).
            return Ok(());
        };
        self.controller.kill_all().await;
        let before = recorder.requests();
        recorder.begin_stale(rv);
        self.start_all()?;
        // Until a list was served stale, or the new incarnation has at least sent its
        // first request (a slow start must not pass for quiet). A controller whose lists
        // all ask for the most recent state never gets one served stale (the proxy's
        // `may_be_served_stale`): its plan is not reached, and quiet ends the wait.
        let start = Instant::now();
        while !recorder.reached()
            && recorder.requests() == before
            && start.elapsed() < self.timing.step_bound
        {
            tokio::time::sleep(TICK).await;
        }
        self.quiescent(&format!("step {at_step} (stale restart)"), false)
            .await;
        recorder.end_stale();
        Ok(())
    }
}
