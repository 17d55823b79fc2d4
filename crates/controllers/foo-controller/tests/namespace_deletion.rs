//! The Foo controller while its namespace is being deleted: the API server refuses the
//! Deployment's create (403 with the `NamespaceTerminating` cause) and the status
//! write of a Foo deleted meanwhile answers 404. Both are expected states
//! (`controller::expected`): the sync ends `Ok`, the loop counts a success, not an
//! error, and the key is not requeued. A plain 403 (RBAC) is still an error.
//!
//! Own test binary: it installs the process-wide reconcile observer
//! (`controller::testing::record_reconcile_results`).

// Test code: an unwrap is an assertion.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use cache::{Indexer, Lister};
use controller::Controller;
use controller::metrics::ReconcileResult;
use controller::testing::{
    FakeApi, namespace_terminating, reconcile_results, record_reconcile_results,
};
use foo_controller::FooSyncer;
use k8s_openapi::api::apps::v1::Deployment;
use record::FakeRecorder;
use workqueue::RateLimitingQueue;

/// A Foo `default/test` in the cache, no Deployment: the sync creates one.
fn syncer(api: &FakeApi, events: &FakeRecorder) -> FooSyncer {
    let foos = Indexer::new();
    let mut foo = Foo::new("test", FooSpec::new("test-deploy", 1));
    foo.metadata.namespace = Some("default".into());
    foo.metadata.uid = Some("uid-test".into());
    foo.metadata.resource_version = Some("7".into());
    foos.add("default/test".to_string(), Arc::new(foo));
    FooSyncer::new(
        api.client(),
        Lister::new(foos),
        Lister::new(Indexer::<Deployment>::new()),
        events.recorder(),
    )
}

/// Syncs `default/test` once through the loop (client-go's `processNextWorkItem`);
/// returns the results the loop reported and the key's rate-limited requeues.
async fn sync_once(
    name: &str,
    api: &FakeApi,
    events: &FakeRecorder,
) -> (Vec<ReconcileResult>, u32) {
    record_reconcile_results();
    let queue = RateLimitingQueue::with_default_rate_limiter(name);
    let controller = Controller::new(name, queue.clone(), syncer(api, events));
    let key = "default/test".to_string();
    queue.add(key.clone());
    assert!(controller.process_next_work_item().await);
    (reconcile_results(name), queue.num_requeues(&key))
}

#[tokio::test]
async fn a_create_refused_in_a_terminating_namespace_ends_the_sync_quietly() {
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next_status(
        "create",
        "deployments",
        namespace_terminating("default", "deployments.apps", "test-deploy"),
    );

    let (results, requeues) = sync_once("foo-terminating", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Success], "not a sync error");
    assert_eq!(requeues, 0, "no rate-limited requeue");
    // One attempt; no status write for a Foo on its way out, no Warning Event.
    assert_eq!(api.action_names(), ["create deployments"]);
    assert!(events.events().is_empty(), "{:?}", events.events());
}

#[tokio::test]
async fn a_plain_forbidden_create_is_still_an_error() {
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next("create", "deployments", 403, "Forbidden");

    let (results, requeues) = sync_once("foo-forbidden", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Error]);
    assert_eq!(requeues, 1, "retried with backoff: RBAC may be fixed");
}

#[tokio::test]
async fn a_status_write_to_a_deleted_foo_ends_the_sync() {
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next("update", "foos/status", 404, "NotFound");

    let (results, requeues) = sync_once("foo-status-gone", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Success], "not a sync error");
    assert_eq!(requeues, 0, "no rate-limited requeue for a gone object");
    assert_eq!(
        api.action_names(),
        ["create deployments", "update foos/status"]
    );
    // No "Synced" for an object that no longer exists.
    assert!(events.events().is_empty(), "{:?}", events.events());
}

#[tokio::test]
async fn a_failed_status_write_of_a_live_foo_is_still_retried() {
    let (api, events) = (FakeApi::new(), FakeRecorder::new());
    api.fail_next("update", "foos/status", 500, "InternalError");

    let (results, requeues) = sync_once("foo-status-500", &api, &events).await;

    assert_eq!(results, [ReconcileResult::Error]);
    assert_eq!(requeues, 1);
}
