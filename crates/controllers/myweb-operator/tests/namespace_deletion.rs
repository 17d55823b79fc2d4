//! The MyWeb operator while its namespace is being deleted: the API server refuses a
//! create (403 with the `NamespaceTerminating` cause) and the status write of a MyWeb
//! deleted meanwhile answers 404. Both are expected states (`controller::expected`):
//! the reconcile ends `Ok`, the loop counts a success, not an error, and the key is not
//! requeued. A plain 403 (RBAC) is still an error. Run through the builder's adapter and
//! the loop, as the binary runs it.
//!
//! Own test binary: it installs the process-wide reconcile observer
//! (`controller::testing::record_reconcile_results`).

// Test code: an unwrap is an assertion.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use apis::operator::v1::{MyWeb, MyWebSpec};
use builder::ReconcilerAdapter;
use cache::{Indexer, Lister};
use controller::Controller;
use controller::metrics::ReconcileResult;
use controller::testing::{
    FakeApi, namespace_terminating, reconcile_results, record_reconcile_results,
};
use myweb_operator::{Listers, MyWebReconciler};
use record::FakeRecorder;
use workqueue::RateLimitingQueue;

/// A MyWeb `default/site` in the cache and none of its objects: the reconcile creates
/// the ConfigMap first.
fn reconciler(api: &FakeApi, events: &FakeRecorder) -> MyWebReconciler {
    let webs = Indexer::new();
    let mut web = MyWeb::new("site", MyWebSpec::new("nginx:1.27", 30080, "<h1>hi</h1>"));
    web.metadata.namespace = Some("default".into());
    web.metadata.uid = Some("uid-site".into());
    web.metadata.resource_version = Some("7".into());
    web.metadata.generation = Some(1);
    webs.add("default/site".to_string(), Arc::new(web));
    let listers = Listers {
        webs: Lister::new(webs),
        config_maps: Lister::new(Indexer::new()),
        deployments: Lister::new(Indexer::new()),
        services: Lister::new(Indexer::new()),
    };
    MyWebReconciler::new(api.client(), listers, events.recorder())
}

/// Reconciles `default/site` once through the loop; returns the results the loop
/// reported and the key's rate-limited requeues.
async fn sync_once(
    name: &str,
    api: &FakeApi,
    events: &FakeRecorder,
) -> (Vec<ReconcileResult>, u32) {
    record_reconcile_results();
    let queue = RateLimitingQueue::with_default_rate_limiter(name);
    let handler = ReconcilerAdapter::new(reconciler(api, events));
    let controller = Controller::new(name, queue.clone(), handler);
    let key = "default/site".to_string();
    queue.add(key.clone());
    assert!(controller.process_next_work_item().await);
    (reconcile_results(name), queue.num_requeues(&key))
}

#[tokio::test]
async fn a_create_refused_in_a_terminating_namespace_ends_the_reconcile_quietly() {
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next_status(
        "create",
        "configmaps",
        namespace_terminating("default", "configmaps", "site"),
    );

    let (results, requeues) = sync_once("myweb-terminating", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Success], "not a sync error");
    assert_eq!(requeues, 0, "no rate-limited requeue");
    // One attempt, then nothing: no Deployment, no Ready=False status, no Warning.
    assert_eq!(api.action_names(), ["create configmaps"]);
    assert!(events.events().is_empty(), "{:?}", events.events());
}

#[tokio::test]
async fn a_plain_forbidden_create_is_still_an_error_and_reported() {
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next("create", "configmaps", 403, "Forbidden");

    let (results, requeues) = sync_once("myweb-forbidden", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Error]);
    assert_eq!(requeues, 1, "retried with backoff: RBAC may be fixed");
    assert_eq!(
        api.action_names(),
        ["create configmaps", "update mywebs/status"]
    );
    assert_eq!(events.events().len(), 1, "{:?}", events.events());
}

#[tokio::test]
async fn a_status_write_to_a_deleted_web_ends_the_reconcile() {
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next("update", "mywebs/status", 404, "NotFound");

    let (results, requeues) = sync_once("myweb-status-gone", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Success], "not a sync error");
    assert_eq!(requeues, 0, "no rate-limited requeue for a gone object");
    assert_eq!(
        api.action_names(),
        [
            "create configmaps",
            "create deployments",
            "create services",
            "update mywebs/status"
        ]
    );
}

#[tokio::test]
async fn a_status_write_to_a_deleted_web_ends_the_reconcile_even_after_a_failure() {
    // Step 2 failed (a 500), and then the status write finds the MyWeb gone: the
    // failure was about an object that no longer exists, so it is not retried either.
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next("create", "configmaps", 500, "InternalError");
    api.fail_next("update", "mywebs/status", 404, "NotFound");

    let (results, requeues) = sync_once("myweb-failed-then-gone", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Success]);
    assert_eq!(requeues, 0);
    assert_eq!(
        api.action_names(),
        ["create configmaps", "update mywebs/status"]
    );
}

#[tokio::test]
async fn a_failed_status_write_of_a_live_web_is_still_retried() {
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next("update", "mywebs/status", 500, "InternalError");

    let (results, requeues) = sync_once("myweb-status-500", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Error]);
    assert_eq!(requeues, 1);
}
