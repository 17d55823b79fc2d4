//! A replica's configuration in a shard group ([`ShardConfig`], checked as leader
//! election checks its own) and what its coordinator reports ([`ShardStatus`]).

use std::time::Duration;

use cache::shard::RangeSet;

/// How a replica takes part in a shard group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardConfig {
    /// The group's name: replicas of one controller share it (the Leases' label).
    pub group: String,
    /// This replica's identity; unique in the group.
    pub identity: String,
    /// How long a member stays live without renewing.
    pub lease_duration: Duration,
    /// How long this replica works on without a successful renewal.
    pub renew_deadline: Duration,
    /// How often the loop renews and looks at the members.
    pub retry_period: Duration,
}

impl ShardConfig {
    /// How long a replica that just joined only announces itself before it caches or
    /// claims anything: two retry periods, so that replicas started together have
    /// each written their Lease and been seen (rule 0 in the module docs).
    pub fn join_grace(&self) -> Duration {
        self.retry_period * 2
    }

    /// Checks `retry_period < renew_deadline < lease_duration` (the margins the
    /// handover's safety rests on, as in leader election).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.group.is_empty() {
            return Err(ConfigError("the shard group name is empty".into()));
        }
        if self.renew_deadline >= self.lease_duration {
            return Err(ConfigError(format!(
                "shard renew deadline ({:?}) must be shorter than the lease duration ({:?})",
                self.renew_deadline, self.lease_duration
            )));
        }
        if self.retry_period >= self.renew_deadline {
            return Err(ConfigError(format!(
                "shard retry period ({:?}) must be shorter than the renew deadline ({:?})",
                self.retry_period, self.renew_deadline
            )));
        }
        Ok(())
    }
}

/// An invalid [`ShardConfig`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// What the coordinator last saw and did (the pipeline page, metrics, tests).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardStatus {
    /// The live members, sorted (this replica included).
    pub members: Vec<String>,
    /// The ranges this replica should hold.
    pub target: RangeSet,
    /// The ranges it holds (syncs admitted).
    pub held: RangeSet,
    /// Handovers so far: ranges gained and released.
    pub gained: u64,
    /// See `gained`.
    pub released: u64,
}
