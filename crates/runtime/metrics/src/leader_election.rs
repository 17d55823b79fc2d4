//! Leader status: client-go's `leader_election_master_status{name}` gauge
//! (component-base `metrics/prometheus/clientgo/leaderelection`).
//!
//! With two or more replicas of a controller only the leader works; the others wait.
//! The gauge says which one is which: `1` on the replica holding the lease `name`, `0`
//! on the standbys. `sum by (name) (leader_election_master_status)` should be exactly
//! 1 - zero means nobody is leading (nothing gets reconciled), two means a split brain.
//!
//! The leader elector itself does not know about Prometheus: the binary calls
//! [`LeaderElectionMetrics::on`] from `on_started_leading` and
//! [`LeaderElectionMetrics::off`] from `on_stopped_leading` (and `off` at start-up,
//! so a standby reports 0 rather than nothing).
//!
//! ```
//! let registry = metrics::Registry::new();
//! let leader = metrics::LeaderElectionMetrics::new(&registry);
//! leader.off("foo-controller");
//! assert!(registry.encode().unwrap().contains("leader_election_master_status{name=\"foo-controller\"} 0\n"));
//! leader.on("foo-controller");
//! assert!(registry.encode().unwrap().contains("leader_election_master_status{name=\"foo-controller\"} 1\n"));
//! ```

use std::fmt;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use crate::adapters::NameLabel;
use crate::registry::Registry;

/// The metric name, as client-go registers it.
pub const LEADER_ELECTION_MASTER_STATUS: &str = "leader_election_master_status";

/// The leader status gauge family. Clones share the family.
#[derive(Clone)]
pub struct LeaderElectionMetrics {
    status: Family<NameLabel, Gauge>,
}

impl fmt::Debug for LeaderElectionMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionMetrics")
            .finish_non_exhaustive()
    }
}

impl LeaderElectionMetrics {
    /// Creates the family and registers it in `registry`.
    pub fn new(registry: &Registry) -> Self {
        let metrics = Self {
            status: Family::default(),
        };
        registry.register(
            LEADER_ELECTION_MASTER_STATUS,
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates \
             backup, 1 indicates master. 'name' is the string used to identify the lease. \
             Please make sure to group by name",
            metrics.status.clone(),
        );
        metrics
    }

    /// This replica now holds lease `name` (client-go's `leaderMetricsAdapter.leaderOn`).
    pub fn on(&self, name: &str) {
        self.set_leading(name, true);
    }

    /// This replica does not (or no longer) hold lease `name`.
    pub fn off(&self, name: &str) {
        self.set_leading(name, false);
    }

    /// Sets the status of lease `name`: 1 when `leading`, else 0.
    pub fn set_leading(&self, name: &str, leading: bool) {
        self.status
            .get_or_create(&NameLabel::new(name))
            .set(i64::from(leading));
    }
}
