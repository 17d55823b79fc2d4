//! The `--shard-*` flags, as a clap [`Args`] struct a binary flattens into its own:
//!
//! ```
//! use clap::Parser;
//! use sharding::ShardArgs;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     shard: ShardArgs,
//! }
//!
//! let cli = Cli::parse_from(["sample-controller", "--shard-group", "sample-controller"]);
//! assert_eq!(cli.shard.shard_group.as_deref(), Some("sample-controller"));
//! assert_eq!(cli.shard.shard_lease_duration, std::time::Duration::from_secs(15));
//! ```
//!
//! Every flag falls back to an environment variable; durations are written the Go
//! way (`15s`, `1m30s`; [`cliflag::parse_duration`]). The defaults are leader
//! election's (15 s, 10 s, 2 s), for the same reasons.

use std::time::Duration;

use clap::Args;
use cliflag::parse_duration;

use crate::config::ShardConfig;

/// Sharding flags; `#[command(flatten)]` them into a binary's arguments. (The fields
/// carry the `shard_` prefix because clap names arguments after fields, and leader
/// election's flags, flattened beside these, have a `lease_duration` too.)
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct ShardArgs {
    /// Run as one active replica of a shard group with this name: every replica
    /// caches and reconciles only its share of the objects (README "Scaling out").
    /// Cannot be combined with --leader-elect.
    #[arg(long = "shard-group", env = "SHARD_GROUP", value_name = "NAME")]
    pub shard_group: Option<String>,

    /// How long a replica stays a member without renewing its Lease; after that the
    /// others take over its ranges.
    #[arg(long = "shard-lease-duration", env = "SHARD_LEASE_DURATION", default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    pub shard_lease_duration: Duration,

    /// How long a replica keeps working without a successful renewal. Must be
    /// shorter than the lease duration.
    #[arg(long = "shard-renew-deadline", env = "SHARD_RENEW_DEADLINE", default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub shard_renew_deadline: Duration,

    /// How often a replica renews its Lease and looks at the other members.
    #[arg(long = "shard-retry-period", env = "SHARD_RETRY_PERIOD", default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub shard_retry_period: Duration,

    /// The namespace of the members' Leases (default: the binary's own namespace).
    #[arg(
        long = "shard-lease-namespace",
        env = "SHARD_LEASE_NAMESPACE",
        value_name = "NAMESPACE"
    )]
    pub shard_lease_namespace: Option<String>,
}

impl Default for ShardArgs {
    fn default() -> Self {
        Self {
            shard_group: None,
            shard_lease_duration: Duration::from_secs(15),
            shard_renew_deadline: Duration::from_secs(10),
            shard_retry_period: Duration::from_secs(2),
            shard_lease_namespace: None,
        }
    }
}

impl ShardArgs {
    /// The configuration for `identity`, if `--shard-group` is set.
    pub fn config(&self, identity: impl Into<String>) -> Option<ShardConfig> {
        Some(ShardConfig {
            group: self.shard_group.clone()?,
            identity: identity.into(),
            lease_duration: self.shard_lease_duration,
            renew_deadline: self.shard_renew_deadline,
            retry_period: self.shard_retry_period,
        })
    }
}
