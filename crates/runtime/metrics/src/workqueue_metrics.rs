//! Workqueue metrics in Prometheus: component-base's `metrics/prometheus/workqueue`,
//! the provider kube-controller-manager installs.
//!
//! The `workqueue` crate counts; this module decides what the counts become. It
//! registers one family per client-go metric name, labelled `name` (the queue's name,
//! e.g. `"foos"`), and hands each queue the series for its name. With it installed
//! ([`WorkqueueMetrics::install_global`]) every *named* queue created afterwards
//! reports, so the dashboards and alerts people already have for Go controllers work
//! unchanged:
//!
//! | series | what it tells you |
//! |---|---|
//! | `workqueue_depth` | keys waiting; steadily growing = workers cannot keep up |
//! | `workqueue_adds_total` | rate of events turned into keys |
//! | `workqueue_queue_duration_seconds` | how long a key waits for a worker |
//! | `workqueue_work_duration_seconds` | how long one sync takes |
//! | `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds` | growing = a stuck worker |
//! | `workqueue_retries_total` | rate of rate-limited requeues (failing syncs) |
//! | `workqueue_depth_with_priority` | keys waiting, per [priority](workqueue::priority) (label `priority`) |
//!
//! The last one is controller-runtime's priority-labelled `workqueue_depth{priority}`
//! under a name of its own, because `workqueue_depth` keeps client-go's label set here
//! (one family cannot have two). Like controller-runtime, it labels at most
//! [`MAX_PRIORITY_LABELS`] distinct priorities per queue; further ones are counted under
//! `priority="exceeded_cardinality_limit"`. Unlike controller-runtime, a priority
//! keeps the label it first got, so each series still goes up and down in balance.
//!
//! The two duration histograms use component-base's buckets: 1 µs to 1000 s, powers
//! of ten. (controller-runtime starts at 10 ns; component-base is what the
//! Kubernetes controllers expose, and below a microsecond nothing in a controller
//! happens.)

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use workqueue::names;

use crate::adapters::{Adapter, FloatGauge, NameLabel};
use crate::registry::{Registry, counter_family_name};

type HistogramFamily = Family<NameLabel, Histogram, fn() -> Histogram>;

/// component-base's `ExponentialBuckets(10e-7, 10, 10)`: 1e-6 s ... 1e3 s. Written out,
/// because computing them by repeated multiplication gives bounds like
/// `9.999999999999999e-6` in the exposition.
const DURATION_BUCKETS: [f64; 10] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// Distinct priorities labelled per queue (controller-runtime's
/// `maxRecommendedUniquePriorities`: its two priorities, plus room for your own).
pub const MAX_PRIORITY_LABELS: usize = 25;

/// The `priority` label of the priorities beyond [`MAX_PRIORITY_LABELS`]
/// (controller-runtime's placeholder).
pub const PRIORITY_CARDINALITY_EXCEEDED: &str = "exceeded_cardinality_limit";

/// Label set `{name="...", priority="..."}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamePriorityLabels {
    name: String,
    priority: String,
}

/// The eight workqueue metric families; a [`workqueue::MetricsProvider`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use workqueue::{AddOpts, QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
///
/// let registry = metrics::Registry::new();
/// let provider = metrics::WorkqueueMetrics::new(&registry);
/// // In a binary: provider.install_global(); here, for this queue only:
/// let config = QueueConfig::named("foos").with_metrics_provider(Arc::new(provider));
/// let queue = RateLimitingQueue::with_config(default_controller_rate_limiter(), config);
/// queue.add("default/a".to_string());
/// let low = AddOpts { priority: workqueue::priority::LOW, ..AddOpts::default() };
/// queue.add_with_opts("default/b".to_string(), low);
/// let text = registry.encode().unwrap();
/// assert!(text.contains("workqueue_depth{name=\"foos\"} 2\n"));
/// assert!(text.contains("workqueue_adds_total{name=\"foos\"} 2\n"));
/// assert!(text.contains("workqueue_depth_with_priority{name=\"foos\",priority=\"0\"} 1\n"));
/// assert!(text.contains("workqueue_depth_with_priority{name=\"foos\",priority=\"-100\"} 1\n"));
/// # }
/// ```
#[derive(Clone)]
pub struct WorkqueueMetrics {
    depth: Family<NameLabel, Gauge>,
    adds: Family<NameLabel, Counter>,
    latency: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work_seconds: Family<NameLabel, FloatGauge>,
    longest_running_processor: Family<NameLabel, FloatGauge>,
    retries: Family<NameLabel, Counter>,
    depth_with_priority: Family<NamePriorityLabels, Gauge>,
}

impl fmt::Debug for WorkqueueMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueMetrics").finish_non_exhaustive()
    }
}

impl WorkqueueMetrics {
    /// Creates the families and registers them in `registry`, with client-go's names
    /// and help texts.
    pub fn new(registry: &Registry) -> Self {
        let metrics = Self {
            depth: Family::default(),
            adds: Family::default(),
            latency: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
            unfinished_work_seconds: Family::default(),
            longest_running_processor: Family::default(),
            retries: Family::default(),
            depth_with_priority: Family::default(),
        };
        registry.register(
            names::DEPTH,
            "Current depth of workqueue",
            metrics.depth.clone(),
        );
        registry.register(
            counter_family_name(names::ADDS),
            "Total number of adds handled by workqueue",
            metrics.adds.clone(),
        );
        registry.register(
            names::QUEUE_LATENCY,
            "How long in seconds an item stays in workqueue before being requested",
            metrics.latency.clone(),
        );
        registry.register(
            names::WORK_DURATION,
            "How long in seconds processing an item from workqueue takes",
            metrics.work_duration.clone(),
        );
        registry.register(
            names::UNFINISHED_WORK,
            "How many seconds of work has been done that is in progress and hasn't been \
             observed by work_duration. Large values indicate stuck threads. One can deduce \
             the number of stuck threads by observing the rate at which this increases",
            metrics.unfinished_work_seconds.clone(),
        );
        registry.register(
            names::LONGEST_RUNNING_PROCESSOR,
            "How many seconds has the longest running processor for workqueue been running",
            metrics.longest_running_processor.clone(),
        );
        registry.register(
            counter_family_name(names::RETRIES),
            "Total number of retries handled by workqueue",
            metrics.retries.clone(),
        );
        registry.register(
            names::DEPTH_WITH_PRIORITY,
            "Current depth of workqueue by priority",
            metrics.depth_with_priority.clone(),
        );
        metrics
    }

    /// Makes this the provider of every named queue created from now on without a
    /// provider of its own (`workqueue::set_global_metrics_provider`). Call it before
    /// creating queues. Only the first provider installed in a process counts; `false`
    /// means another one was already installed.
    pub fn install_global(&self) -> bool {
        workqueue::set_global_metrics_provider(Arc::new(self.clone()))
    }
}

impl workqueue::MetricsProvider for WorkqueueMetrics {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn workqueue::GaugeMetric> {
        Arc::new(Adapter(
            self.depth.get_or_create_owned(&NameLabel::new(name)),
        ))
    }

    fn new_adds_metric(&self, name: &str) -> Arc<dyn workqueue::CounterMetric> {
        Arc::new(Adapter(
            self.adds.get_or_create_owned(&NameLabel::new(name)),
        ))
    }

    fn new_latency_metric(&self, name: &str) -> Arc<dyn workqueue::HistogramMetric> {
        Arc::new(Adapter(
            self.latency.get_or_create_owned(&NameLabel::new(name)),
        ))
    }

    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn workqueue::HistogramMetric> {
        Arc::new(Adapter(
            self.work_duration
                .get_or_create_owned(&NameLabel::new(name)),
        ))
    }

    fn new_unfinished_work_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn workqueue::SettableGaugeMetric> {
        Arc::new(Adapter(
            self.unfinished_work_seconds
                .get_or_create_owned(&NameLabel::new(name)),
        ))
    }

    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn workqueue::SettableGaugeMetric> {
        Arc::new(Adapter(
            self.longest_running_processor
                .get_or_create_owned(&NameLabel::new(name)),
        ))
    }

    fn new_retries_metric(&self, name: &str) -> Arc<dyn workqueue::CounterMetric> {
        Arc::new(Adapter(
            self.retries.get_or_create_owned(&NameLabel::new(name)),
        ))
    }

    fn new_depth_with_priority_metric(
        &self,
        name: &str,
    ) -> Option<Arc<dyn workqueue::PriorityGaugeMetric>> {
        Some(Arc::new(DepthWithPriority::new(
            self.depth_with_priority.clone(),
            name,
        )))
    }
}

/// One queue's `workqueue_depth_with_priority` series, by priority.
///
/// The queue calls it under its own lock on every add and get, so the series of the
/// priorities seen so far are kept at hand (a short list: a queue uses a handful of
/// priorities) rather than looked up in the family, which would format a label and
/// take the family's lock each time.
struct DepthWithPriority {
    family: Family<NamePriorityLabels, Gauge>,
    name: String,
    series: Mutex<PrioritySeries>,
}

#[derive(Default)]
struct PrioritySeries {
    /// The series of each labelled priority, at most [`MAX_PRIORITY_LABELS`].
    labelled: Vec<(i32, Gauge)>,
    /// The placeholder series, once a priority did not fit.
    exceeded: Option<Gauge>,
}

impl DepthWithPriority {
    fn new(family: Family<NamePriorityLabels, Gauge>, name: &str) -> Self {
        Self {
            family,
            name: name.to_string(),
            series: Mutex::default(),
        }
    }

    /// Runs `f` on `priority`'s series.
    fn with_gauge(&self, priority: i32, f: impl FnOnce(&Gauge)) {
        let mut series = self.series.lock();
        let series = &mut *series;
        if let Some((_, gauge)) = series.labelled.iter().find(|(p, _)| *p == priority) {
            return f(gauge);
        }
        if series.labelled.len() < MAX_PRIORITY_LABELS {
            let gauge = self.series_for(priority.to_string());
            f(&gauge);
            series.labelled.push((priority, gauge));
            return;
        }
        let gauge = series
            .exceeded
            .get_or_insert_with(|| self.series_for(PRIORITY_CARDINALITY_EXCEEDED.to_string()));
        f(gauge);
    }

    fn series_for(&self, priority: String) -> Gauge {
        self.family.get_or_create_owned(&NamePriorityLabels {
            name: self.name.clone(),
            priority,
        })
    }
}

impl workqueue::PriorityGaugeMetric for DepthWithPriority {
    fn inc(&self, priority: i32) {
        self.with_gauge(priority, |g| {
            g.inc();
        });
    }

    fn dec(&self, priority: i32) {
        self.with_gauge(priority, |g| {
            g.dec();
        });
    }
}
