//! Metrics are fed exactly as client-go feeds them (metrics_test.go territory).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::advance;
use workqueue::priority::{DEFAULT, LOW};
use workqueue::{
    AddOpts, CounterMetric, DelayingQueue, GaugeMetric, HistogramMetric, MetricsProvider,
    PriorityGaugeMetric, Queue, QueueConfig, RateLimitingQueue, SettableGaugeMetric,
    default_controller_rate_limiter, names,
};

/// One recorded series: (metric name, queue name) -> values.
#[derive(Default)]
struct Recorder {
    gauges: Mutex<HashMap<(String, String), f64>>,
    observations: Mutex<HashMap<(String, String), Vec<f64>>>,
    created: Mutex<Vec<(String, String)>>,
}

struct Series {
    rec: Arc<Recorder>,
    key: (String, String),
}

impl Series {
    fn bump(&self, by: f64) {
        *self.rec.gauges.lock().entry(self.key.clone()).or_default() += by;
    }
}
impl GaugeMetric for Series {
    fn inc(&self) {
        self.bump(1.0)
    }
    fn dec(&self) {
        self.bump(-1.0)
    }
}
impl CounterMetric for Series {
    fn inc(&self) {
        self.bump(1.0)
    }
}
impl SettableGaugeMetric for Series {
    fn set(&self, value: f64) {
        self.rec.gauges.lock().insert(self.key.clone(), value);
    }
}
impl HistogramMetric for Series {
    fn observe(&self, value: f64) {
        let mut obs = self.rec.observations.lock();
        obs.entry(self.key.clone()).or_default().push(value);
    }
}

#[derive(Clone, Default)]
struct Provider(Arc<Recorder>);

impl Provider {
    fn series(&self, metric: &str, queue: &str) -> Arc<Series> {
        let key = (metric.to_string(), queue.to_string());
        self.0.created.lock().push(key.clone());
        Arc::new(Series {
            rec: self.0.clone(),
            key,
        })
    }
    fn value(&self, metric: &str, queue: &str) -> f64 {
        let key = (metric.to_string(), queue.to_string());
        self.0.gauges.lock().get(&key).copied().unwrap_or(0.0)
    }
    fn observed(&self, metric: &str, queue: &str) -> Vec<f64> {
        let key = (metric.to_string(), queue.to_string());
        self.0
            .observations
            .lock()
            .get(&key)
            .cloned()
            .unwrap_or_default()
    }
}

impl MetricsProvider for Provider {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        self.series(names::DEPTH, name)
    }
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        self.series(names::ADDS, name)
    }
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        self.series(names::QUEUE_LATENCY, name)
    }
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        self.series(names::WORK_DURATION, name)
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        self.series(names::UNFINISHED_WORK, name)
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        self.series(names::LONGEST_RUNNING_PROCESSOR, name)
    }
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        self.series(names::RETRIES, name)
    }
}

#[tokio::test(start_paused = true)]
async fn named_queue_reports_depth_adds_latency_and_work_duration() {
    let p = Provider::default();
    let q =
        Queue::with_config(QueueConfig::named("foos").with_metrics_provider(Arc::new(p.clone())));

    q.add("a");
    q.add("b");
    q.add("a"); // deduplicated: not an add
    assert_eq!(p.value(names::ADDS, "foos"), 2.0);
    assert_eq!(p.value(names::DEPTH, "foos"), 2.0);

    advance(Duration::from_millis(250)).await;
    let a = q.get().await.unwrap();
    assert_eq!(p.value(names::DEPTH, "foos"), 1.0);
    assert_eq!(p.observed(names::QUEUE_LATENCY, "foos"), [0.25]);

    advance(Duration::from_secs(2)).await;
    a.done();
    assert_eq!(p.observed(names::WORK_DURATION, "foos"), [2.0]);

    // An add while processing counts as an add and as depth (client-go does too).
    let b = q.get().await.unwrap();
    q.add("b");
    assert_eq!(p.value(names::ADDS, "foos"), 3.0);
    assert_eq!(p.value(names::DEPTH, "foos"), 1.0);
    b.done();
    q.get().await.unwrap().done();
    assert_eq!(p.value(names::DEPTH, "foos"), 0.0);
}

#[tokio::test(start_paused = true)]
async fn unfinished_work_gauges_track_stuck_workers() {
    let p = Provider::default();
    let q =
        Queue::with_config(QueueConfig::named("slow").with_metrics_provider(Arc::new(p.clone())));
    q.add(1);
    q.add(2);
    let one = q.get().await.unwrap();
    advance(Duration::from_secs(1)).await;
    let two = q.get().await.unwrap();
    // The updater ticks every 500 ms from the queue's creation; the tick at 2 s sees
    // item 1 running for 2 s and item 2 for 1 s. Look at 2.25 s, between ticks.
    tokio::time::sleep(Duration::from_millis(1250)).await;
    assert_eq!(p.value(names::LONGEST_RUNNING_PROCESSOR, "slow"), 2.0);
    assert_eq!(p.value(names::UNFINISHED_WORK, "slow"), 3.0);
    drop((one, two));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(p.value(names::UNFINISHED_WORK, "slow"), 0.0);
}

#[tokio::test(start_paused = true)]
async fn add_after_counts_retries() {
    let p = Provider::default();
    let q = DelayingQueue::with_config(
        QueueConfig::named("retry").with_metrics_provider(Arc::new(p.clone())),
    );
    q.add_after("a", Duration::from_millis(5));
    q.add_after("a", Duration::ZERO);
    assert_eq!(p.value(names::RETRIES, "retry"), 2.0);
    q.shut_down();
    q.add_after("a", Duration::ZERO);
    assert_eq!(p.value(names::RETRIES, "retry"), 2.0, "not after shutdown");
}

#[tokio::test]
async fn unnamed_queue_creates_no_metrics() {
    let p = Provider::default();
    let q = Queue::with_config(QueueConfig::default().with_metrics_provider(Arc::new(p.clone())));
    q.add(1);
    q.get().await.unwrap().done();
    assert!(p.0.created.lock().is_empty());
}

#[tokio::test]
async fn every_client_go_metric_is_created_per_named_queue() {
    let p = Provider::default();
    let _q = DelayingQueue::<u8>::with_config(
        QueueConfig::named("all").with_metrics_provider(Arc::new(p.clone())),
    );
    let mut created: Vec<_> = p.0.created.lock().iter().map(|(m, _)| m.clone()).collect();
    created.sort();
    let mut expected = vec![
        "workqueue_adds_total",
        "workqueue_depth",
        "workqueue_longest_running_processor_seconds",
        "workqueue_queue_duration_seconds",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_work_duration_seconds",
    ];
    expected.sort();
    assert_eq!(created, expected);
    assert!(p.0.created.lock().iter().all(|(_, q)| q == "all"));
}

/// Depth per priority, as controller-runtime's fake provider keeps it:
/// (queue, priority) -> (value, lowest value ever).
type PriorityDepths = Arc<Mutex<HashMap<(String, i32), (i64, i64)>>>;

/// [`Provider`] plus depth per priority.
#[derive(Clone, Default)]
struct WithPriority {
    plain: Provider,
    depth: PriorityDepths,
}

impl WithPriority {
    fn depth(&self, queue: &str) -> Vec<(i32, i64)> {
        let mut d: Vec<_> = self
            .depth
            .lock()
            .iter()
            .filter(|((q, _), _)| q == queue)
            .map(|((_, p), (v, _))| (*p, *v))
            .collect();
        d.sort_unstable();
        d
    }
    fn never_negative(&self) -> bool {
        self.depth.lock().values().all(|(_, low)| *low >= 0)
    }
}

struct PriorityDepth {
    depth: PriorityDepths,
    queue: String,
}

impl PriorityDepth {
    fn bump(&self, priority: i32, by: i64) {
        let mut d = self.depth.lock();
        let (v, low) = d.entry((self.queue.clone(), priority)).or_default();
        *v += by;
        *low = (*low).min(*v);
    }
}

impl PriorityGaugeMetric for PriorityDepth {
    fn inc(&self, priority: i32) {
        self.bump(priority, 1);
    }
    fn dec(&self, priority: i32) {
        self.bump(priority, -1);
    }
}

impl MetricsProvider for WithPriority {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        self.plain.new_depth_metric(name)
    }
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        self.plain.new_adds_metric(name)
    }
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        self.plain.new_latency_metric(name)
    }
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        self.plain.new_work_duration_metric(name)
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        self.plain.new_unfinished_work_seconds_metric(name)
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        self.plain
            .new_longest_running_processor_seconds_metric(name)
    }
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        self.plain.new_retries_metric(name)
    }
    fn new_depth_with_priority_metric(&self, name: &str) -> Option<Arc<dyn PriorityGaugeMetric>> {
        Some(Arc::new(PriorityDepth {
            depth: Arc::clone(&self.depth),
            queue: name.to_string(),
        }))
    }
}

#[tokio::test(start_paused = true)]
async fn depth_with_priority_is_fed_besides_the_plain_depth() {
    let p = WithPriority::default();
    // Priorities are given with `RateLimitingQueue::add_with_opts`.
    let q = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        QueueConfig::named("prio").with_metrics_provider(Arc::new(p.clone())),
    );
    let plain = |m| p.plain.value(m, "prio");
    let at = |priority| AddOpts {
        priority,
        ..AddOpts::default()
    };

    q.add("a");
    q.add_with_opts("b", at(LOW));
    assert_eq!(p.depth("prio"), [(LOW, 1), (DEFAULT, 1)]);
    assert_eq!((plain(names::DEPTH), plain(names::ADDS)), (2.0, 2.0));

    // A raise moves the count, and is no add (controller-runtime's
    // updateDepthWithPriorityMetric).
    q.add_with_opts("b", at(5));
    q.add_with_opts("b", at(1)); // lower: nothing
    assert_eq!(p.depth("prio"), [(LOW, 0), (DEFAULT, 1), (5, 1)]);
    assert_eq!((plain(names::DEPTH), plain(names::ADDS)), (2.0, 2.0));

    let b = q.get().await.unwrap();
    assert_eq!(b.priority(), 5);
    assert_eq!(p.depth("prio"), [(LOW, 0), (DEFAULT, 1), (5, 0)]);
    assert_eq!(plain(names::DEPTH), 1.0);

    // Added while held: counted (as client-go counts the plain depth), then raised.
    q.add_with_opts("b", at(LOW));
    assert_eq!(p.depth("prio"), [(LOW, 1), (DEFAULT, 1), (5, 0)]);
    q.add_with_opts("b", at(3));
    assert_eq!(p.depth("prio"), [(LOW, 0), (DEFAULT, 1), (3, 1), (5, 0)]);
    assert_eq!((plain(names::DEPTH), plain(names::ADDS)), (2.0, 3.0));
    b.done(); // back in line at 3: no change
    assert_eq!(p.depth("prio"), [(LOW, 0), (DEFAULT, 1), (3, 1), (5, 0)]);

    // A delayed add counts when it is due, at its priority.
    let later = AddOpts {
        after: Duration::from_millis(10),
        priority: 4,
        ..AddOpts::default()
    };
    q.add_with_opts("c", later);
    assert_eq!(p.depth("prio").iter().map(|(_, v)| v).sum::<i64>(), 2);
    // Sleeping past the due time lets the queue's timer task run first.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        p.depth("prio"),
        [(LOW, 0), (DEFAULT, 1), (3, 1), (4, 1), (5, 0)]
    );

    let mut order = Vec::new();
    while let Some(item) = q.try_get() {
        order.push((*item, item.priority()));
    }
    assert_eq!(order, [("c", 4), ("b", 3), ("a", DEFAULT)]);
    assert!(
        p.depth("prio").iter().all(|(_, v)| *v == 0),
        "{:?}",
        p.depth("prio")
    );
    assert!(p.never_negative(), "every dec follows its inc");
    assert_eq!(plain(names::DEPTH), 0.0);
}
