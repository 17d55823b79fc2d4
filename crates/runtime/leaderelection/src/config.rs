//! client-go's `LeaderElectionConfig` and the checks `NewLeaderElector` makes.
//!
//! Three durations tune the election, and their order is what keeps it safe:
//!
//! * `lease_duration` (15 s): how long a candidate waits, after it last saw the record
//!   change, before it may take the lock over. Measured on the candidate's clock.
//! * `renew_deadline` (10 s): how long the leader keeps retrying a failing renewal
//!   before it gives up leadership. Must be **shorter** than `lease_duration`: the
//!   leader has to stop acting as leader before any other candidate may start.
//! * `retry_period` (2 s): the pause between attempts (acquire, renew). Must be
//!   clearly shorter than `renew_deadline` (by [`JITTER_FACTOR`]) so that a leader
//!   gets several renewal attempts before its deadline.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::resource_lock::ResourceLock;

/// client-go's `JitterFactor`: acquisition attempts are spaced `retry_period` plus a
/// random extra of up to `1.2 * retry_period` (`wait.JitterUntil`), so candidates that
/// start together do not hit the API server in lockstep.
pub const JITTER_FACTOR: f64 = 1.2;

/// The default `lease_duration` of Kubernetes' core components (15 s).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// The default `renew_deadline` of Kubernetes' core components (10 s).
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// The default `retry_period` of Kubernetes' core components (2 s).
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// client-go's `LeaderElectionConfig` (the callbacks are passed separately, as
/// [`LeaderCallbacks`](crate::LeaderCallbacks)).
#[derive(Clone)]
pub struct LeaderElectionConfig {
    /// Where the election record lives, and who we are ([`ResourceLock::identity`]).
    pub lock: Arc<dyn ResourceLock>,
    /// How long non-leaders wait, after they last observed a change of the record,
    /// before they may take the lock over. Written into the record (rounded up to
    /// whole seconds), so it is the *holder's* setting that the others apply.
    pub lease_duration: Duration,
    /// How long the leader retries a failing renewal before it stops leading.
    pub renew_deadline: Duration,
    /// The pause between acquisition or renewal attempts.
    pub retry_period: Duration,
    /// Give the lock up (empty holder, `leaseDurationSeconds: 1`) when `run` is
    /// cancelled, so the next candidate takes over within about a `retry_period`
    /// instead of a `lease_duration`. The lock is given up only after the
    /// `on_started_leading` future has returned (its token is cancelled first), so
    /// the next leader never starts while this one still works; a future that does
    /// not return within `renew_deadline` keeps the lock until it expires. Make
    /// everything the leader does part of that future.
    pub release_on_cancel: bool,
    /// A name for logs.
    pub name: String,
}

impl LeaderElectionConfig {
    /// A config for `lock` with Kubernetes' defaults: 15 s lease, 10 s renew
    /// deadline, 2 s retry period, no release on cancel, named after the lock.
    pub fn new(lock: Arc<dyn ResourceLock>) -> Self {
        let name = lock.describe();
        Self {
            lock,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
            name,
        }
    }

    /// The checks of client-go's `NewLeaderElector`, in the same order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseDurationNotGreaterThanRenewDeadline {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
            });
        }
        // (A product too large for a Duration is larger than any renew deadline.)
        let jittered_retry =
            Duration::try_from_secs_f64(self.retry_period.as_secs_f64() * JITTER_FACTOR);
        if jittered_retry.is_err() || jittered_retry.is_ok_and(|j| self.renew_deadline <= j) {
            return Err(
                ConfigError::RenewDeadlineNotGreaterThanJitteredRetryPeriod {
                    renew_deadline: self.renew_deadline,
                    retry_period: self.retry_period,
                },
            );
        }
        if self.lease_duration.is_zero() {
            return Err(ConfigError::LeaseDurationNotPositive);
        }
        if self.renew_deadline.is_zero() {
            return Err(ConfigError::RenewDeadlineNotPositive);
        }
        if self.retry_period.is_zero() {
            return Err(ConfigError::RetryPeriodNotPositive);
        }
        if self.lock.identity().is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        Ok(())
    }
}

impl fmt::Debug for LeaderElectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field("lock", &self.lock.describe())
            .field("identity", &self.lock.identity())
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("name", &self.name)
            .finish()
    }
}

/// A [`LeaderElectionConfig`] that client-go's `NewLeaderElector` would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `lease_duration <= renew_deadline`: a leader could still be acting while the
    /// others already consider its lease expired.
    #[error(
        "leaseDuration must be greater than renewDeadline (leaseDuration {lease_duration:?}, renewDeadline {renew_deadline:?})"
    )]
    LeaseDurationNotGreaterThanRenewDeadline {
        /// The configured lease duration.
        lease_duration: Duration,
        /// The configured renew deadline.
        renew_deadline: Duration,
    },
    /// `renew_deadline <= JITTER_FACTOR * retry_period`: the leader would get at most
    /// one renewal attempt before its deadline.
    #[error(
        "renewDeadline must be greater than retryPeriod*JitterFactor (renewDeadline {renew_deadline:?}, retryPeriod {retry_period:?}, JitterFactor 1.2)"
    )]
    RenewDeadlineNotGreaterThanJitteredRetryPeriod {
        /// The configured renew deadline.
        renew_deadline: Duration,
        /// The configured retry period.
        retry_period: Duration,
    },
    /// `lease_duration` is zero.
    #[error("leaseDuration must be greater than zero")]
    LeaseDurationNotPositive,
    /// `renew_deadline` is zero.
    #[error("renewDeadline must be greater than zero")]
    RenewDeadlineNotPositive,
    /// `retry_period` is zero.
    #[error("retryPeriod must be greater than zero")]
    RetryPeriodNotPositive,
    /// The lock's identity is empty, which every candidate would read as "nobody
    /// holds the lock".
    #[error("Lock identity is empty")]
    EmptyIdentity,
}
