//! Reconcile metrics: controller-runtime's `controller_runtime_reconcile_*` families
//! (pkg/internal/controller/metrics), fed by the controller's worker loop.
//!
//! Every time a worker has run the sync handler for one key, the loop reports *one*
//! observation: which controller, how it ended ([`ReconcileResult`]) and how long it
//! took. That becomes
//!
//! * `controller_runtime_reconcile_total{controller, result}`: result is `success`,
//!   `error`, `requeue_after` or `panic`;
//! * `controller_runtime_reconcile_errors_total{controller}`: errors *and* panics (a
//!   panic is a failed sync too, and the loop requeues it like an error);
//! * `controller_runtime_reconcile_panics_total{controller}`: panics alone;
//! * `controller_runtime_reconcile_time_seconds{controller}`: a histogram of every
//!   sync's duration, with controller-runtime's buckets (5 ms ... 60 s).
//!
//! The names are controller-runtime's, not client-go's (client-go has no reconcile
//! metrics; every Go controller built on it invents its own), because they are what
//! existing dashboards and alerts for Kubernetes operators query. One difference:
//! controller-runtime reports a panic as `result="error"` (plus the panics counter); we
//! give it its own `result="panic"`, so the total still adds up and a panic is visible
//! without a second query.
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
//! # The hook for the controller loop
//!
//! The controller crate does not know about Prometheus. It calls
//! [`observe_reconcile`], a no-op until a binary installs an observer with
//! [`set_global_reconcile_observer`] (or [`ReconcileMetrics::install_global`]); or it
//! holds an `Arc<dyn ReconcileObserver>` of its own (tests).
//!
//! ```
//! use std::time::Duration;
//! use metrics::{ReconcileMetrics, ReconcileObserver, ReconcileResult, Registry};
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
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
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

/// How a staleness-guard check ended: the `result` label of
/// `controller_freshness_checks_total`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum FreshnessResult {
    /// The caches had caught up with the key's last write: the sync ran.
    Fresh,
    /// They had not within the bound: the key was requeued with backoff, unsynced.
    Stale,
    /// A version could not be compared: the guard stepped aside, the sync ran.
    Incomparable,
}

impl FreshnessResult {
    /// The label value: `fresh`, `stale` or `incomparable`.
    pub fn as_str(self) -> &'static str {
        match self {
            FreshnessResult::Fresh => "fresh",
            FreshnessResult::Stale => "stale",
            FreshnessResult::Incomparable => "incomparable",
        }
    }
}

impl EncodeLabelValue for FreshnessResult {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

/// controller-runtime's `ReconcileTime` buckets (seconds).
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// How one sync of one key ended: the `result` label.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ReconcileResult {
    /// `Ok(Action::Done)`: converged; the key's backoff is reset.
    Success,
    /// `Err(_)`: retried with rate-limited backoff.
    Error,
    /// `Ok(Action::RequeueAfter(d))`: fine for now, look again after `d`.
    RequeueAfter,
    /// The sync handler panicked; the loop caught it and retries like an error.
    Panic,
}

impl EncodeLabelValue for ReconcileResult {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

impl ReconcileResult {
    /// Every result, for pre-creating series.
    pub const ALL: [ReconcileResult; 4] = [
        ReconcileResult::Success,
        ReconcileResult::Error,
        ReconcileResult::RequeueAfter,
        ReconcileResult::Panic,
    ];

    /// The label value: `success`, `error`, `requeue_after` or `panic`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Error => "error",
            ReconcileResult::RequeueAfter => "requeue_after",
            ReconcileResult::Panic => "panic",
        }
    }
}

impl fmt::Display for ReconcileResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Receives one observation per finished sync. Implemented by [`ReconcileMetrics`];
/// tests can implement it to record calls.
pub trait ReconcileObserver: Send + Sync {
    /// Controller `controller` finished syncing one key with `result` after `duration`.
    fn observe(&self, controller: &str, result: ReconcileResult, duration: Duration);

    /// Controller `controller` is starting: create its series at zero, so that a
    /// `rate()` over them works before the first error (controller-runtime does the
    /// same). The default does nothing.
    fn init_controller(&self, controller: &str) {
        let _ = controller;
    }

    /// Controller `controller`'s staleness guard checked a key that had a write on
    /// record, with `result`, after waiting `waited`. The default does nothing.
    fn observe_freshness(&self, controller: &str, result: FreshnessResult, waited: Duration) {
        let _ = (controller, result, waited);
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerResultLabels {
    controller: String,
    result: ReconcileResult,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FreshnessLabels {
    controller: String,
    result: FreshnessResult,
}

/// The reconcile metric families; a [`ReconcileObserver`].
#[derive(Clone)]
pub struct ReconcileMetrics {
    total: Family<ControllerResultLabels, Counter>,
    errors: Family<ControllerLabel, Counter>,
    panics: Family<ControllerLabel, Counter>,
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

    /// Makes this the process-wide observer behind [`observe_reconcile`]. Only the first
    /// observer installed counts; `false` means another one was already installed.
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
                result,
            })
            .inc();
        if matches!(result, ReconcileResult::Error | ReconcileResult::Panic) {
            self.errors.get_or_create(&label).inc();
        }
        if result == ReconcileResult::Panic {
            self.panics.get_or_create(&label).inc();
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
                result,
            });
        }
        let _ = self.errors.get_or_create(&label);
        let _ = self.panics.get_or_create(&label);
    }

    fn observe_freshness(&self, controller: &str, result: FreshnessResult, waited: Duration) {
        self.freshness_checks
            .get_or_create(&FreshnessLabels {
                controller: controller.to_string(),
                result,
            })
            .inc();
        self.freshness_wait
            .get_or_create(&ControllerLabel {
                controller: controller.to_string(),
            })
            .observe(waited.as_secs_f64());
    }
}

static GLOBAL_OBSERVER: OnceLock<Arc<dyn ReconcileObserver>> = OnceLock::new();

/// Sets the process-wide reconcile observer. Only the first call counts; it returns
/// `false` if an observer was already set.
pub fn set_global_reconcile_observer(observer: Arc<dyn ReconcileObserver>) -> bool {
    GLOBAL_OBSERVER.set(observer).is_ok()
}

/// The process-wide reconcile observer, if one is installed. A controller can fetch it
/// once when it is created instead of calling [`observe_reconcile`] every time.
pub fn global_reconcile_observer() -> Option<Arc<dyn ReconcileObserver>> {
    GLOBAL_OBSERVER.get().cloned()
}

/// Reports one finished sync to the process-wide observer; does nothing (one atomic
/// load) when none is installed. This is the call the controller loop makes.
pub fn observe_reconcile(controller: &str, result: ReconcileResult, duration: Duration) {
    if let Some(observer) = GLOBAL_OBSERVER.get() {
        observer.observe(controller, result, duration);
    }
}

/// Reports one staleness-guard check to the process-wide observer (see
/// [`ReconcileObserver::observe_freshness`]); one atomic load when none is installed.
pub fn observe_freshness(controller: &str, result: FreshnessResult, waited: Duration) {
    if let Some(observer) = GLOBAL_OBSERVER.get() {
        observer.observe_freshness(controller, result, waited);
    }
}

/// Creates `controller`'s series at zero in the process-wide observer, if one is
/// installed; the controller loop calls it once when it starts.
pub fn init_reconcile_metrics(controller: &str) {
    if let Some(observer) = GLOBAL_OBSERVER.get() {
        observer.init_controller(controller);
    }
}
