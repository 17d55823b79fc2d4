//! The event handlers: which informer events become which work-queue keys.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use cache::{DeletedFinalStateUnknown, DeletedObject, EventHandler, Indexer, Lister};
use foo_controller::{DeploymentHandler, FooHandler, new_deployment};
use k8s_openapi::api::apps::v1::Deployment;
use workqueue::RateLimitingQueue;

fn foo(name: &str, uid: &str) -> Foo {
    let mut foo = Foo::new(name, FooSpec::new(format!("{name}-deploy"), 1));
    foo.metadata.namespace = Some("ns".into());
    foo.metadata.uid = Some(uid.into());
    foo
}

fn deployment_of(foo: &Foo, rv: &str) -> Arc<Deployment> {
    let mut d = new_deployment(foo).unwrap();
    d.metadata.resource_version = Some(rv.into());
    Arc::new(d)
}

fn drain(queue: &RateLimitingQueue<String>) -> Vec<String> {
    let mut keys = Vec::new();
    while let Some(item) = queue.try_get() {
        keys.push(item.item().clone()); // the guard marks it done when dropped
    }
    keys.sort();
    keys
}

#[tokio::test]
async fn foo_adds_and_updates_enqueue_the_foo() {
    let queue = RateLimitingQueue::with_default_rate_limiter("t");
    let handler = FooHandler::new(queue.clone());
    let a = Arc::new(foo("a", "u-a"));
    handler.on_add(&a, true);
    handler.on_update(&a, &Arc::new(foo("b", "u-b")));
    assert_eq!(drain(&queue), ["ns/a", "ns/b"]);
}

#[tokio::test]
async fn deployment_events_enqueue_the_owning_foo_only_if_it_exists() {
    let queue = RateLimitingQueue::with_default_rate_limiter("t");
    let foos = Indexer::new();
    let owner = foo("owner", "u-1");
    foos.add("ns/owner", Arc::new(owner.clone()));
    let handler = DeploymentHandler::new(queue.clone(), Lister::new(foos.clone()));

    // Add, real update, delete, tombstone delete: each enqueues the owner.
    handler.on_add(&deployment_of(&owner, "1"), false);
    assert_eq!(drain(&queue), ["ns/owner"]);
    handler.on_update(&deployment_of(&owner, "1"), &deployment_of(&owner, "2"));
    assert_eq!(drain(&queue), ["ns/owner"]);
    handler.on_delete(&DeletedObject::Object(deployment_of(&owner, "3")));
    assert_eq!(drain(&queue), ["ns/owner"]);
    handler.on_delete(&DeletedObject::Tombstone(DeletedFinalStateUnknown {
        key: "ns/owner-deploy".into(),
        obj: Some(deployment_of(&owner, "3")),
    }));
    assert_eq!(drain(&queue), ["ns/owner"]);

    // A resync (same resourceVersion) is not a change.
    handler.on_update(&deployment_of(&owner, "2"), &deployment_of(&owner, "2"));
    assert!(drain(&queue).is_empty());

    // Unowned Deployments, orphans, and Deployments of a recreated Foo (same name, new
    // UID) are ignored.
    let mut unowned = (*deployment_of(&owner, "1")).clone();
    unowned.metadata.owner_references = None;
    handler.on_add(&Arc::new(unowned), false);
    handler.on_add(&deployment_of(&foo("gone", "u-gone"), "1"), false);
    handler.on_add(&deployment_of(&foo("owner", "u-old"), "1"), false);
    assert!(drain(&queue).is_empty());
}

/// A Foo whose Deployment name another object held (its sync failed: "already exists
/// and is not managed by Foo") is queued the moment that object is deleted, not when
/// its backoff ends (issue 57: Sieve's unobserved-state plan on a derived workload).
#[tokio::test]
async fn a_deleted_deployment_frees_its_name_for_the_foo_waiting_for_it() {
    let queue = RateLimitingQueue::with_default_rate_limiter("t");
    let foos = Indexer::new();
    // The Foo recreated under its old name: a new UID, the same Deployment name.
    let recreated = foo("web", "u-new");
    foos.add("ns/web", Arc::new(recreated.clone()));
    // Another Foo that wants another name, and one in another namespace.
    foos.add("ns/other", Arc::new(foo("other", "u-other")));
    let mut elsewhere = foo("web", "u-elsewhere");
    elsewhere.metadata.namespace = Some("ns2".into());
    foos.add("ns2/web", Arc::new(elsewhere));
    let handler = DeploymentHandler::new(queue.clone(), Lister::new(foos.clone()));

    // The old Foo's Deployment going (also as a tombstone, after a relist): the new
    // Foo that wants its name is queued, nothing else.
    let old = deployment_of(&foo("web", "u-old"), "5");
    handler.on_delete(&DeletedObject::Object(old.clone()));
    assert_eq!(drain(&queue), ["ns/web"]);
    handler.on_delete(&DeletedObject::Tombstone(DeletedFinalStateUnknown {
        key: "ns/web-deploy".into(),
        obj: Some(old.clone()),
    }));
    assert_eq!(drain(&queue), ["ns/web"]);
    // A user's Deployment of that name, no owner at all: the same.
    let mut users = (*old).clone();
    users.metadata.owner_references = None;
    handler.on_delete(&DeletedObject::Object(Arc::new(users)));
    assert_eq!(drain(&queue), ["ns/web"]);
    // Adds and updates of the old one do not: the name is still taken.
    handler.on_add(&old, false);
    handler.on_update(&old, &deployment_of(&foo("web", "u-old"), "6"));
    assert!(drain(&queue).is_empty());
    // Its own Deployment deleted: the owner is queued once (by handle_object).
    handler.on_delete(&DeletedObject::Object(deployment_of(&recreated, "7")));
    assert_eq!(drain(&queue), ["ns/web"]);
}

/// The keys in the order workers would get them, with their priorities.
fn drain_in_order(queue: &RateLimitingQueue<String>) -> Vec<(String, i32)> {
    let mut keys = Vec::new();
    while let Some(item) = queue.try_get() {
        keys.push((item.item().clone(), item.priority()));
    }
    keys
}

#[tokio::test]
async fn initial_list_and_resync_events_wait_behind_real_changes() {
    use workqueue::priority::{DEFAULT, LOW};
    let queue = controller::LoopOptions::default().new_queue("t");
    let handler = FooHandler::new(queue.clone());
    // A restart: the initial list delivers every Foo that exists...
    for name in ["old-1", "old-2", "old-3"] {
        handler.on_add(&Arc::new(foo(name, name)), true);
    }
    // ... a resync re-delivers one unchanged ...
    let mut resynced = foo("old-4", "old-4");
    resynced.metadata.resource_version = Some("7".into());
    let resynced = Arc::new(resynced);
    handler.on_update(&resynced, &resynced);
    // ... and then a user creates a Foo and changes another.
    handler.on_add(&Arc::new(foo("new", "new")), false);
    let mut changed = (*resynced).clone();
    changed.metadata.name = Some("edited".into());
    changed.metadata.resource_version = Some("8".into());
    handler.on_update(&resynced, &Arc::new(changed));

    assert_eq!(
        drain_in_order(&queue),
        [
            ("ns/new".to_string(), DEFAULT),
            ("ns/edited".to_string(), DEFAULT),
            ("ns/old-1".to_string(), LOW),
            ("ns/old-2".to_string(), LOW),
            ("ns/old-3".to_string(), LOW),
            ("ns/old-4".to_string(), LOW),
        ]
    );

    // With client-go's FIFO (`--fifo-queue`) the same events keep arrival order.
    let fifo = controller::LoopOptions {
        priority_queue: false,
        ..Default::default()
    }
    .new_queue("t");
    let handler = FooHandler::new(fifo.clone());
    handler.on_add(&Arc::new(foo("old-1", "old-1")), true);
    handler.on_add(&Arc::new(foo("new", "new")), false);
    let order: Vec<String> = drain_in_order(&fifo).into_iter().map(|(k, _)| k).collect();
    assert_eq!(order, ["ns/old-1", "ns/new"]);
}
