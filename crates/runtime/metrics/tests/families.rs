//! Each metric family, driven by the real thing (a workqueue, a reflector over a
//! scripted API, reconcile observations, leader callbacks) and read back from the text
//! exposition the way Prometheus would.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use cache::testing::{ScriptedListerWatcher, api_error, config_map, gone};
use cache::{DeltaFifo, InformerQueue, Reflector};
use controller::metrics::{FreshnessResult, ReconcileObserver, ReconcileResult};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;
use metrics::testing::{parse_samples, sample_value};
use metrics::workqueue_metrics::{MAX_PRIORITY_LABELS, PRIORITY_CARDINALITY_EXCEEDED};
use metrics::{
    LeaderElectionMetrics, ReconcileMetrics, ReflectorMetrics, Registry, WorkqueueMetrics,
};
use tokio::time::advance;
use tokio_util::sync::CancellationToken;
use workqueue::{
    AddOpts, ItemExponentialFailureRateLimiter, QueueConfig, RateLimitingQueue,
    default_controller_rate_limiter, priority,
};

fn value(registry: &Registry, name: &str, labels: &[(&str, &str)]) -> f64 {
    let text = registry.encode().unwrap();
    sample_value(&text, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"))
}

#[tokio::test(start_paused = true)]
async fn workqueue_families_follow_a_real_queue() {
    let registry = Registry::new();
    let provider = Arc::new(WorkqueueMetrics::new(&registry));
    let queue = RateLimitingQueue::with_config(
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1)),
        QueueConfig::named("foos").with_metrics_provider(provider),
    );
    let q = [("name", "foos")];

    queue.add("a".to_string());
    queue.add("b".to_string());
    queue.add("a".to_string()); // deduplicated: not an add
    assert_eq!(value(&registry, "workqueue_adds_total", &q), 2.0);
    assert_eq!(value(&registry, "workqueue_depth", &q), 2.0);

    // "a" waits 2 s for a worker, then takes 3 s.
    advance(Duration::from_secs(2)).await;
    let a = queue.get().await.unwrap();
    assert_eq!(value(&registry, "workqueue_depth", &q), 1.0);
    advance(Duration::from_secs(3)).await;
    a.done();
    let queued = [("name", "foos"), ("le", "1.0")];
    assert_eq!(
        value(&registry, "workqueue_queue_duration_seconds_count", &q),
        1.0
    );
    assert_eq!(
        value(&registry, "workqueue_queue_duration_seconds_sum", &q),
        2.0
    );
    assert_eq!(
        value(
            &registry,
            "workqueue_queue_duration_seconds_bucket",
            &queued
        ),
        0.0
    );
    assert_eq!(
        value(
            &registry,
            "workqueue_queue_duration_seconds_bucket",
            &[("name", "foos"), ("le", "10.0")]
        ),
        1.0
    );
    assert_eq!(
        value(&registry, "workqueue_work_duration_seconds_sum", &q),
        3.0
    );
    assert_eq!(
        value(&registry, "workqueue_work_duration_seconds_count", &q),
        1.0
    );

    // A failed sync: requeued with backoff, counted as a retry and, when it is due, an add.
    let b = queue.get().await.unwrap();
    queue.add_rate_limited(b.clone());
    b.done();
    assert_eq!(value(&registry, "workqueue_retries_total", &q), 1.0);
    // Sleeping (not `advance`) lets the queue's timer task fire at 5 ms first.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(value(&registry, "workqueue_adds_total", &q), 3.0);
    assert_eq!(value(&registry, "workqueue_depth", &q), 1.0);

    // A stuck worker shows in the unfinished-work gauges (refreshed every 500 ms).
    let stuck = queue.get().await.unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let longest = value(&registry, "workqueue_longest_running_processor_seconds", &q);
    assert!((3.5..=4.0).contains(&longest), "{longest}");
    assert_eq!(
        value(&registry, "workqueue_unfinished_work_seconds", &q),
        longest
    );
    stuck.done();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        value(&registry, "workqueue_unfinished_work_seconds", &q),
        0.0
    );
    assert_eq!(value(&registry, "workqueue_depth", &q), 0.0);
    queue.shut_down();
}

#[tokio::test(start_paused = true)]
async fn workqueue_depth_with_priority_follows_a_real_queue() {
    let registry = Registry::new();
    let provider = Arc::new(WorkqueueMetrics::new(&registry));
    let queue = RateLimitingQueue::with_config(
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1)),
        QueueConfig::named("prio").with_metrics_provider(provider),
    );
    let at = |p: &'static str| [("name", "prio"), ("priority", p)];
    let depth = |p| value(&registry, "workqueue_depth_with_priority", &at(p));

    let low = AddOpts {
        priority: priority::LOW,
        ..AddOpts::default()
    };
    queue.add("changed".to_string());
    queue.add_with_opts("listed-1".to_string(), low);
    queue.add_with_opts("listed-2".to_string(), low);
    assert_eq!((depth("0"), depth("-100")), (1.0, 2.0));
    // The plain depth is still client-go's, across priorities.
    assert_eq!(
        value(&registry, "workqueue_depth", &[("name", "prio")]),
        3.0
    );

    // An event for a listed object raises it: the count moves with it.
    queue.add("listed-2".to_string());
    assert_eq!((depth("0"), depth("-100")), (2.0, 1.0));

    let first = queue.get().await.unwrap();
    assert_eq!((first.as_str(), first.priority()), ("changed", 0));
    assert_eq!(depth("0"), 1.0);
    // A failure requeued at the priority it had: counted once it is due.
    let retry = AddOpts {
        rate_limited: true,
        priority: first.priority(),
        ..AddOpts::default()
    };
    queue.add_with_opts(&first, retry);
    first.done();
    assert_eq!(depth("0"), 1.0);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(depth("0"), 2.0);

    while let Some(item) = queue.try_get() {
        item.done();
    }
    assert_eq!((depth("0"), depth("-100")), (0.0, 0.0));
    assert_eq!(
        value(&registry, "workqueue_depth", &[("name", "prio")]),
        0.0
    );
    queue.shut_down();
}

#[tokio::test]
async fn workqueue_depth_with_priority_labels_a_bounded_number_of_priorities() {
    let registry = Registry::new();
    let provider = Arc::new(WorkqueueMetrics::new(&registry));
    // Priorities are given with `RateLimitingQueue::add_with_opts`.
    let queue = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        QueueConfig::named("many").with_metrics_provider(provider),
    );
    let extra = 5;
    let priorities = (0..(MAX_PRIORITY_LABELS + extra) as i32).map(|p| p * 10);
    for p in priorities.clone() {
        let opts = AddOpts {
            priority: p,
            ..AddOpts::default()
        };
        queue.add_with_opts(p, opts);
    }
    let text = registry.encode().unwrap();
    let series = parse_samples(&text)
        .into_iter()
        .filter(|s| s.name == "workqueue_depth_with_priority")
        .count();
    assert_eq!(series, MAX_PRIORITY_LABELS + 1, "{text}");
    let exceeded = [
        ("name", "many"),
        ("priority", PRIORITY_CARDINALITY_EXCEEDED),
    ];
    let zero = [("name", "many"), ("priority", "0")];
    assert_eq!(
        value(&registry, "workqueue_depth_with_priority", &zero),
        1.0
    );
    assert_eq!(
        value(&registry, "workqueue_depth_with_priority", &exceeded),
        extra as f64
    );
    // Every priority keeps its series: handing everything out balances each one.
    while let Some(item) = queue.try_get() {
        item.done();
    }
    let text = registry.encode().unwrap();
    for sample in parse_samples(&text) {
        if sample.name == "workqueue_depth_with_priority" {
            assert_eq!(sample.value, 0.0, "{text}");
        }
    }
}

#[tokio::test]
async fn unnamed_queues_report_nothing() {
    let registry = Registry::new();
    let provider = Arc::new(WorkqueueMetrics::new(&registry));
    let queue = RateLimitingQueue::with_config(
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1)),
        QueueConfig::default().with_metrics_provider(provider),
    );
    queue.add(1u32);
    // No series at all (families without series are not even listed).
    assert_eq!(registry.encode().unwrap(), "# EOF\n");
}

#[tokio::test(start_paused = true)]
async fn reflector_families_count_lists_watches_and_their_failures() {
    let registry = Registry::new();
    let provider = Arc::new(ReflectorMetrics::new(&registry));
    let source = Arc::new(ScriptedListerWatcher::<ConfigMap>::new());
    // 1st list fails, 2nd returns two objects at rv 10.
    source.push_list(Err(api_error(500, "InternalError", "etcd is sad")));
    source.push_list_items(vec![config_map("a", "1"), config_map("b", "2")], "10");
    // Watch 1: two events, then the server closes it (normal).
    source.push_watch(
        vec![
            Ok(WatchEvent::Added(config_map("c", "11"))),
            Ok(WatchEvent::Modified(config_map("a", "12"))),
        ],
        true,
    );
    // Watch 2 cannot start; watch 3 closes at once, empty (short); watch 4 is 410.
    source.push_watch_error(api_error(503, "ServiceUnavailable", "restarting"));
    source.push_watch(vec![], true);
    source.push_watch_error(gone());
    // The relist after 410; then a quiet watch (script exhausted: pending for ever).
    source.push_list_items(vec![config_map("a", "20")], "20");

    let fifo = Arc::new(InformerQueue::from(DeltaFifo::new(None, None)));
    let reflector = Arc::new(
        Reflector::new("configmaps", source.clone(), fifo).with_metrics_provider(provider),
    );
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        async move { reflector.run(cancel).await }
    });
    // Paused time: the backoff sleeps pass instantly. 5 watch calls = the quiet one.
    for _ in 0..10_000 {
        if source.watch_calls().len() == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        source.watch_calls().len(),
        5,
        "the reflector did not reach the last watch"
    );

    let n = [("name", "configmaps")];
    assert_eq!(value(&registry, "reflector_lists_total", &n), 3.0);
    assert_eq!(value(&registry, "reflector_list_errors_total", &n), 1.0);
    assert_eq!(
        value(&registry, "reflector_list_duration_seconds_count", &n),
        2.0
    );
    assert_eq!(value(&registry, "reflector_items_per_list_count", &n), 2.0);
    assert_eq!(value(&registry, "reflector_items_per_list_sum", &n), 3.0);
    // 5 watches + the streaming-list attempt the reflector makes first (a watch
    // request; the scripted source answers it 422, as a server without WatchList).
    assert_eq!(source.watch_list_calls().len(), 1);
    assert_eq!(value(&registry, "reflector_watches_total", &n), 6.0);
    assert_eq!(
        value(&registry, "reflector_watch_errors_total", &n),
        1.0,
        "410 is not an error"
    );
    assert_eq!(value(&registry, "reflector_short_watches_total", &n), 1.0);
    assert_eq!(
        value(&registry, "reflector_last_resource_version", &n),
        20.0
    );

    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_last_resource_version_follows_events_and_ignores_non_numbers() {
    let registry = Registry::new();
    let provider = Arc::new(ReflectorMetrics::new(&registry));
    let source = Arc::new(ScriptedListerWatcher::<ConfigMap>::new());
    source.push_list_items(vec![], "5");
    let watch = source.push_watch_channel();
    let fifo = Arc::new(InformerQueue::from(DeltaFifo::new(None, None)));
    let reflector =
        Arc::new(Reflector::new("cms", source.clone(), fifo).with_metrics_provider(provider));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        async move { reflector.run(cancel).await }
    });
    let n = [("name", "cms")];
    let wait_rv = |rv: &'static str| {
        let reflector = reflector.clone();
        async move {
            for _ in 0..1000 {
                if reflector.last_sync_resource_version() == rv {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            panic!("never reached rv {rv}");
        }
    };
    wait_rv("5").await;
    assert_eq!(value(&registry, "reflector_last_resource_version", &n), 5.0);
    watch
        .send(Ok(WatchEvent::Added(config_map("x", "42"))))
        .unwrap();
    wait_rv("42").await;
    assert_eq!(
        value(&registry, "reflector_last_resource_version", &n),
        42.0
    );
    // Resource versions are opaque: a non-numeric one leaves the gauge alone.
    watch
        .send(Ok(WatchEvent::Added(config_map("y", "v43"))))
        .unwrap();
    wait_rv("v43").await;
    assert_eq!(
        value(&registry, "reflector_last_resource_version", &n),
        42.0
    );
    cancel.cancel();
    run.await.unwrap();
}

#[test]
fn reconcile_families_count_results_errors_panics_timeouts_and_durations() {
    let registry = Registry::new();
    let reconcile = ReconcileMetrics::new(&registry);
    reconcile.init_controller("foo");
    let total = |result: &str| {
        value(
            &registry,
            "controller_runtime_reconcile_total",
            &[("controller", "foo"), ("result", result)],
        )
    };
    for result in ["success", "error", "requeue_after", "panic", "timeout"] {
        assert_eq!(total(result), 0.0, "pre-created at zero: {result}");
    }
    let foo = [("controller", "foo")];
    assert_eq!(
        value(
            &registry,
            "controller_runtime_reconcile_timeouts_total",
            &foo
        ),
        0.0,
        "pre-created at zero"
    );

    reconcile.observe("foo", ReconcileResult::Success, Duration::from_millis(3));
    reconcile.observe("foo", ReconcileResult::Success, Duration::from_millis(30));
    reconcile.observe("foo", ReconcileResult::Error, Duration::from_millis(200));
    reconcile.observe("foo", ReconcileResult::RequeueAfter, Duration::from_secs(2));
    reconcile.observe("foo", ReconcileResult::Panic, Duration::from_secs(90));
    reconcile.observe("foo", ReconcileResult::Timeout, Duration::from_secs(30));
    reconcile.observe("bar", ReconcileResult::Success, Duration::from_millis(1));

    assert_eq!(total("success"), 2.0);
    assert_eq!(total("error"), 1.0);
    assert_eq!(total("requeue_after"), 1.0);
    assert_eq!(total("panic"), 1.0);
    assert_eq!(total("timeout"), 1.0);
    // Errors, panics and timeouts are all failed syncs.
    assert_eq!(
        value(&registry, "controller_runtime_reconcile_errors_total", &foo),
        3.0
    );
    assert_eq!(
        value(&registry, "controller_runtime_reconcile_panics_total", &foo),
        1.0
    );
    assert_eq!(
        value(
            &registry,
            "controller_runtime_reconcile_timeouts_total",
            &foo
        ),
        1.0
    );
    assert_eq!(
        value(
            &registry,
            "controller_runtime_reconcile_time_seconds_count",
            &foo
        ),
        6.0
    );
    let bucket = |le: &str| {
        value(
            &registry,
            "controller_runtime_reconcile_time_seconds_bucket",
            &[("controller", "foo"), ("le", le)],
        )
    };
    assert_eq!(bucket("0.005"), 1.0);
    assert_eq!(bucket("0.05"), 2.0);
    assert_eq!(bucket("0.25"), 3.0);
    assert_eq!(bucket("2.0"), 4.0);
    assert_eq!(
        bucket("60.0"),
        5.0,
        "30 s is in it, 90 s is past the last bucket"
    );
    assert_eq!(bucket("+Inf"), 6.0);
    let sum = value(
        &registry,
        "controller_runtime_reconcile_time_seconds_sum",
        &foo,
    );
    assert!((sum - 122.233).abs() < 1e-9, "{sum}");
    // Controllers are separate series.
    assert_eq!(
        value(
            &registry,
            "controller_runtime_reconcile_total",
            &[("controller", "bar"), ("result", "success")]
        ),
        1.0
    );
}

#[test]
fn leader_status_is_one_while_leading() {
    let registry = Registry::new();
    let leader = LeaderElectionMetrics::new(&registry);
    let lease = [("name", "foo-controller")];
    leader.off("foo-controller");
    assert_eq!(
        value(&registry, "leader_election_master_status", &lease),
        0.0
    );
    leader.on("foo-controller");
    assert_eq!(
        value(&registry, "leader_election_master_status", &lease),
        1.0
    );
    leader.set_leading("foo-controller", false);
    assert_eq!(
        value(&registry, "leader_election_master_status", &lease),
        0.0
    );
    let text = registry.encode().unwrap();
    assert!(
        text.contains("# TYPE leader_election_master_status gauge"),
        "{text}"
    );
}

#[test]
fn freshness_families_count_checks_by_result_and_time_the_waits() {
    let registry = Registry::new();
    let reconcile = ReconcileMetrics::new(&registry);
    reconcile.observe_freshness("foo", FreshnessResult::Fresh, Duration::ZERO);
    reconcile.observe_freshness("foo", FreshnessResult::Fresh, Duration::from_millis(30));
    reconcile.observe_freshness("foo", FreshnessResult::Stale, Duration::from_secs(2));
    reconcile.observe_freshness("bar", FreshnessResult::Incomparable, Duration::ZERO);
    let checks = |controller: &str, result: &str| {
        value(
            &registry,
            "controller_freshness_checks_total",
            &[("controller", controller), ("result", result)],
        )
    };
    assert_eq!(checks("foo", "fresh"), 2.0);
    assert_eq!(checks("foo", "stale"), 1.0);
    assert_eq!(checks("bar", "incomparable"), 1.0);
    let waits = |le: &str| {
        value(
            &registry,
            "controller_freshness_wait_seconds_bucket",
            &[("controller", "foo"), ("le", le)],
        )
    };
    assert_eq!(waits("0.0005"), 1.0); // the wait that was not needed
    assert_eq!(waits("0.05"), 2.0);
    assert_eq!(waits("1.0"), 2.0);
    assert_eq!(waits("2.5"), 3.0); // the bound
}
