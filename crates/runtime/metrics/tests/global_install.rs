//! `Metrics::install_global`: queues, reflectors and the reconcile hook created
//! afterwards report without being handed a provider. (A test binary of its own: the
//! process-wide providers can be set once per process.)

use std::sync::Arc;
use std::time::Duration;

use cache::testing::ScriptedListerWatcher;
use cache::{DeltaFifo, InformerQueue, Reflector};
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
}
