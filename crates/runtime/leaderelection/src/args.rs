//! The leader election command-line flags of Kubernetes' components
//! (component-base's `--leader-elect*`), as a clap [`Args`] struct that a binary
//! flattens into its own:
//!
//! ```
//! use clap::Parser;
//! use leaderelection::LeaderElectionArgs;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     leader_election: LeaderElectionArgs,
//! }
//!
//! let cli = Cli::parse_from(["foo-controller", "--leader-elect", "--leader-elect-lease-duration=1m"]);
//! assert!(cli.leader_election.leader_elect);
//! assert_eq!(cli.leader_election.lease_duration, std::time::Duration::from_secs(60));
//! ```
//!
//! Every flag falls back to an environment variable (handy in a Deployment), and
//! durations are written the Go way (`15s`, `1m30s`, `500ms`; see
//! [`cliflag::parse_duration`], Go's `time.ParseDuration`). `--leader-elect` is a
//! Go-style boolean: `--leader-elect`, `--leader-elect=true` or `--leader-elect=false`.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use cliflag::parse_duration;

use crate::config::LeaderElectionConfig;
use crate::lease_lock::LeaseLock;
use crate::resource_lock::ResourceLock;

/// Leader election flags; `#[command(flatten)]` them into a binary's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct LeaderElectionArgs {
    /// Start a leader election client and gain leadership before executing the main
    /// loop. Enable this when running replicated components for high availability.
    #[arg(
        long = "leader-elect",
        env = "LEADER_ELECT",
        default_value_t = false,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    pub leader_elect: bool,

    /// How long non-leader candidates wait, after observing a leadership renewal,
    /// before attempting to acquire leadership of a led but unrenewed leader slot.
    #[arg(
        long = "leader-elect-lease-duration",
        env = "LEADER_ELECT_LEASE_DURATION",
        default_value = "15s",
        value_parser = parse_duration,
        value_name = "DURATION",
    )]
    pub lease_duration: Duration,

    /// How long the acting leader retries refreshing leadership before it stops
    /// leading. Must be shorter than the lease duration.
    #[arg(
        long = "leader-elect-renew-deadline",
        env = "LEADER_ELECT_RENEW_DEADLINE",
        default_value = "10s",
        value_parser = parse_duration,
        value_name = "DURATION",
    )]
    pub renew_deadline: Duration,

    /// How long clients wait between attempts to acquire and renew leadership.
    #[arg(
        long = "leader-elect-retry-period",
        env = "LEADER_ELECT_RETRY_PERIOD",
        default_value = "2s",
        value_parser = parse_duration,
        value_name = "DURATION",
    )]
    pub retry_period: Duration,

    /// The namespace of the Lease used for locking (default: chosen by the binary,
    /// usually its own namespace).
    #[arg(
        long = "leader-elect-resource-namespace",
        env = "LEADER_ELECT_RESOURCE_NAMESPACE",
        value_name = "NAMESPACE"
    )]
    pub resource_namespace: Option<String>,

    /// The name of the Lease used for locking (default: chosen by the binary, usually
    /// its own name).
    #[arg(
        long = "leader-elect-resource-name",
        env = "LEADER_ELECT_RESOURCE_NAME",
        value_name = "NAME"
    )]
    pub resource_name: Option<String>,
}

impl Default for LeaderElectionArgs {
    /// The flag defaults: off, 15 s / 10 s / 2 s, no namespace or name.
    fn default() -> Self {
        Self {
            leader_elect: false,
            lease_duration: crate::config::DEFAULT_LEASE_DURATION,
            renew_deadline: crate::config::DEFAULT_RENEW_DEADLINE,
            retry_period: crate::config::DEFAULT_RETRY_PERIOD,
            resource_namespace: None,
            resource_name: None,
        }
    }
}

impl LeaderElectionArgs {
    /// A [`LeaseLock`] on `--leader-elect-resource-namespace` /
    /// `--leader-elect-resource-name`, or on the binary's defaults when unset.
    pub fn lease_lock(
        &self,
        client: kube::Client,
        default_namespace: &str,
        default_name: &str,
        identity: impl Into<String>,
    ) -> LeaseLock {
        LeaseLock::new(
            client,
            self.resource_namespace
                .as_deref()
                .unwrap_or(default_namespace),
            self.resource_name.as_deref().unwrap_or(default_name),
            identity,
        )
    }

    /// A [`LeaderElectionConfig`] for `lock` with these durations (validated by
    /// [`LeaderElector::new`](crate::LeaderElector::new)). `release_on_cancel` is off;
    /// set it if the binary stops all leader work before it cancels the election.
    pub fn config(&self, lock: Arc<dyn ResourceLock>) -> LeaderElectionConfig {
        LeaderElectionConfig {
            lease_duration: self.lease_duration,
            renew_deadline: self.renew_deadline,
            retry_period: self.retry_period,
            ..LeaderElectionConfig::new(lock)
        }
    }
}
