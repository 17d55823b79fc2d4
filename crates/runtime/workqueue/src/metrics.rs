//! Queue metrics: client-go's `workqueue.MetricsProvider` (util/workqueue/metrics.go).
//!
//! The queue does not depend on a metrics library. It asks a [`MetricsProvider`] for
//! one metric object per (metric, queue name) and feeds it; the provider decides what
//! they are (Prometheus collectors, test recorders, ...). The metric names client-go
//! registers are in [`names`], so a Prometheus provider exposes the same series that
//! Go controllers do and existing dashboards keep working.
//!
//! Metrics cost nothing unless they are on: a queue reports only when it has a name
//! and a provider (its own in [`QueueConfig`], or the process-wide
//! one from [`set_global_metrics_provider`]), as in client-go. When they are off the
//! queue keeps no per-item timestamps at all.
//!
//! # Depth per priority
//!
//! A queue whose items have [priorities](crate::priority) also reports its depth per
//! priority, when the provider offers a gauge for it
//! ([`MetricsProvider::new_depth_with_priority_metric`]; by default it does not). That
//! gauge is fed *in addition to* the plain depth gauge, so `workqueue_depth` keeps its
//! client-go meaning and labels. controller-runtime instead replaces `workqueue_depth`
//! with a priority-labelled series of the same name; one family cannot carry both label
//! sets, hence the separate name, [`names::DEPTH_WITH_PRIORITY`].

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::queue::{Item, QueueConfig, Shared};

/// How often the unfinished-work gauges are refreshed (client-go's default).
const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// The metric names client-go's Prometheus adapter registers (component-base
/// `metrics/prometheus/workqueue`); each carries the queue name as label `name`.
pub mod names {
    /// Gauge: current depth of the queue.
    pub const DEPTH: &str = "workqueue_depth";
    /// Counter: total number of adds handled by the queue.
    pub const ADDS: &str = "workqueue_adds_total";
    /// Histogram: seconds an item stays in the queue before being requested.
    pub const QUEUE_LATENCY: &str = "workqueue_queue_duration_seconds";
    /// Histogram: seconds processing an item takes.
    pub const WORK_DURATION: &str = "workqueue_work_duration_seconds";
    /// Gauge: seconds of work in progress that has not been observed by
    /// work duration yet; large values mean stuck workers.
    pub const UNFINISHED_WORK: &str = "workqueue_unfinished_work_seconds";
    /// Gauge: seconds the longest running processor has been running.
    pub const LONGEST_RUNNING_PROCESSOR: &str = "workqueue_longest_running_processor_seconds";
    /// Counter: total number of retries (`add_after` / `add_rate_limited`).
    pub const RETRIES: &str = "workqueue_retries_total";
    /// Gauge, labelled by priority as well: current depth of the queue per item
    /// priority (controller-runtime's priority-labelled `workqueue_depth`). Only
    /// reported when the provider implements
    /// [`new_depth_with_priority_metric`](super::MetricsProvider::new_depth_with_priority_metric).
    pub const DEPTH_WITH_PRIORITY: &str = "workqueue_depth_with_priority";
}

/// A gauge that goes up and down (queue depth).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge per priority (queue depth by item priority): controller-runtime's
/// `DepthMetricWithPriority`. Every `inc(p)` is matched by exactly one `dec(p)` with the
/// same `p` once the item leaves the line (handed out, or moved to another priority).
pub trait PriorityGaugeMetric: Send + Sync {
    /// Adds one at `priority`.
    fn inc(&self, priority: i32);
    /// Subtracts one at `priority`.
    fn dec(&self, priority: i32);
}

/// A gauge that is set to a value.
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A monotonically increasing counter.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observed values, in seconds.
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// Makes the metric objects for a named queue: client-go's `MetricsProvider`.
///
/// Each method is called once per queue, with the queue's name; see [`names`] for
/// what each metric means.
pub trait MetricsProvider: Send + Sync {
    /// Gauge for [`names::DEPTH`].
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric>;
    /// Counter for [`names::ADDS`].
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Histogram for [`names::QUEUE_LATENCY`].
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric>;
    /// Histogram for [`names::WORK_DURATION`].
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric>;
    /// Gauge for [`names::UNFINISHED_WORK`].
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric>;
    /// Gauge for [`names::LONGEST_RUNNING_PROCESSOR`].
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric>;
    /// Counter for [`names::RETRIES`].
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Gauge for [`names::DEPTH_WITH_PRIORITY`], fed in addition to the plain depth
    /// gauge; `None` (the default) reports no depth per priority. controller-runtime's
    /// `MetricsProviderWithPriority.NewDepthMetricWithPriority`.
    fn new_depth_with_priority_metric(&self, _name: &str) -> Option<Arc<dyn PriorityGaugeMetric>> {
        None
    }
}

static GLOBAL_PROVIDER: OnceLock<Arc<dyn MetricsProvider>> = OnceLock::new();

/// Sets the provider for every named queue created afterwards without a provider of
/// its own: client-go's `SetProvider`. Like client-go, only the first call counts;
/// it returns `false` if a provider was already set.
pub fn set_global_metrics_provider(provider: Arc<dyn MetricsProvider>) -> bool {
    GLOBAL_PROVIDER.set(provider).is_ok()
}

/// The provider a queue with `config` uses, or `None` when it reports no metrics.
pub(crate) fn resolve_provider(config: &QueueConfig) -> Option<Arc<dyn MetricsProvider>> {
    if config.name.is_empty() {
        return None;
    }
    config
        .metrics_provider
        .clone()
        .or_else(|| GLOBAL_PROVIDER.get().cloned())
}

/// The per-queue bookkeeping behind the metrics: client-go's `defaultQueueMetrics`.
/// Lives inside the queue's lock, so it needs no lock of its own.
pub(crate) struct QueueMetrics<T> {
    depth: Arc<dyn GaugeMetric>,
    depth_with_priority: Option<Arc<dyn PriorityGaugeMetric>>,
    adds: Arc<dyn CounterMetric>,
    latency: Arc<dyn HistogramMetric>,
    work_duration: Arc<dyn HistogramMetric>,
    unfinished_work_seconds: Arc<dyn SettableGaugeMetric>,
    longest_running_processor: Arc<dyn SettableGaugeMetric>,
    /// When each waiting item was first added (reset when it is handed out).
    add_times: HashMap<T, Instant>,
    /// When each item being processed was handed out.
    processing_start_times: HashMap<T, Instant>,
}

impl<T: Item> QueueMetrics<T> {
    pub(crate) fn new(name: &str, provider: &dyn MetricsProvider) -> Self {
        Self {
            depth: provider.new_depth_metric(name),
            depth_with_priority: provider.new_depth_with_priority_metric(name),
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work_seconds: provider.new_unfinished_work_seconds_metric(name),
            longest_running_processor: provider.new_longest_running_processor_seconds_metric(name),
            add_times: HashMap::new(),
            processing_start_times: HashMap::new(),
        }
    }

    /// An item became dirty, at `priority`.
    pub(crate) fn add(&mut self, item: &T, priority: i32) {
        self.adds.inc();
        self.depth.inc();
        if let Some(g) = &self.depth_with_priority {
            g.inc(priority);
        }
        if !self.add_times.contains_key(item) {
            self.add_times.insert(item.clone(), Instant::now());
        }
    }

    /// A dirty item's priority went up (it was counted at `from`): controller-runtime's
    /// `updateDepthWithPriorityMetric`.
    pub(crate) fn raise(&self, from: i32, to: i32) {
        if let Some(g) = &self.depth_with_priority {
            g.dec(from);
            g.inc(to);
        }
    }

    /// An item was handed to a worker, at `priority`.
    pub(crate) fn get(&mut self, item: &T, priority: i32) {
        let now = Instant::now();
        self.depth.dec();
        if let Some(g) = &self.depth_with_priority {
            g.dec(priority);
        }
        self.processing_start_times.insert(item.clone(), now);
        if let Some(added) = self.add_times.remove(item) {
            self.latency.observe((now - added).as_secs_f64());
        }
    }

    /// A worker finished an item.
    pub(crate) fn done(&mut self, item: &T) {
        if let Some(started) = self.processing_start_times.remove(item) {
            self.work_duration
                .observe((Instant::now() - started).as_secs_f64());
        }
    }

    /// Recomputes the two unfinished-work gauges.
    pub(crate) fn update_unfinished_work(&self, now: Instant) {
        let mut total = 0.0;
        let mut oldest = 0.0_f64;
        for started in self.processing_start_times.values() {
            let age = (now - *started).as_secs_f64();
            total += age;
            oldest = oldest.max(age);
        }
        self.unfinished_work_seconds.set(total);
        self.longest_running_processor.set(oldest);
    }
}

/// Refreshes the unfinished-work gauges until the queue stops or is dropped:
/// client-go's `updateUnfinishedWorkLoop`.
pub(crate) async fn update_unfinished_work_loop<T: Item>(
    queue: Weak<Shared<T>>,
    stopped: Arc<Notify>,
) {
    let mut ticker = tokio::time::interval(UNFINISHED_WORK_UPDATE_PERIOD);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let mut stop = pin!(stopped.notified());
        stop.as_mut().enable();
        {
            let Some(shared) = queue.upgrade() else {
                return;
            };
            let running = shared.with_metrics(|m| m.update_unfinished_work(Instant::now()));
            if !running {
                return;
            }
        }
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop => {}
        }
    }
}
