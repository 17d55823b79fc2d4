//! Glue between `prometheus_client`'s metric types and the metric traits of the
//! `workqueue` and `cache` crates, plus the label sets shared by several families.
//!
//! Those crates define their own small traits (`inc`, `observe`, `set`) so that they
//! need no metrics library; Rust's orphan rule forbids implementing a foreign trait for
//! a foreign type, hence the [`Adapter`] newtype around a `prometheus_client` metric.
//! A `prometheus_client` metric is a handle to shared atomics, so the adapter holding a
//! clone updates the very series the registry encodes.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

/// A float gauge (`set(f64)`).
pub(crate) type FloatGauge = Gauge<f64, AtomicU64>;

/// Label set `{name="..."}`: the queue, reflector or lease name, as client-go labels them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NameLabel {
    pub(crate) name: String,
}

impl NameLabel {
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
        }
    }
}

/// A `prometheus_client` metric seen through another crate's metric trait.
pub(crate) struct Adapter<M>(pub(crate) M);

impl workqueue::GaugeMetric for Adapter<Gauge> {
    fn inc(&self) {
        self.0.inc();
    }
    fn dec(&self) {
        self.0.dec();
    }
}

impl workqueue::SettableGaugeMetric for Adapter<FloatGauge> {
    fn set(&self, value: f64) {
        self.0.set(value);
    }
}

impl workqueue::CounterMetric for Adapter<Counter> {
    fn inc(&self) {
        self.0.inc();
    }
}

impl workqueue::HistogramMetric for Adapter<Histogram> {
    fn observe(&self, value: f64) {
        self.0.observe(value);
    }
}

impl cache::metrics::CounterMetric for Adapter<Counter> {
    fn inc(&self) {
        self.0.inc();
    }
}

impl cache::metrics::HistogramMetric for Adapter<Histogram> {
    fn observe(&self, value: f64) {
        self.0.observe(value);
    }
}

impl cache::metrics::SettableGaugeMetric for Adapter<FloatGauge> {
    fn set(&self, value: f64) {
        self.0.set(value);
    }
}
