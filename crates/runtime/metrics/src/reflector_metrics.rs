//! Reflector metrics in Prometheus: the families behind the hooks of
//! [`cache::metrics`] (lists, watches, their errors, the last resourceVersion).
//!
//! See [`cache::metrics`] for why each exists and which of client-go's old reflector
//! metrics we kept. Labelled `name` = the reflector's name, which for an informer is the
//! informer's name (`SharedIndexInformer::new("configmaps", ...)`).
//!
//! What to look at when a controller seems not to notice changes:
//!
//! * `reflector_watch_errors_total` rising: the API server is unreachable or refuses the
//!   watch (RBAC!); the reflector retries with backoff up to 30 s.
//! * `reflector_lists_total` rising steadily: it relists again and again, usually
//!   because watches keep answering `410 Gone`.
//! * `reflector_short_watches_total` rising: something between us and the server closes
//!   watches at once (a proxy with a short idle timeout).
//! * `reflector_last_resource_version` flat while the cluster changes: the watch is stuck.
//! * `reflector_unreadable_objects` above zero: objects the controller's type cannot
//!   decode are left out of its cache (the log names each one; `cache::unreadable`).

use std::fmt;
use std::sync::Arc;

use cache::metrics::{
    CounterMetric, HistogramMetric, ReflectorMetricsProvider, SettableGaugeMetric, names,
};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use crate::adapters::{Adapter, FloatGauge, NameLabel};
use crate::registry::{Registry, counter_family_name};

type HistogramFamily = Family<NameLabel, Histogram, fn() -> Histogram>;

/// 10 ms ... ~82 s, doubling: a list of a few objects to a paged list of 50 000.
fn list_duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

/// 1 ... 262 144 objects, times four.
fn items_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 4.0, 10))
}

/// The reflector metric families; a [`cache::ReflectorMetricsProvider`].
///
/// Install it with [`install_global`](Self::install_global) before creating informers,
/// or give it to one reflector with `Reflector::with_metrics_provider`.
#[derive(Clone)]
pub struct ReflectorMetrics {
    lists: Family<NameLabel, Counter>,
    list_errors: Family<NameLabel, Counter>,
    list_duration: HistogramFamily,
    items_per_list: HistogramFamily,
    watches: Family<NameLabel, Counter>,
    short_watches: Family<NameLabel, Counter>,
    watch_errors: Family<NameLabel, Counter>,
    last_resource_version: Family<NameLabel, FloatGauge>,
    unreadable_objects: Family<NameLabel, FloatGauge>,
}

impl fmt::Debug for ReflectorMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorMetrics").finish_non_exhaustive()
    }
}

impl ReflectorMetrics {
    /// Creates the families and registers them in `registry`.
    pub fn new(registry: &Registry) -> Self {
        let metrics = Self {
            lists: Family::default(),
            list_errors: Family::default(),
            list_duration: Family::new_with_constructor(list_duration_histogram),
            items_per_list: Family::new_with_constructor(items_histogram),
            watches: Family::default(),
            short_watches: Family::default(),
            watch_errors: Family::default(),
            last_resource_version: Family::default(),
            unreadable_objects: Family::default(),
        };
        let counters = [
            (
                names::LISTS,
                "Total number of API lists done by the reflectors",
                &metrics.lists,
            ),
            (
                names::LIST_ERRORS,
                "Total number of API lists by the reflectors that failed",
                &metrics.list_errors,
            ),
            (
                names::WATCHES,
                "Total number of API watches done by the reflectors",
                &metrics.watches,
            ),
            (
                names::SHORT_WATCHES,
                "Total number of short API watches done by the reflectors",
                &metrics.short_watches,
            ),
            (
                names::WATCH_ERRORS,
                "Total number of API watches by the reflectors that failed (410 Gone excluded)",
                &metrics.watch_errors,
            ),
        ];
        for (name, help, family) in counters {
            registry.register(counter_family_name(name), help, family.clone());
        }
        registry.register(
            names::LIST_DURATION,
            "How long an API list takes to return and decode for the reflectors",
            metrics.list_duration.clone(),
        );
        registry.register(
            names::ITEMS_PER_LIST,
            "How many items an API list returns to the reflectors",
            metrics.items_per_list.clone(),
        );
        registry.register(
            names::LAST_RESOURCE_VERSION,
            "Last resource version seen for the reflectors",
            metrics.last_resource_version.clone(),
        );
        registry.register(
            names::UNREADABLE_OBJECTS,
            "Objects the reflectors' types cannot decode, left out of their caches",
            metrics.unreadable_objects.clone(),
        );
        metrics
    }

    /// Makes this the provider of every named reflector created from now on without a
    /// provider of its own ([`cache::set_global_reflector_metrics_provider`]). Call it
    /// before creating informers. Only the first provider installed in a process
    /// counts; `false` means another one was already installed.
    pub fn install_global(&self) -> bool {
        cache::set_global_reflector_metrics_provider(Arc::new(self.clone()))
    }

    fn counter(family: &Family<NameLabel, Counter>, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Adapter(family.get_or_create_owned(&NameLabel::new(name))))
    }

    fn histogram(family: &HistogramFamily, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Adapter(family.get_or_create_owned(&NameLabel::new(name))))
    }
}

impl ReflectorMetricsProvider for ReflectorMetrics {
    fn new_lists_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Self::counter(&self.lists, name)
    }

    fn new_list_errors_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Self::counter(&self.list_errors, name)
    }

    fn new_list_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Self::histogram(&self.list_duration, name)
    }

    fn new_items_in_list_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Self::histogram(&self.items_per_list, name)
    }

    fn new_watches_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Self::counter(&self.watches, name)
    }

    fn new_short_watches_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Self::counter(&self.short_watches, name)
    }

    fn new_watch_errors_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Self::counter(&self.watch_errors, name)
    }

    fn new_last_resource_version_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Adapter(
            self.last_resource_version
                .get_or_create_owned(&NameLabel::new(name)),
        ))
    }

    fn new_unreadable_objects_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Adapter(
            self.unreadable_objects
                .get_or_create_owned(&NameLabel::new(name)),
        ))
    }
}
