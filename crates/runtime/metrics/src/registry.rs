//! The registry every metric of the process is registered in, and its text encoding.
//!
//! A thin wrapper over `prometheus_client`'s [`Registry`](PromRegistry): that one needs
//! `&mut` to register, while the HTTP server needs to encode it concurrently with the rest
//! of the program registering and updating metrics. The wrapper puts it behind a lock and
//! is cheap to clone (all clones share one registry), like Go's `prometheus.Registry`
//! that controller-runtime keeps in `metrics.Registry`.
//!
//! # The exposition format, and the `_total` suffix
//!
//! `prometheus_client` writes the OpenMetrics text format (what Prometheus asks for
//! first; the Prometheus 0.0.4 text format is nearly the same), ending with `# EOF`. In
//! OpenMetrics a counter *family* is named without `_total` and its *sample* with it:
//! register `workqueue_adds` and the scrape shows `workqueue_adds_total{name="foos"} 3`,
//! the series client-go exposes. [`counter_family_name`] strips the suffix from
//! client-go's names for that reason.

use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;
use prometheus_client::encoding::text;
use prometheus_client::registry::{Metric, Registry as PromRegistry};

use crate::error::Result;

/// The `Content-Type` of [`Registry::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A shared, lockable `prometheus_client` registry. Clones share the same registry.
///
/// ```
/// use prometheus_client::metrics::counter::Counter;
///
/// let registry = metrics::Registry::new();
/// let jobs: Counter = Counter::default();
/// registry.register("jobs", "Jobs done", jobs.clone());
/// jobs.inc();
/// assert!(registry.encode().unwrap().contains("jobs_total 1\n"));
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<RwLock<PromRegistry>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `metric` (a counter, gauge, histogram or a `Family` of them) under
    /// `name`. For a counter, give the name without `_total` (see the module docs).
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        self.inner.write().register(name, help, metric);
    }

    /// Runs `f` with the underlying `prometheus_client` registry, for what
    /// [`register`](Self::register) does not cover (collectors, sub-registries).
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut PromRegistry) -> R) -> R {
        f(&mut self.inner.write())
    }

    /// Every registered metric in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> Result<String> {
        let mut out = String::new();
        text::encode(&mut out, &self.inner.read())?;
        Ok(out)
    }
}

/// The family name to register a counter under so that its samples carry `name`: the
/// name without a trailing `_total`.
pub fn counter_family_name(name: &str) -> &str {
    name.strip_suffix("_total").unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_names_lose_total_once() {
        assert_eq!(
            counter_family_name("workqueue_adds_total"),
            "workqueue_adds"
        );
        assert_eq!(counter_family_name("workqueue_depth"), "workqueue_depth");
    }
}
