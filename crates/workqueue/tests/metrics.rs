//! Metrics are fed exactly as client-go feeds them (metrics_test.go territory).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::advance;
use workqueue::{
    CounterMetric, DelayingQueue, GaugeMetric, HistogramMetric, MetricsProvider, Queue,
    QueueConfig, SettableGaugeMetric, names,
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
