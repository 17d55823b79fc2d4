//! `Metrics::install_global`: queues, reflectors, informers and the reconcile hook
//! created afterwards report without being handed a provider. (A test binary of its own: the
//! process-wide providers can be set once per process.)

use std::sync::Arc;
use std::time::Duration;

use cache::informer_metrics::InformerNameAndResource;
use cache::testing::{ScriptedListerWatcher, config_map};
use cache::{DeltaFifo, InformerQueue, Reflector, SharedIndexInformer};
use controller::metrics::{
    ReconcileResult, global_reconcile_observer, init_reconcile_metrics, observe_reconcile,
};
use k8s_openapi::api::core::v1::ConfigMap;
use metrics::Metrics;
use metrics::testing::sample_value;
use tokio_util::sync::CancellationToken;
use workqueue::RateLimitingQueue;

#[tokio::test(start_paused = true)]
async fn installed_providers_feed_one_registry_and_only_the_first_install_counts() {
    // Before anything is installed the hooks are no-ops (and must not panic).
    observe_reconcile("early", ReconcileResult::Success, Duration::from_millis(1));
    assert!(global_reconcile_observer().is_none());

    let metrics = Metrics::new();
    assert!(metrics.install_global());
    assert!(
        !Metrics::new().install_global(),
        "a second install is refused"
    );
    assert!(global_reconcile_observer().is_some());

    // A queue made the usual way, with no provider of its own.
    let queue: RateLimitingQueue<String> = RateLimitingQueue::with_default_rate_limiter("global-q");
    queue.add("k".to_string());

    // A reflector made the usual way (as an informer makes it), listing in pages so
    // that exactly one list and one watch are counted.
    let source = Arc::new(ScriptedListerWatcher::<ConfigMap>::new());
    source.push_list_items(vec![], "3");
    let reflector = Arc::new(
        Reflector::new(
            "global-r",
            source.clone(),
            Arc::new(InformerQueue::from(DeltaFifo::new(None, None))),
        )
        .with_watch_list(false),
    );
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        async move { reflector.run(cancel).await }
    });
    for _ in 0..1000 {
        if !source.watch_calls().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    cancel.cancel();
    run.await.unwrap();

    // The reconcile hook the controller loop calls.
    init_reconcile_metrics("c");
    observe_reconcile("c", ReconcileResult::RequeueAfter, Duration::from_millis(1));

    let text = metrics.registry.encode().unwrap();
    assert_eq!(
        sample_value(&text, "workqueue_adds_total", &[("name", "global-q")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample_value(&text, "reflector_lists_total", &[("name", "global-r")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample_value(&text, "reflector_watches_total", &[("name", "global-r")]),
        Some(1.0),
        "{text}"
    );
    let c = |result| [("controller", "c"), ("result", result)];
    assert_eq!(
        sample_value(
            &text,
            "controller_runtime_reconcile_total",
            &c("requeue_after")
        ),
        Some(1.0)
    );
    assert_eq!(
        sample_value(&text, "controller_runtime_reconcile_total", &c("error")),
        Some(0.0)
    );
    assert_eq!(
        sample_value(
            &text,
            "controller_runtime_reconcile_total",
            &[("controller", "early")]
        ),
        None,
        "nothing is recorded before install"
    );
    queue.shut_down();

    // An informer with an identity (as a factory with a name gives it), on the default
    // (atomic) queue: after its initial list, the informer families report its queue,
    // its processing and the store's version. A second informer of the same (name,
    // resource) reports nothing (client-go's `Reserved()`).
    let id = InformerNameAndResource {
        name: "global-m".into(),
        group: String::new(),
        version: "v1".into(),
        resource: "configmaps".into(),
    };
    let source = Arc::new(ScriptedListerWatcher::<ConfigMap>::new());
    source.push_list_items(vec![config_map("a", "5"), config_map("b", "6")], "7");
    let informer = SharedIndexInformer::new("cm", source.clone(), Duration::ZERO);
    informer.set_metrics_identity(id.clone());
    let twin_source = Arc::new(ScriptedListerWatcher::<ConfigMap>::new());
    twin_source.push_list_items(vec![config_map("z", "9")], "90");
    let twin = SharedIndexInformer::new("cm-twin", twin_source, Duration::ZERO);
    twin.set_metrics_identity(id);
    let cancel = CancellationToken::new();
    let runs = [informer.clone(), twin.clone()].map(|i| {
        let cancel = cancel.clone();
        tokio::spawn(async move { i.run(cancel).await })
    });
    for _ in 0..1000 {
        if informer.has_synced() && twin.has_synced() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(informer.has_synced() && twin.has_synced());
    let text = metrics.registry.encode().unwrap();
    let labels = [
        ("name", "global-m"),
        ("group", ""),
        ("version", "v1"),
        ("resource", "configmaps"),
    ];
    assert_eq!(
        sample_value(&text, "informer_store_resource_version", &labels),
        Some(7.0),
        "the first informer's list, not its twin's (90): {text}"
    );
    assert_eq!(
        sample_value(&text, "informer_queued_items", &labels),
        Some(0.0),
        "{text}"
    );
    let processed = sample_value(&text, "informer_processing_latency_seconds_count", &labels)
        .expect("processing latency observed");
    assert!(processed >= 1.0, "{text}");
    cancel.cancel();
    for run in runs {
        run.await.unwrap();
    }
}
