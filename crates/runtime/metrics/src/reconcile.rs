//! Reconcile metrics: controller-runtime's `controller_runtime_reconcile_*` families
//! (pkg/internal/controller/metrics), fed by the controller's worker loop.
//!
//! Every time a worker has run the sync handler for one key, the loop reports *one*
//! observation: which controller, how it ended ([`ReconcileResult`]) and how long it
//! took. That becomes
//!
//! * `controller_runtime_reconcile_total{controller, result}`: result is `success`,
//!   `error`, `requeue_after`, `panic` or `timeout`;
//! * `controller_runtime_reconcile_errors_total{controller}`: errors, panics and
//!   timeouts (each is a failed sync, and the loop requeues it like an error);
//! * `controller_runtime_reconcile_panics_total{controller}`: panics alone;
//! * `controller_runtime_reconcile_timeouts_total{controller}`: syncs cancelled by the
//!   reconcile timeout (`--reconcile-timeout`; controller-runtime v0.23's name);
//! * `controller_runtime_reconcile_time_seconds{controller}`: a histogram of every
//!   sync's duration, with controller-runtime's buckets (5 ms ... 60 s).
//!
//! The names are controller-runtime's, not client-go's (client-go has no reconcile
//! metrics; every Go controller built on it invents its own), because they are what
//! existing dashboards and alerts for Kubernetes operators query. One difference:
//! controller-runtime reports a panic as `result="error"` (plus the panics counter); we
//! give it its own `result="panic"`, so the total still adds up and a panic is visible
//! without a second query; a timed-out sync likewise gets `result="timeout"`.
//!
//! The staleness guard (the controller crate's `freshness` module, KEP-5647) reports
//! through the same hook, for keys that had a write on record before their sync:
//!
//! * `controller_freshness_checks_total{controller, result}`: result is `fresh` (the
//!   caches had caught up, at once or after a wait), `stale` (the bound passed: the
//!   key was requeued without a sync) or `incomparable` (the guard stepped aside);
//! * `controller_freshness_wait_seconds{controller}`: how long those checks waited.
//!
//! Neither client-go nor controller-runtime exports these; the names follow the
//! reconcile families' style.
//!
//! # The hook in the controller loop
//!
//! The controller crate does not know about Prometheus: it reports to a
//! `controller::metrics::ReconcileObserver`, a no-op until one is installed
//! (`controller::metrics::set_global_reconcile_observer`), as the workqueue and the
//! reflector do with their providers. [`ReconcileMetrics`] is that observer;
//! [`ReconcileMetrics::install_global`] (or [`Metrics::install_global`](crate::Metrics::install_global))
//! installs it.
//!
//! ```
//! use std::time::Duration;
//! use controller::metrics::{ReconcileObserver, ReconcileResult};
//! use metrics::{ReconcileMetrics, Registry};
//!
//! let registry = Registry::new();
//! let reconcile = ReconcileMetrics::new(&registry);
//! reconcile.init_controller("foo");
//! reconcile.observe("foo", ReconcileResult::Error, Duration::from_millis(20));
//! let text = registry.encode().unwrap();
//! assert!(text.contains(r#"controller_runtime_reconcile_total{controller="foo",result="error"} 1"#));
//! assert!(text.contains(r#"controller_runtime_reconcile_total{controller="foo",result="success"} 0"#));
//! assert!(text.contains(r#"controller_runtime_reconcile_errors_total{controller="foo"} 1"#));
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use controller::metrics::{
    FreshnessResult, ReconcileObserver, ReconcileResult, set_global_reconcile_observer,
};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use crate::registry::{Registry, counter_family_name};

/// The metric names, as controller-runtime registers them.
pub mod names {
    /// Counter: reconciliations per controller and result.
    pub const RECONCILE_TOTAL: &str = "controller_runtime_reconcile_total";
    /// Counter: failed reconciliations (errors and panics) per controller.
    pub const RECONCILE_ERRORS: &str = "controller_runtime_reconcile_errors_total";
    /// Counter: reconciliations that panicked, per controller.
    pub const RECONCILE_PANICS: &str = "controller_runtime_reconcile_panics_total";
    /// Counter: reconciliations cancelled by the reconcile timeout, per controller.
    pub const RECONCILE_TIMEOUTS: &str = "controller_runtime_reconcile_timeouts_total";
    /// Histogram: seconds per reconciliation, per controller.
    pub const RECONCILE_TIME: &str = "controller_runtime_reconcile_time_seconds";
    /// Counter: staleness-guard checks per controller and result.
    pub const FRESHNESS_CHECKS: &str = "controller_freshness_checks_total";
    /// Histogram: seconds a staleness-guard check waited for the caches.
    pub const FRESHNESS_WAIT: &str = "controller_freshness_wait_seconds";
}

/// Buckets for the staleness guard's waits (seconds): mostly milliseconds, up to the
/// guard's bound.
const FRESHNESS_WAIT_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// controller-runtime's `ReconcileTime` buckets (seconds).
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerResultLabels {
    controller: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FreshnessLabels {
    controller: String,
    result: &'static str,
}

/// The reconcile metric families; the controller loop's [`ReconcileObserver`].
#[derive(Clone)]
pub struct ReconcileMetrics {
    total: Family<ControllerResultLabels, Counter>,
    errors: Family<ControllerLabel, Counter>,
    panics: Family<ControllerLabel, Counter>,
    timeouts: Family<ControllerLabel, Counter>,
    time: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    freshness_checks: Family<FreshnessLabels, Counter>,
    freshness_wait: Family<ControllerLabel, Histogram, fn() -> Histogram>,
}

impl fmt::Debug for ReconcileMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileMetrics").finish_non_exhaustive()
    }
}

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

fn freshness_wait_histogram() -> Histogram {
    Histogram::new(FRESHNESS_WAIT_BUCKETS)
}

impl ReconcileMetrics {
    /// Creates the families and registers them in `registry`.
    pub fn new(registry: &Registry) -> Self {
        let metrics = Self {
            total: Family::default(),
            errors: Family::default(),
            panics: Family::default(),
            timeouts: Family::default(),
            time: Family::new_with_constructor(reconcile_time_histogram),
            freshness_checks: Family::default(),
            freshness_wait: Family::new_with_constructor(freshness_wait_histogram),
        };
        registry.register(
            counter_family_name(names::RECONCILE_TOTAL),
            "Total number of reconciliations per controller",
            metrics.total.clone(),
        );
        registry.register(
            counter_family_name(names::RECONCILE_ERRORS),
            "Total number of reconciliation errors per controller",
            metrics.errors.clone(),
        );
        registry.register(
            counter_family_name(names::RECONCILE_PANICS),
            "Total number of reconciliation panics per controller",
            metrics.panics.clone(),
        );
        registry.register(
            counter_family_name(names::RECONCILE_TIMEOUTS),
            "Total number of reconciliation timeouts per controller",
            metrics.timeouts.clone(),
        );
        registry.register(
            names::RECONCILE_TIME,
            "Length of time per reconciliation per controller",
            metrics.time.clone(),
        );
        registry.register(
            counter_family_name(names::FRESHNESS_CHECKS),
            "Staleness-guard checks of keys with a write on record, per controller and result",
            metrics.freshness_checks.clone(),
        );
        registry.register(
            names::FRESHNESS_WAIT,
            "Seconds a staleness-guard check waited for the informer caches, per controller",
            metrics.freshness_wait.clone(),
        );
        metrics
    }

    /// Makes this the process-wide observer the controller loop reports to
    /// (`controller::metrics::set_global_reconcile_observer`). Only the first observer
    /// installed counts; `false` means another one was already installed.
    pub fn install_global(&self) -> bool {
        set_global_reconcile_observer(Arc::new(self.clone()))
    }
}

impl ReconcileObserver for ReconcileMetrics {
    fn observe(&self, controller: &str, result: ReconcileResult, duration: Duration) {
        let label = ControllerLabel {
            controller: controller.to_string(),
        };
        self.total
            .get_or_create(&ControllerResultLabels {
                controller: label.controller.clone(),
                result: result.as_str(),
            })
            .inc();
        if matches!(
            result,
            ReconcileResult::Error | ReconcileResult::Panic | ReconcileResult::Timeout
        ) {
            self.errors.get_or_create(&label).inc();
        }
        if result == ReconcileResult::Panic {
            self.panics.get_or_create(&label).inc();
        }
        if result == ReconcileResult::Timeout {
            self.timeouts.get_or_create(&label).inc();
        }
        self.time
            .get_or_create(&label)
            .observe(duration.as_secs_f64());
    }

    fn init_controller(&self, controller: &str) {
        let label = ControllerLabel {
            controller: controller.to_string(),
        };
        for result in ReconcileResult::ALL {
            let _ = self.total.get_or_create(&ControllerResultLabels {
                controller: label.controller.clone(),
                result: result.as_str(),
            });
        }
        let _ = self.errors.get_or_create(&label);
        let _ = self.panics.get_or_create(&label);
        let _ = self.timeouts.get_or_create(&label);
    }

    fn observe_freshness(&self, controller: &str, result: FreshnessResult, waited: Duration) {
        self.freshness_checks
            .get_or_create(&FreshnessLabels {
                controller: controller.to_string(),
                result: result.as_str(),
            })
            .inc();
        self.freshness_wait
            .get_or_create(&ControllerLabel {
                controller: controller.to_string(),
            })
            .observe(waited.as_secs_f64());
    }
}
