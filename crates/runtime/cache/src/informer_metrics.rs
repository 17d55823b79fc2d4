//! Informer metrics: client-go 1.36's `InformerMetricsProvider`
//! (tools/cache/informer_metrics.go, identity.go), the hook behind the
//! `informer_queued_items`, `informer_processing_latency_seconds` and
//! `informer_store_resource_version` series that component-base exports
//! (metrics/prometheus/clientgo/fifo).
//!
//! # What they answer
//!
//! * **`informer_queued_items`**: how much the FIFO holds between the reflector and the
//!   informer (events for a RealFIFO, keys for a DeltaFIFO). A number that keeps growing
//!   means the handlers cannot keep up with the watch.
//! * **`informer_processing_latency_seconds`**: how long one pop takes to apply (the
//!   indexer and the handlers' notifications), the informer's side of that race.
//! * **`informer_store_resource_version`**: the resourceVersion the cache has applied
//!   (its 15 least significant digits, as client-go: a float holds those exactly). Next to
//!   `reflector_last_resource_version` it shows how far the cache trails the watch.
//!
//! # Identity
//!
//! client-go labels them `name`, `group`, `version`, `resource`: the informer's *name* (an
//! `InformerName` the program reserves, e.g. the factory's) and the resource. A series
//! exists only for an informer that has a name, and only once per (name, resource): a
//! second informer of the same resource under the same name gets none (client-go's
//! `Reserved()`), so two informers never write the same series. Here the name comes from
//! [`SharedInformerFactory::with_name`](crate::SharedInformerFactory::with_name) (the
//! binaries use their own name); an informer without one reports nothing, at no cost.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::metrics::{HistogramMetric, SettableGaugeMetric};

/// The metric names the informer hooks feed (component-base's, subsystem `informer`).
pub mod names {
    /// Gauge: items queued in the informer's FIFO.
    pub const QUEUED_ITEMS: &str = "informer_queued_items";
    /// Histogram: seconds to process what one pop handed out.
    pub const PROCESSING_LATENCY: &str = "informer_processing_latency_seconds";
    /// Gauge: the 15 least significant digits of the store's resourceVersion.
    pub const STORE_RESOURCE_VERSION: &str = "informer_store_resource_version";
}

/// The processing latency buckets component-base uses (seconds).
pub const PROCESSING_LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// An informer's identity in its metrics: client-go's `InformerNameAndResource`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InformerNameAndResource {
    /// The informer's name (the program's, e.g. `sample-controller`).
    pub name: String,
    /// API group (`""` for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource (plural).
    pub resource: String,
}

/// Makes the metric objects of one informer: client-go's `InformerMetricsProvider`.
pub trait InformerMetricsProvider: Send + Sync {
    /// Gauge for [`names::QUEUED_ITEMS`].
    fn new_queued_item_metric(&self, id: &InformerNameAndResource) -> Arc<dyn SettableGaugeMetric>;
    /// Histogram (seconds) for [`names::PROCESSING_LATENCY`].
    fn new_processing_latency_metric(
        &self,
        id: &InformerNameAndResource,
    ) -> Arc<dyn HistogramMetric>;
    /// Gauge for [`names::STORE_RESOURCE_VERSION`].
    fn new_store_resource_version_metric(
        &self,
        id: &InformerNameAndResource,
    ) -> Arc<dyn SettableGaugeMetric>;
}

static GLOBAL_PROVIDER: OnceLock<Arc<dyn InformerMetricsProvider>> = OnceLock::new();

/// The (name, resource) pairs taken: client-go's `InformerName.gvrs`.
fn reserved() -> &'static Mutex<HashSet<InformerNameAndResource>> {
    static RESERVED: OnceLock<Mutex<HashSet<InformerNameAndResource>>> = OnceLock::new();
    RESERVED.get_or_init(Default::default)
}

/// Sets the provider for every named informer created afterwards: client-go's
/// `cache.SetInformerMetricsProvider`. Only the first call counts; `false` if a provider
/// was already set.
pub fn set_global_informer_metrics_provider(provider: Arc<dyn InformerMetricsProvider>) -> bool {
    GLOBAL_PROVIDER.set(provider).is_ok()
}

/// One (name, resource) pair taken for as long as this lives: client-go's
/// `InformerName.WithResource` answering `Reserved() == true`, and its `Release` on
/// drop.
#[derive(Debug)]
struct Reservation(InformerNameAndResource);

impl Reservation {
    /// Takes `id`; `None` when its name is empty or a live reservation holds it.
    fn take(id: InformerNameAndResource) -> Option<Self> {
        if id.name.is_empty() {
            return None;
        }
        let mut taken = reserved().lock().unwrap_or_else(|e| e.into_inner());
        // Lazily: a `Reservation` made and dropped here would release (and lock) at once.
        taken.insert(id.clone()).then(|| Self(id))
    }
}

impl Drop for Reservation {
    /// The informer is gone: its (name, resource) may be reserved again (client-go's
    /// `InformerName.Release`).
    fn drop(&mut self) {
        let mut taken = reserved().lock().unwrap_or_else(|e| e.into_inner());
        taken.remove(&self.0);
    }
}

/// The metric objects of one informer.
pub(crate) struct InformerMetrics {
    _reservation: Reservation,
    queued_items: Arc<dyn SettableGaugeMetric>,
    processing_latency: Arc<dyn HistogramMetric>,
    store_resource_version: Arc<dyn SettableGaugeMetric>,
}

impl InformerMetrics {
    /// The metrics of informer `id`; `None` (nothing reported, nothing spent) when it has
    /// no name, no provider is installed, or another live informer holds the same
    /// (name, resource).
    pub(crate) fn resolve(id: InformerNameAndResource) -> Option<Self> {
        let provider = GLOBAL_PROVIDER.get()?;
        let reservation = Reservation::take(id)?;
        let id = &reservation.0;
        Some(Self {
            queued_items: provider.new_queued_item_metric(id),
            processing_latency: provider.new_processing_latency_metric(id),
            store_resource_version: provider.new_store_resource_version_metric(id),
            _reservation: reservation,
        })
    }

    /// The FIFO holds `items` now.
    pub(crate) fn queued(&self, items: usize) {
        self.queued_items.set(items as f64);
    }

    /// One pop took `took` to process.
    pub(crate) fn processed(&self, took: Duration) {
        self.processing_latency.observe(took.as_secs_f64());
    }

    /// The store applied resourceVersion `rv` (recorded when it is a number).
    pub(crate) fn store_resource_version(&self, rv: &str) {
        if let Some(value) = least_significant_digits(rv) {
            self.store_resource_version.set(value);
        }
    }
}

/// The 15 least significant digits of a numeric resourceVersion, as client-go's
/// `storeResourceVersion` gauge keeps them; `None` for a version that is not a number
/// (resource versions are opaque; the API server's are etcd revisions).
pub(crate) fn least_significant_digits(rv: &str) -> Option<f64> {
    if rv.is_empty() || !rv.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let tail = &rv[rv.len().saturating_sub(15)..];
    tail.parse::<u64>().ok().map(|v| v as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_resource_version_keeps_fifteen_digits() {
        assert_eq!(least_significant_digits("12345"), Some(12345.0));
        assert_eq!(
            least_significant_digits("98765432109876543210"),
            Some(432_109_876_543_210.0)
        );
        assert_eq!(least_significant_digits(""), None);
        assert_eq!(least_significant_digits("abc"), None);
    }

    fn id(name: &str, resource: &str) -> InformerNameAndResource {
        InformerNameAndResource {
            name: name.into(),
            group: String::new(),
            version: "v1".into(),
            resource: resource.into(),
        }
    }

    // client-go: TestWithResource (identity_test.go). Each case uses a name of its own
    // (the registry is process-wide and unit tests share the process; client-go calls
    // `ResetInformerNamesForTesting` instead).
    #[test]
    fn with_resource() {
        // "first GVR is reserved"
        assert!(Reservation::take(id("first-gvr", "pods")).is_some());
        // "same GVR second time is not reserved"
        let _held = Reservation::take(id("same-gvr", "pods")).unwrap();
        assert!(Reservation::take(id("same-gvr", "pods")).is_none());
        // "different GVR is reserved"
        let _held = Reservation::take(id("different-gvr", "pods")).unwrap();
        assert!(Reservation::take(id("different-gvr", "configmaps")).is_some());
        // "nil InformerName returns not reserved": no name, no series.
        assert!(Reservation::take(id("", "pods")).is_none());
    }

    // client-go: TestRelease (identity_test.go), and TestNewInformerName's "released
    // name can be reused" and "different name is unique".
    #[test]
    fn release() {
        let first = Reservation::take(id("release", "pods")).unwrap();
        assert!(Reservation::take(id("release-other", "pods")).is_some());
        drop(first);
        assert!(
            Reservation::take(id("release", "pods")).is_some(),
            "a released (name, resource) is reserved again"
        );
    }
}
