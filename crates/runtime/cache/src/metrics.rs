//! Reflector metrics: the hook a Prometheus (or any) metrics library plugs into, in the
//! shape of client-go's `cache.MetricsProvider` (tools/cache/reflector_metrics.go).
//!
//! # Why a provider, and why it is off by default
//!
//! `cache` does not depend on a metrics library. A [`Reflector`](crate::Reflector) asks a
//! [`ReflectorMetricsProvider`] for one metric object per (metric, reflector name) when
//! it is created, and then only calls `inc` / `observe` / `set` on them. Whoever installs
//! the provider (the `metrics` crate) decides what those objects are. This is exactly how
//! the workqueue crate reports its metrics (`workqueue::MetricsProvider`), so both layers
//! are wired the same way in a binary:
//!
//! ```text
//! workqueue::set_global_metrics_provider(...)          // queue depth, adds, latency, ...
//! cache::metrics::set_global_reflector_metrics_provider(...) // lists, watches, errors, ...
//! ```
//!
//! With no provider installed a reflector holds `None` and every hook is a single branch
//! on that `Option`: metrics cost nothing unless they are on.
//!
//! # What client-go did, and what we keep
//!
//! client-go's reflectors used to report `reflector_lists_total`,
//! `reflector_list_duration_seconds`, `reflector_items_per_list`,
//! `reflector_watches_total`, `reflector_short_watches_total`,
//! `reflector_watch_duration_seconds`, `reflector_items_per_watch` and
//! `reflector_last_resource_version`, labelled with the reflector's name. Kubernetes 1.14
//! stopped *registering* them (the provider interface is still there, as a no-op),
//! because reflector names then contained a random suffix per informer and every new
//! informer created new time series for ever: an unbounded-cardinality leak in the
//! kubelet. Our reflector names are the informer names a program chooses
//! (`"configmaps"`, `"foos"`), stable across restarts, so the leak does not apply and the
//! series are worth having: "is my informer relisting in a loop?" and "has my watch been
//! failing for ten minutes?" are the first questions when a controller misbehaves.
//!
//! We keep client-go's names where they exist and add the two error counters it never
//! had ([`names::LIST_ERRORS`], [`names::WATCH_ERRORS`]). The watch duration and items
//! per watch histograms are left out: a healthy watch lasts its 5-10 minute server
//! timeout, so they say little that the counters do not.
//!
//! A `410 Gone` is **not** counted as a watch error: etcd compaction makes it part of
//! normal life, and the relist it causes already shows in [`names::LISTS`].

use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The metric names the reflector's hooks feed; each carries the reflector's name as
/// label `name`. A provider should expose them under exactly these names.
pub mod names {
    /// Counter: list attempts (the first list and every relist), failed or not.
    pub const LISTS: &str = "reflector_lists_total";
    /// Counter: list attempts that failed (any error, including `410 Gone`).
    pub const LIST_ERRORS: &str = "reflector_list_errors_total";
    /// Histogram: seconds a successful list (all its pages) took.
    pub const LIST_DURATION: &str = "reflector_list_duration_seconds";
    /// Histogram: objects returned by a successful list.
    pub const ITEMS_PER_LIST: &str = "reflector_items_per_list";
    /// Counter: watches started (or attempted).
    pub const WATCHES: &str = "reflector_watches_total";
    /// Counter: watches the server closed within a second without sending anything (a
    /// sign of a misbehaving server or proxy; the reflector backs off after each).
    pub const SHORT_WATCHES: &str = "reflector_short_watches_total";
    /// Counter: watches that could not be started or ended with an error other than
    /// `410 Gone`.
    pub const WATCH_ERRORS: &str = "reflector_watch_errors_total";
    /// Gauge: the last resourceVersion seen (list, event or bookmark), when it is a
    /// number. Resource versions are opaque to clients; the API server's are etcd
    /// revisions, so the gauge shows whether the reflector is keeping up.
    pub const LAST_RESOURCE_VERSION: &str = "reflector_last_resource_version";
    /// Gauge: objects the informer's type cannot decode, left out of its cache
    /// ([`crate::unreadable`]); not in client-go, whose list fails on the first one.
    pub const UNREADABLE_OBJECTS: &str = "reflector_unreadable_objects";
}

/// A gauge nobody reads: the default of the provider's newer hooks.
struct Unobserved;

impl SettableGaugeMetric for Unobserved {
    fn set(&self, _: f64) {}
}

/// A monotonically increasing counter.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observed values.
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// A gauge that is set to a value.
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// Makes the metric objects for a named reflector: client-go's `cache.MetricsProvider`.
///
/// Each method is called once per reflector, with the reflector's name (for an informer,
/// the informer's name); see [`names`] for what each metric means.
pub trait ReflectorMetricsProvider: Send + Sync {
    /// Counter for [`names::LISTS`].
    fn new_lists_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Counter for [`names::LIST_ERRORS`].
    fn new_list_errors_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Histogram (seconds) for [`names::LIST_DURATION`].
    fn new_list_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric>;
    /// Histogram (objects) for [`names::ITEMS_PER_LIST`].
    fn new_items_in_list_metric(&self, name: &str) -> Arc<dyn HistogramMetric>;
    /// Counter for [`names::WATCHES`].
    fn new_watches_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Counter for [`names::SHORT_WATCHES`].
    fn new_short_watches_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Counter for [`names::WATCH_ERRORS`].
    fn new_watch_errors_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Gauge for [`names::LAST_RESOURCE_VERSION`].
    fn new_last_resource_version_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric>;
    /// Gauge for [`names::UNREADABLE_OBJECTS`]; by default a gauge nobody reads, so a
    /// provider written before it still compiles.
    fn new_unreadable_objects_metric(&self, _name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Unobserved)
    }
}

static GLOBAL_PROVIDER: OnceLock<Arc<dyn ReflectorMetricsProvider>> = OnceLock::new();

/// Sets the provider for every named reflector created afterwards without a provider of
/// its own: client-go's `cache.SetReflectorMetricsProvider`. Only the first call counts
/// (reflectors already running keep what they had); it returns `false` if a provider was
/// already set.
pub fn set_global_reflector_metrics_provider(provider: Arc<dyn ReflectorMetricsProvider>) -> bool {
    GLOBAL_PROVIDER.set(provider).is_ok()
}

/// The metric objects of one reflector: client-go's `reflectorMetrics`.
pub(crate) struct ReflectorMetrics {
    lists: Arc<dyn CounterMetric>,
    list_errors: Arc<dyn CounterMetric>,
    list_duration: Arc<dyn HistogramMetric>,
    items_in_list: Arc<dyn HistogramMetric>,
    watches: Arc<dyn CounterMetric>,
    short_watches: Arc<dyn CounterMetric>,
    watch_errors: Arc<dyn CounterMetric>,
    last_resource_version: Arc<dyn SettableGaugeMetric>,
    unreadable_objects: Arc<dyn SettableGaugeMetric>,
}

impl ReflectorMetrics {
    /// The metrics for reflector `name` from `provider`, else from the global provider;
    /// `None` (no metrics, no cost) when the name is empty or no provider is set.
    pub(crate) fn resolve(
        name: &str,
        provider: Option<&Arc<dyn ReflectorMetricsProvider>>,
    ) -> Option<Self> {
        if name.is_empty() {
            return None;
        }
        let provider = provider.or_else(|| GLOBAL_PROVIDER.get())?;
        Some(Self {
            lists: provider.new_lists_metric(name),
            list_errors: provider.new_list_errors_metric(name),
            list_duration: provider.new_list_duration_metric(name),
            items_in_list: provider.new_items_in_list_metric(name),
            watches: provider.new_watches_metric(name),
            short_watches: provider.new_short_watches_metric(name),
            watch_errors: provider.new_watch_errors_metric(name),
            last_resource_version: provider.new_last_resource_version_metric(name),
            unreadable_objects: provider.new_unreadable_objects_metric(name),
        })
    }

    /// A list attempt ended: with `Some(items)` objects after `took`, or `None` on an
    /// error.
    pub(crate) fn list_done(&self, items: Option<usize>, took: Duration) {
        self.lists.inc();
        match items {
            Some(items) => {
                self.list_duration.observe(took.as_secs_f64());
                self.items_in_list.observe(items as f64);
            }
            None => self.list_errors.inc(),
        }
    }

    /// A watch is being started.
    pub(crate) fn watch_started(&self) {
        self.watches.inc();
    }

    /// A watch was closed by the server at once, with nothing in it.
    pub(crate) fn short_watch(&self) {
        self.short_watches.inc();
    }

    /// A watch failed (not `410 Gone`).
    pub(crate) fn watch_failed(&self) {
        self.watch_errors.inc();
    }

    /// `count` objects are set aside as unreadable now.
    pub(crate) fn unreadable(&self, count: usize) {
        self.unreadable_objects.set(count as f64);
    }

    /// The reflector moved to resourceVersion `rv`; recorded when it is a number.
    pub(crate) fn resource_version(&self, rv: &str) {
        if let Ok(v) = rv.parse::<u64>() {
            self.last_resource_version.set(v as f64);
        }
    }
}
