//! The election loop: client-go's `LeaderElector` (`Run`, `acquire`, `renew`,
//! `release`, `tryAcquireOrRenew`, `maybeReportTransition`).
//!
//! [`LeaderElector::run`] goes through three phases:
//!
//! 1. **acquire**: call `try_acquire_or_renew` right away, then again every
//!    `retry_period` plus a random extra of up to `1.2 * retry_period` (client-go's
//!    `wait.JitterUntil(..., RetryPeriod, JitterFactor, sliding)`) until it succeeds.
//! 2. **lead and renew**: spawn `on_started_leading(token)`, then renew in rounds
//!    (client-go's `wait.Until` around `wait.PollImmediateUntil`): a round tries
//!    `try_acquire_or_renew` immediately and every `retry_period` until one succeeds
//!    or `renew_deadline` has passed since the round was due to begin (`retry_period`
//!    after the last success; a process frozen past that stops at once when it runs
//!    again, where client-go tries for another `renew_deadline`). A successful round is
//!    followed by a `retry_period` pause and the next round. A round that reaches its
//!    deadline (including a request still hanging at that moment) ends leadership:
//!    the token is cancelled **at once**, before anything else happens.
//! 3. **stop**: if `release_on_cancel`, wait (up to `renew_deadline`) for the
//!    `on_started_leading` future to return, then, if the last observed record still
//!    names us, release the lock; then call `on_stopped_leading`. The wait is ours:
//!    client-go releases at once, and leaves it to the caller to have stopped.
//!
//! `try_acquire_or_renew` is where the decisions are made; see its docs and the crate
//! docs for why expiry is judged by local observation time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use parking_lot::Mutex;
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::callbacks::LeaderCallbacks;
use crate::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};
use crate::record::{LeaderElectionRecord, lease_duration_seconds, now_micros};

/// `run` was called while another call of `run` on the same elector was still going.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("LeaderElector::run is already running for {identity} on {lock}")]
pub struct AlreadyRunning {
    /// The candidate's identity.
    pub identity: String,
    /// The lock, as described by the lock.
    pub lock: String,
}

/// [`LeaderElector::check`] failed: we still consider ourselves leader, but have
/// not renewed for longer than the lease plus the tolerance.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed election to renew leadership on lease {name} (last renewal {since:?} ago)")]
pub struct LeaseExpired {
    /// The election's [`LeaderElectionConfig::name`].
    pub name: String,
    /// How long ago the last renewal was observed (`None`: never).
    pub since: Option<Duration>,
}

/// What this candidate last saw of the election: client-go's `observedRecord`,
/// `observedRawRecord`, `observedTime`, `reportedLeader`, plus the resourceVersion
/// that client-go's `LeaseLock` keeps inside its cached Lease.
#[derive(Debug, Default)]
struct Observed {
    /// The record we last read or wrote.
    record: LeaderElectionRecord,
    /// The record as last *read* from the lock: a read that differs from it counts as
    /// a change (client-go compares the raw bytes).
    raw: Option<LeaderElectionRecord>,
    /// When (our clock) `record` last changed. `None`: never (client-go's zero time).
    time: Option<Instant>,
    /// The lock's resourceVersion after our last read or write: the precondition of
    /// our next update.
    resource_version: Option<String>,
    /// The holder last passed to `on_new_leader`.
    reported_leader: String,
}

/// How one renewal round ended.
enum RenewRound {
    Renewed,
    DeadlinePassed,
    Cancelled,
}

/// A leader election candidate: client-go's `LeaderElector`.
///
/// Share it in an `Arc` to ask [`is_leader`](Self::is_leader) /
/// [`get_leader`](Self::get_leader) while [`run`](Self::run) is going. See the crate
/// docs for a complete example.
pub struct LeaderElector {
    config: LeaderElectionConfig,
    callbacks: LeaderCallbacks,
    observed: Mutex<Observed>,
    running: AtomicBool,
}

impl LeaderElector {
    /// client-go's `NewLeaderElector`: checks the config ([`LeaderElectionConfig::validate`]).
    pub fn new(
        config: LeaderElectionConfig,
        callbacks: LeaderCallbacks,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            callbacks,
            observed: Mutex::new(Observed::default()),
            running: AtomicBool::new(false),
        })
    }

    /// The config this elector runs with.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// This candidate's identity (the lock's).
    pub fn identity(&self) -> &str {
        self.config.lock.identity()
    }

    /// client-go's `GetLeader`: the holder of the last observed record; empty if none
    /// was observed yet or the lock was released. Informational (logs, metrics).
    pub fn get_leader(&self) -> String {
        self.observed.lock().record.holder_identity.clone()
    }

    /// client-go's `IsLeader`: whether the last observed record names us.
    ///
    /// Like client-go this is about the *record*, not about `run`: after a failed
    /// renewal it stays `true` until a newer record is observed (nothing is observed
    /// once `run` has returned). To know whether to act as leader, use the token
    /// passed to `on_started_leading`.
    pub fn is_leader(&self) -> bool {
        self.observed.lock().record.holder_identity == self.identity()
    }

    /// client-go's `Check` (behind its `HealthzAdaptor`): for a health endpoint. Fails
    /// if we are the observed leader but our last successful write is older than
    /// `lease_duration + max_tolerable_expired_lease`: by then we should have stopped
    /// leading, so something (a deadlock, a starved runtime) keeps this process from
    /// doing so, and it should be restarted. A non-leader is always healthy.
    pub fn check(&self, max_tolerable_expired_lease: Duration) -> Result<(), LeaseExpired> {
        let observed = self.observed.lock();
        if observed.record.holder_identity != self.identity() {
            return Ok(());
        }
        let since = observed.time.map(|time| time.elapsed());
        let limit = self
            .config
            .lease_duration
            .saturating_add(max_tolerable_expired_lease);
        match since {
            Some(since) if since <= limit => Ok(()),
            _ => Err(LeaseExpired {
                name: self.config.name.clone(),
                since,
            }),
        }
    }

    /// client-go's `Run`: campaign until leader, lead until leadership is lost or
    /// `cancel` fires, then (optionally) release and call `on_stopped_leading`.
    ///
    /// Returns when this candidate stops leading or `cancel` fires. Dropping the
    /// returned future cancels the `on_started_leading` token too (nothing is released
    /// and `on_stopped_leading` is not called, as if the process had died). Fails only
    /// if another `run` of this elector is in progress.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), AlreadyRunning> {
        if self.running.swap(true, Ordering::SeqCst) {
            return Err(AlreadyRunning {
                identity: self.identity().to_string(),
                lock: self.config.lock.describe(),
            });
        }
        let _running = RunningGuard(&self.running);
        // Cancelled with `cancel`, on a lost renewal, or when this future is dropped.
        let leading = cancel.child_token();
        let _stop_leading_on_drop = leading.clone().drop_guard();

        if self.acquire(&cancel).await {
            let work = tokio::spawn((self.callbacks.on_started_leading)(leading.clone()));
            self.renew(&cancel, &leading, work).await;
        }
        leading.cancel();
        (self.callbacks.on_stopped_leading)();
        Ok(())
    }

    /// Tries until the lock is ours (`true`) or `cancel` fires (`false`).
    async fn acquire(&self, cancel: &CancellationToken) -> bool {
        let lock = self.config.lock.describe();
        tracing::info!(%lock, identity = self.identity(), "attempting to acquire leader lease");
        loop {
            let succeeded = tokio::select! {
                biased;
                _ = cancel.cancelled() => return false,
                succeeded = self.try_acquire_or_renew() => succeeded,
            };
            self.maybe_report_transition();
            if succeeded {
                tracing::info!(%lock, identity = self.identity(), "successfully acquired lease");
                return true;
            }
            tracing::debug!(%lock, "failed to acquire lease");
            let pause = jitter(self.config.retry_period, JITTER_FACTOR);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return false,
                _ = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Renews until a round misses its deadline or `cancel` fires; then releases the
    /// lock if configured to, once the leader's `work` has stopped.
    async fn renew(
        &self,
        cancel: &CancellationToken,
        leading: &CancellationToken,
        work: tokio::task::JoinHandle<()>,
    ) {
        let lock = self.config.lock.describe();
        // Each round's deadline counts from the last successful renewal (plus the pause
        // before the round), not from when the round happens to start: a process frozen
        // longer than that (SIGSTOP, a long pause) stops leading the moment it runs
        // again, before any attempt, since its lease may have expired and another
        // candidate may lead. Counted from the round's start, it went on leading for a
        // whole renew deadline next to its successor (found by the chaos soak).
        let mut round_start = Instant::now();
        loop {
            let deadline = round_start
                .checked_add(self.config.renew_deadline)
                .unwrap_or_else(|| after(self.config.renew_deadline));
            let round = self.renew_round(cancel, deadline).await;
            self.maybe_report_transition();
            match round {
                RenewRound::Renewed => tracing::trace!(%lock, "successfully renewed lease"),
                RenewRound::Cancelled => break,
                RenewRound::DeadlinePassed => {
                    // First stop the leader's work, then anything else.
                    leading.cancel();
                    tracing::info!(
                        %lock,
                        identity = self.identity(),
                        renew_deadline = ?self.config.renew_deadline,
                        "failed to renew lease within the renew deadline: stopped leading"
                    );
                    break;
                }
            }
            round_start = after(self.config.retry_period);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep_until(round_start) => {}
            }
        }
        if self.config.release_on_cancel {
            // Release only once the leader's work has returned: client-go releases
            // while `OnStartedLeading` may still be running (and asks its callers to
            // make sure it is not), so the next leader can start while this one is
            // still writing. Work that does not stop within the renew deadline keeps
            // the lock held; it then expires after a lease duration, as on a crash.
            leading.cancel();
            match tokio::time::timeout(self.config.renew_deadline, work).await {
                Ok(_) => {
                    self.release().await;
                }
                Err(_) => tracing::warn!(
                    %lock,
                    renew_deadline = ?self.config.renew_deadline,
                    "the leader's work did not stop within the renew deadline; not \
                     releasing the lock (it expires after the lease duration)"
                ),
            }
        }
    }

    /// One `wait.PollImmediateUntil(RetryPeriod, tryAcquireOrRenew, deadline)`.
    async fn renew_round(&self, cancel: &CancellationToken, deadline: Instant) -> RenewRound {
        loop {
            if Instant::now() >= deadline {
                return RenewRound::DeadlinePassed;
            }
            let attempt = tokio::select! {
                biased;
                _ = cancel.cancelled() => return RenewRound::Cancelled,
                attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()) => attempt,
            };
            match attempt {
                Ok(true) => return RenewRound::Renewed,
                Ok(false) => {}
                Err(_elapsed) => return RenewRound::DeadlinePassed,
            }
            let next = after(self.config.retry_period).min(deadline);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return RenewRound::Cancelled,
                _ = tokio::time::sleep_until(next) => {}
            }
            if Instant::now() >= deadline {
                return RenewRound::DeadlinePassed;
            }
        }
    }

    /// client-go's `release`: if the last observed record names us, write a record
    /// with an empty holder and `leaseDurationSeconds: 1` (keeping the transition
    /// count), so the next candidate may take the lock at its next attempt. Bounded by
    /// `renew_deadline` (client-go: unbounded).
    ///
    /// Unlike client-go, a conflict is not the end: a renewal cancelled in flight may
    /// have reached the server although we never read its answer, so the version we
    /// hold is one behind our own write. On a conflict the lock is read again and, if
    /// it still names us, released at its current version. (client-go logs "Failed to
    /// release lock" and the next leader waits a whole lease duration; the e2e suite
    /// hit exactly this under load.)
    async fn release(&self) -> bool {
        if !self.is_leader() {
            return true;
        }
        let lock = self.config.lock.describe();
        match tokio::time::timeout(
            self.config.renew_deadline,
            self.release_at_current_version(),
        )
        .await
        {
            Ok(Ok(())) => {
                tracing::info!(%lock, identity = self.identity(), "released leader lease");
                true
            }
            Ok(Err(error)) => {
                tracing::error!(%lock, %error, "failed to release lock");
                false
            }
            Err(_elapsed) => {
                tracing::error!(%lock, "failed to release lock: timed out");
                false
            }
        }
    }

    /// The writes of [`release`](Self::release): at the observed version, then (after a
    /// conflict) once more at the version read back if the lock still names us.
    async fn release_at_current_version(&self) -> Result<(), ReleaseError> {
        let (mut leader_transitions, observed) = {
            let observed = self.observed.lock();
            (
                observed.record.leader_transitions,
                observed.resource_version.clone(),
            )
        };
        let mut resource_version = observed.ok_or(ReleaseError::NoVersion)?;
        let mut reread = false;
        loop {
            let now = now_micros();
            let record = LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(now),
                renew_time: Some(now),
                leader_transitions,
            };
            match self
                .config
                .lock
                .update(record.clone(), resource_version)
                .await
            {
                Ok(version) => {
                    self.set_observed_record(record, version);
                    return Ok(());
                }
                Err(error) if error.is_conflict() && !reread => {
                    reread = true;
                    let current = self.config.lock.get().await?;
                    match current {
                        Some(current) if current.record.holder_identity == self.identity() => {
                            tracing::debug!(
                                "release conflicted with our own renewal; releasing at the current version"
                            );
                            leader_transitions = current.record.leader_transitions;
                            resource_version = current.resource_version;
                        }
                        // Someone else holds it (or nobody): nothing of ours to release.
                        _ => return Ok(()),
                    }
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// client-go's `tryAcquireOrRenew`: one attempt to take or keep the lock; `true`
    /// if the lock is ours afterwards.
    ///
    /// 1. Fast path: if we are the observed leader and our lease is still valid, write
    ///    the renewed record straight away, based on the resourceVersion of our last
    ///    write. If that fails (a conflict, an error) fall through to the slow path.
    /// 2. Read the lock; if it does not exist, create it holding our record.
    /// 3. If the record differs from the last one read, remember it and **now** (our
    ///    clock) as the observation time. If somebody else holds it and
    ///    `observation time + their leaseDurationSeconds` is still in the future,
    ///    give up for now.
    /// 4. Write our record, conditional on the version just read: as the holder, keep
    ///    `acquireTime` and `leaderTransitions`; as a new holder, increment
    ///    `leaderTransitions`. A conflict means another candidate won the race.
    pub(crate) async fn try_acquire_or_renew(&self) -> bool {
        let lock = &self.config.lock;
        let now = Instant::now();
        let wall_now = self.next_renew_time();
        let mut record = LeaderElectionRecord {
            holder_identity: self.identity().to_string(),
            lease_duration_seconds: lease_duration_seconds(self.config.lease_duration),
            acquire_time: Some(wall_now),
            renew_time: Some(wall_now),
            leader_transitions: 0,
        };

        // 1. Fast path for the leader.
        let fast_path = {
            let observed = self.observed.lock();
            let leader = observed.record.holder_identity == self.identity();
            match &observed.resource_version {
                Some(rv) if leader && is_lease_valid(&observed, now) => Some((
                    observed.record.acquire_time,
                    observed.record.leader_transitions,
                    rv.clone(),
                )),
                _ => None,
            }
        };
        if let Some((acquire_time, leader_transitions, resource_version)) = fast_path {
            record.acquire_time = acquire_time;
            record.leader_transitions = leader_transitions;
            match lock.update(record.clone(), resource_version).await {
                Ok(resource_version) => {
                    self.set_observed_record(record, resource_version);
                    return true;
                }
                Err(error) => tracing::warn!(
                    lock = %lock.describe(), %error,
                    "failed to update lock optimistically, falling back to slow path"
                ),
            }
        }

        // 2. Obtain or create the record.
        let current = match lock.get().await {
            Ok(Some(current)) => current,
            Ok(None) => {
                return match lock.create(record.clone()).await {
                    Ok(resource_version) => {
                        self.set_observed_record(record, resource_version);
                        true
                    }
                    Err(error) => {
                        tracing::error!(lock = %lock.describe(), %error, "error initially creating leader election record");
                        false
                    }
                };
            }
            Err(error) => {
                tracing::error!(lock = %lock.describe(), %error, "error retrieving resource lock");
                return false;
            }
        };

        // 3. Record obtained: check the identity and the (local) time.
        let resource_version = {
            let mut observed = self.observed.lock();
            if observed.raw.as_ref() != Some(&current.record) {
                observed.record = current.record.clone();
                observed.time = Some(Instant::now());
                observed.raw = Some(current.record.clone());
            }
            observed.resource_version = Some(current.resource_version.clone());
            let holder = &current.record.holder_identity;
            let leader = observed.record.holder_identity == self.identity();
            if !holder.is_empty() && is_lease_valid(&observed, now) && !leader {
                tracing::debug!(lock = %lock.describe(), %holder, "lock is held and has not yet expired");
                return false;
            }
            // 4. Correct our record before updating.
            if leader {
                record.acquire_time = current.record.acquire_time;
                record.leader_transitions = current.record.leader_transitions;
            } else {
                record.leader_transitions = current.record.leader_transitions.saturating_add(1);
            }
            current.resource_version
        };

        match lock.update(record.clone(), resource_version).await {
            Ok(resource_version) => {
                self.set_observed_record(record, resource_version);
                true
            }
            Err(error) => {
                tracing::error!(lock = %lock.describe(), %error, "failed to update lock");
                false
            }
        }
    }

    /// The wall-clock time for the record we are about to write. If we are the
    /// observed holder, strictly after the observed `renewTime`: every renewal must
    /// *change* the record, since a change is all the others look at, even when two
    /// renewals fall within one microsecond (a clock step back, or paused-time tests).
    fn next_renew_time(&self) -> Timestamp {
        let now = now_micros();
        let observed = self.observed.lock();
        if observed.record.holder_identity != self.identity() {
            return now;
        }
        match observed.record.renew_time {
            Some(last) if last >= now => last
                .checked_add(SignedDuration::from_micros(1))
                .unwrap_or(now),
            _ => now,
        }
    }

    /// client-go's `setObservedRecord`: what we wrote is what we observe, as of now.
    fn set_observed_record(&self, record: LeaderElectionRecord, resource_version: String) {
        let mut observed = self.observed.lock();
        observed.record = record;
        observed.time = Some(Instant::now());
        observed.resource_version = Some(resource_version);
    }

    /// client-go's `maybeReportTransition`: tell `on_new_leader` about a holder we have
    /// not reported yet.
    fn maybe_report_transition(&self) {
        let leader = {
            let mut observed = self.observed.lock();
            if observed.record.holder_identity == observed.reported_leader {
                return;
            }
            observed.reported_leader = observed.record.holder_identity.clone();
            observed.reported_leader.clone()
        };
        if let Some(on_new_leader) = &self.callbacks.on_new_leader {
            on_new_leader(&leader);
        }
    }
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .field("observed", &*self.observed.lock())
            .field("running", &self.running.load(Ordering::SeqCst))
            .finish()
    }
}

/// client-go's `isLeaseValid`: the observed record's own `leaseDurationSeconds`,
/// counted from when we observed it, has not run out at `now`.
fn is_lease_valid(observed: &Observed, now: Instant) -> bool {
    let seconds = u64::try_from(observed.record.lease_duration_seconds).unwrap_or(0);
    observed.time.is_some_and(|time| {
        time.checked_add(Duration::from_secs(seconds))
            .is_none_or(|expiry| expiry > now)
    })
}

/// `wait.Jitter`: `duration` plus a random extra in `[0, factor * duration)`
/// (saturating instead of overflowing for absurd durations).
fn jitter(duration: Duration, factor: f64) -> Duration {
    let extra = duration.as_secs_f64() * rand::rng().random::<f64>() * factor;
    duration.saturating_add(Duration::try_from_secs_f64(extra).unwrap_or(Duration::MAX))
}

/// `now + duration`, or about 30 years from now if that overflows (as tokio's own
/// timers do).
fn after(duration: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(duration)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

/// Marks the elector as not running when `run` ends or is dropped.
struct RunningGuard<'a>(&'a AtomicBool);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Why [`LeaderElector::release`] could not release.
#[derive(Debug, thiserror::Error)]
enum ReleaseError {
    /// No write or read of the lock was ever observed.
    #[error("no resourceVersion observed")]
    NoVersion,
    /// The lock's read or write failed.
    #[error(transparent)]
    Lock(#[from] crate::resource_lock::LockError),
}
