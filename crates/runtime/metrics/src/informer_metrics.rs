//! Informer metrics in Prometheus: the families behind the hooks of
//! [`cache::informer_metrics`] (client-go 1.36's `InformerMetricsProvider`), under the
//! names and labels component-base gives them (metrics/prometheus/clientgo/fifo):
//! `{name, group, version, resource}`, `name` being the informer's (the binary's) name.
//!
//! * `informer_queued_items` growing: the handlers cannot keep up with the watch.
//! * `informer_processing_latency_seconds` high: a handler (or the indexer's index
//!   functions) is slow; every later event waits behind it.
//! * `informer_store_resource_version` trailing `reflector_last_resource_version`: the
//!   cache lags the watch by the queue above.

use std::fmt;
use std::sync::Arc;

use cache::informer_metrics::{
    InformerMetricsProvider, InformerNameAndResource, PROCESSING_LATENCY_BUCKETS, names,
};
use cache::metrics::{HistogramMetric, SettableGaugeMetric};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use crate::adapters::{Adapter, FloatGauge};
use crate::registry::Registry;

/// Labels `{name, group, version, resource}`, as component-base's.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InformerLabels {
    name: String,
    group: String,
    version: String,
    resource: String,
}

impl From<&InformerNameAndResource> for InformerLabels {
    fn from(id: &InformerNameAndResource) -> Self {
        Self {
            name: id.name.clone(),
            group: id.group.clone(),
            version: id.version.clone(),
            resource: id.resource.clone(),
        }
    }
}

type HistogramFamily = Family<InformerLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(PROCESSING_LATENCY_BUCKETS)
}

/// The informer metric families; a [`cache::informer_metrics::InformerMetricsProvider`].
#[derive(Clone)]
pub struct InformerMetrics {
    queued_items: Family<InformerLabels, FloatGauge>,
    processing_latency: HistogramFamily,
    store_resource_version: Family<InformerLabels, FloatGauge>,
}

impl fmt::Debug for InformerMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerMetrics").finish_non_exhaustive()
    }
}

impl InformerMetrics {
    /// Creates the families and registers them in `registry`.
    pub fn new(registry: &Registry) -> Self {
        let metrics = Self {
            queued_items: Family::default(),
            processing_latency: Family::new_with_constructor(latency_histogram),
            store_resource_version: Family::default(),
        };
        registry.register(
            names::QUEUED_ITEMS,
            "Number of items currently queued in the FIFO.",
            metrics.queued_items.clone(),
        );
        registry.register(
            names::PROCESSING_LATENCY,
            "Time taken to process events after popping from the queue.",
            metrics.processing_latency.clone(),
        );
        registry.register(
            names::STORE_RESOURCE_VERSION,
            "The 15 least significant digits of the resource version of the store.",
            metrics.store_resource_version.clone(),
        );
        metrics
    }

    /// Makes this the provider of every named informer created from now on
    /// ([`cache::informer_metrics::set_global_informer_metrics_provider`]); `false` if
    /// another provider was installed first.
    pub fn install_global(&self) -> bool {
        cache::informer_metrics::set_global_informer_metrics_provider(Arc::new(self.clone()))
    }
}

impl InformerMetricsProvider for InformerMetrics {
    fn new_queued_item_metric(&self, id: &InformerNameAndResource) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Adapter(self.queued_items.get_or_create_owned(&id.into())))
    }

    fn new_processing_latency_metric(
        &self,
        id: &InformerNameAndResource,
    ) -> Arc<dyn HistogramMetric> {
        Arc::new(Adapter(
            self.processing_latency.get_or_create_owned(&id.into()),
        ))
    }

    fn new_store_resource_version_metric(
        &self,
        id: &InformerNameAndResource,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Adapter(
            self.store_resource_version.get_or_create_owned(&id.into()),
        ))
    }
}
