//! e2e against the real control plane (crates/dev/testenv): an informer on ConfigMaps with
//! the process-wide providers installed, its keys fed through a named workqueue to a
//! worker that reports each sync. `/metrics` must show the reflector's list and watch,
//! the queue's adds and the reconcile counters; `/readyz` must turn 200 once the
//! informer `has_synced`, and `/healthz` must be 200 throughout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use cache::{ApiListerWatcher, EventHandlerFuncs, SharedIndexInformer, meta_namespace_key};
use controller::metrics::{ReconcileResult, observe_reconcile};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use metrics::testing::{http_get, sample_value};
use metrics::{BindAddress, Health, Metrics, bind_health, bind_metrics};
use testenv::{Check, TestEnv, wait_for};
use tokio_util::sync::CancellationToken;
use workqueue::RateLimitingQueue;

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_readiness_follow_a_real_informer() -> anyhow::Result<()> {
    let metrics = Metrics::new();
    assert!(metrics.install_global());
    let env = TestEnv::new().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), env.namespace());
    for name in ["one", "two"] {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm).await?;
    }

    let informer = SharedIndexInformer::new(
        "e2e-configmaps",
        Arc::new(ApiListerWatcher::new(api.clone())),
        Duration::ZERO,
    );
    let queue: RateLimitingQueue<String> =
        RateLimitingQueue::with_default_rate_limiter("e2e-queue");
    let _registration = informer.add_event_handler(EventHandlerFuncs::new().on_add({
        let queue = queue.clone();
        move |cm: &Arc<ConfigMap>, _| {
            if let Ok(key) = meta_namespace_key(cm.as_ref()) {
                queue.add(key);
            }
        }
    }));

    let health = Health::new();
    health.add_readyz_check("informers", {
        let informer = informer.clone();
        move || informer.has_synced()
    })?;
    let loopback: BindAddress = "127.0.0.1:0".parse()?;
    let cancel = CancellationToken::new();
    let metrics_server = bind_metrics(&loopback, metrics.registry.clone())
        .await?
        .context("enabled")?;
    let health_server = bind_health(&loopback, health).await?.context("enabled")?;
    let (metrics_addr, health_addr) = (metrics_server.local_addr(), health_server.local_addr());
    let servers = [
        tokio::spawn(metrics_server.serve(cancel.clone())),
        tokio::spawn(health_server.serve(cancel.clone())),
    ];

    // Not started yet: alive but not ready.
    assert_eq!(http_get(health_addr, "/healthz").await?.status, 200);
    let readyz = http_get(health_addr, "/readyz").await?;
    assert_eq!(readyz.status, 503, "{}", readyz.body);
    assert!(
        readyz.body.contains("[-]informers failed"),
        "{}",
        readyz.body
    );

    let informer_task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    // A worker: every key is one successful "reconcile".
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move {
            while let Some(key) = queue.get().await {
                let started = Instant::now();
                queue.forget(&key);
                observe_reconcile(
                    "e2e-controller",
                    ReconcileResult::Success,
                    started.elapsed(),
                );
                key.done();
            }
        }
    });

    wait_for("/readyz 200", TIMEOUT, || async {
        let r = http_get(health_addr, "/readyz").await?;
        Ok::<_, std::io::Error>(Check::ready_if(
            r.status == 200,
            (),
            format!("{} {}", r.status, r.body),
        ))
    })
    .await?;
    assert!(informer.has_synced());

    let text = wait_for("/metrics after the work", TIMEOUT, || async {
        let text = http_get(metrics_addr, "/metrics").await?.body;
        let reconciled = sample_value(
            &text,
            "controller_runtime_reconcile_total",
            &[("controller", "e2e-controller"), ("result", "success")],
        );
        let done = reconciled.is_some_and(|n| n >= 2.0)
            && sample_value(
                &text,
                "reflector_watches_total",
                &[("name", "e2e-configmaps")],
            )
            .is_some_and(|n| n >= 1.0);
        Ok::<_, std::io::Error>(Check::ready_if(done, text.clone(), text))
    })
    .await?;
    let reflector = [("name", "e2e-configmaps")];
    let lists = sample_value(&text, "reflector_lists_total", &reflector)
        .context("reflector_lists_total")?;
    assert!(lists >= 1.0, "{text}");
    // The namespace was fresh: the first list saw exactly our two ConfigMaps (plus
    // kube-root-ca.crt, which the controller-manager may or may not have added yet).
    let listed =
        sample_value(&text, "reflector_items_per_list_sum", &reflector).context("items")?;
    assert!(listed >= 2.0, "{text}");
    assert_eq!(
        sample_value(&text, "reflector_list_errors_total", &reflector),
        Some(0.0)
    );
    let rv = sample_value(&text, "reflector_last_resource_version", &reflector).context("rv")?;
    assert!(rv > 0.0, "{text}");
    let q = [("name", "e2e-queue")];
    assert!(
        sample_value(&text, "workqueue_adds_total", &q).is_some_and(|n| n >= 2.0),
        "{text}"
    );
    assert!(
        sample_value(&text, "workqueue_depth", &q).is_some(),
        "{text}"
    );
    assert!(
        sample_value(&text, "workqueue_work_duration_seconds_count", &q).is_some_and(|n| n >= 2.0),
        "{text}"
    );

    cancel.cancel();
    queue.shut_down();
    for task in servers {
        tokio::time::timeout(TIMEOUT, task).await??;
    }
    tokio::time::timeout(TIMEOUT, informer_task).await??;
    tokio::time::timeout(TIMEOUT, worker).await??;
    Ok(())
}
