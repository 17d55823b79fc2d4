//! Reconcile metrics: the hook a Prometheus (or any) metrics library plugs into, the
//! way the workqueue (`workqueue::MetricsProvider`) and the reflector
//! (`cache::metrics::ReflectorMetricsProvider`) report theirs.
//!
//! # Why a hook, and why it is off by default
//!
//! This crate does not depend on a metrics library. After each sync the loop reports
//! *one* observation (which controller, how the sync ended, how long it took) to a
//! [`ReconcileObserver`], and the staleness guard reports each check of a key that had
//! a write on record. Whoever installs the observer with
//! [`set_global_reconcile_observer`] decides what that becomes; the `metrics` crate's
//! `ReconcileMetrics` turns it into controller-runtime's
//! `controller_runtime_reconcile_total{controller,result}`,
//! `controller_runtime_reconcile_time_seconds` and friends. A binary wires the three
//! layers the same way:
//!
//! ```text
//! workqueue::set_global_metrics_provider(...)                 // queue depth, adds, latency, ...
//! cache::metrics::set_global_reflector_metrics_provider(...)  // lists, watches, errors, ...
//! controller::metrics::set_global_reconcile_observer(...)     // syncs, their results and time
//! ```
//!
//! (`metrics::Metrics::install_global` does all three.) With no observer installed,
//! each report is one atomic load: metrics cost nothing unless they are on.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//! use controller::metrics::{ReconcileObserver, ReconcileResult};
//!
//! /// Counts failed syncs.
//! #[derive(Default)]
//! struct Failures(AtomicUsize);
//!
//! impl ReconcileObserver for Failures {
//!     fn observe(&self, _controller: &str, result: ReconcileResult, _took: Duration) {
//!         if matches!(result, ReconcileResult::Error | ReconcileResult::Panic) {
//!             self.0.fetch_add(1, Ordering::Relaxed);
//!         }
//!     }
//! }
//!
//! let failures = Arc::new(Failures::default());
//! failures.observe("foo", ReconcileResult::Error, Duration::from_millis(3));
//! assert_eq!(failures.0.load(Ordering::Relaxed), 1);
//! // In a binary, before the controllers start:
//! // controller::metrics::set_global_reconcile_observer(failures);
//! ```

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How one sync of one key ended: the `result` label of
/// `controller_runtime_reconcile_total`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ReconcileResult {
    /// `Ok(Action::Done)`: converged; the key's backoff is reset.
    Success,
    /// `Err(_)`: retried with rate-limited backoff.
    Error,
    /// `Ok(Action::RequeueAfter(d))` (or `RequeueWithPriority`): fine for now, look
    /// again after `d`.
    RequeueAfter,
    /// The sync handler panicked; the loop caught it and retries like an error.
    Panic,
    /// The sync ran past the reconcile timeout and was cancelled; retried like an
    /// error (controller-runtime counts it as `error` plus
    /// `controller_runtime_reconcile_timeouts_total`; here it has its own result, as a
    /// panic has, and the same counter).
    Timeout,
}

impl ReconcileResult {
    /// Every result, for pre-creating series.
    pub const ALL: [ReconcileResult; 5] = [
        ReconcileResult::Success,
        ReconcileResult::Error,
        ReconcileResult::RequeueAfter,
        ReconcileResult::Panic,
        ReconcileResult::Timeout,
    ];

    /// The label value: `success`, `error`, `requeue_after` or `panic`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Error => "error",
            ReconcileResult::RequeueAfter => "requeue_after",
            ReconcileResult::Panic => "panic",
            ReconcileResult::Timeout => "timeout",
        }
    }
}

impl fmt::Display for ReconcileResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a staleness-guard check ended (see [`crate::freshness`]): the `result` label of
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

impl fmt::Display for FreshnessResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Receives one observation per finished sync (and per staleness-guard check).
/// Implemented by the `metrics` crate's `ReconcileMetrics`; tests can implement it to
/// record calls.
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

static GLOBAL_OBSERVER: OnceLock<Arc<dyn ReconcileObserver>> = OnceLock::new();

/// Sets the process-wide reconcile observer. Only the first call counts; it returns
/// `false` if an observer was already set.
pub fn set_global_reconcile_observer(observer: Arc<dyn ReconcileObserver>) -> bool {
    GLOBAL_OBSERVER.set(observer).is_ok()
}

/// The process-wide reconcile observer, if one is installed.
pub fn global_reconcile_observer() -> Option<Arc<dyn ReconcileObserver>> {
    GLOBAL_OBSERVER.get().cloned()
}

/// Reports one finished sync to the process-wide observer; does nothing (one atomic
/// load) when none is installed. The [`Controller`](crate::Controller) loop calls it
/// after every sync; a hand-written loop can report the same way.
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
/// installed; the loop calls it once when its workers start.
pub fn init_reconcile_metrics(controller: &str) {
    if let Some(observer) = GLOBAL_OBSERVER.get() {
        observer.init_controller(controller);
    }
}
