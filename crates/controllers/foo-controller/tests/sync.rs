//! Unit tests of the Foo syncHandler, one per branch, in the style of sample-controller's
//! controller_test.go: fill the listers directly, run one sync, then compare the
//! actions the (fake) API received and the events the (fake) recorder got.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use apis::samplecontroller::v1alpha1::{Foo, FooSpec, FooStatus};
use cache::{Indexer, Lister};
use controller::testing::FakeApi;
use foo_controller::{Error, FooSyncer, new_deployment};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use record::FakeRecorder;

/// One test's world: listers we fill by hand, the fake API, the fake recorder.
struct Fixture {
    foos: Indexer<Foo>,
    deployments: Indexer<Deployment>,
    api: FakeApi,
    events: FakeRecorder,
}

impl Fixture {
    fn new() -> Self {
        Self {
            foos: Indexer::new(),
            deployments: Indexer::new(),
            api: FakeApi::new(),
            events: FakeRecorder::new(),
        }
    }

    fn syncer(&self) -> FooSyncer {
        FooSyncer::new(
            self.api.client(),
            Lister::new(self.foos.clone()),
            Lister::new(self.deployments.clone()),
            self.events.recorder(),
        )
    }

    fn add_foo(&self, foo: Foo) {
        self.foos.add(key(&foo), Arc::new(foo));
    }

    fn add_deployment(&self, d: Deployment) {
        self.deployments.add(key(&d), Arc::new(d));
    }

    async fn sync(&self, key: &str) -> Result<(), Error> {
        self.syncer().sync_foo(key).await
    }
}

fn key<K: kube::Resource>(obj: &K) -> String {
    cache::meta_namespace_key(obj).unwrap()
}

fn foo(name: &str, deployment: &str, replicas: i32, available: Option<i32>) -> Foo {
    let mut foo = Foo::new(name, FooSpec::new(deployment, replicas));
    foo.metadata.namespace = Some("default".into());
    foo.metadata.uid = Some(format!("uid-{name}"));
    foo.metadata.resource_version = Some("7".into());
    foo.status = available.map(|available_replicas| FooStatus { available_replicas });
    foo
}

/// The Deployment the controller would have created for `foo`, now with `replicas`
/// and `available` available replicas.
fn owned_deployment(foo: &Foo, replicas: i32, available: i32) -> Deployment {
    let mut d = new_deployment(foo).unwrap();
    d.metadata.resource_version = Some("42".into());
    d.spec.replicas = Some(replicas);
    d.status = Some(DeploymentStatus {
        available_replicas: Some(available),
        ..DeploymentStatus::default()
    });
    d
}

const SYNCED: &str = "Normal Synced Foo synced successfully";

#[tokio::test]
async fn creates_the_deployment_and_writes_status() {
    let f = Fixture::new();
    let test = foo("test", "test-deploy", 2, None);
    f.add_foo(test.clone());

    f.sync("default/test").await.unwrap();

    assert_eq!(
        f.api.action_names(),
        ["create deployments", "update foos/status"]
    );
    let actions = f.api.actions();
    let created = actions[0].body.as_ref().unwrap();
    assert_eq!(created["metadata"]["name"], "test-deploy");
    assert_eq!(created["spec"]["replicas"], 2);
    assert_eq!(created["metadata"]["ownerReferences"][0]["uid"], "uid-test");
    assert_eq!(
        created["metadata"]["ownerReferences"][0]["controller"],
        true
    );
    assert_eq!(
        actions[0].query_param("fieldManager"),
        Some("sample-controller")
    );
    // The status write goes to the status subresource, with the resourceVersion read.
    let status = actions[1].body.as_ref().unwrap();
    assert_eq!(status["status"]["availableReplicas"], 0);
    assert_eq!(status["metadata"]["resourceVersion"], "7");
    assert_eq!(f.events.events(), [SYNCED]);
}

#[tokio::test]
async fn scales_the_deployment_it_owns_keeping_its_resource_version() {
    let f = Fixture::new();
    let test = foo("test", "test-deploy", 5, Some(1));
    f.add_deployment(owned_deployment(&test, 1, 1));
    // The API server answers with the whole scaled Deployment (still 1 available).
    let scaled = serde_json::to_value(owned_deployment(&test, 5, 1)).unwrap();
    f.api.respond_next("patch", "deployments", scaled);
    f.add_foo(test);

    f.sync("default/test").await.unwrap();

    assert_eq!(
        f.api.action_names(),
        ["patch deployments"],
        "status unchanged: no status write"
    );
    let update = &f.api.actions()[0];
    // A merge patch of replicas only: nothing else the cache holds is sent back.
    assert_eq!(
        update.body.as_ref().unwrap(),
        &serde_json::json!({
            // Optimistic concurrency: a stale cache yields a 409, never a blind overwrite.
            "metadata": { "resourceVersion": "42" },
            "spec": { "replicas": 5 },
        })
    );
    assert_eq!(update.name.as_deref(), Some("test-deploy"));
    assert_eq!(
        update.query_param("fieldManager"),
        Some("sample-controller")
    );
    assert_eq!(f.events.events(), [SYNCED]);
}

#[tokio::test]
async fn copies_available_replicas_into_status_when_they_change() {
    let f = Fixture::new();
    let test = foo("test", "test-deploy", 3, Some(1));
    f.add_deployment(owned_deployment(&test, 3, 3));
    f.add_foo(test);

    f.sync("default/test").await.unwrap();

    assert_eq!(f.api.action_names(), ["update foos/status"]);
    assert_eq!(
        f.api.actions()[0].body.as_ref().unwrap()["status"]["availableReplicas"],
        3
    );
}

#[tokio::test]
async fn a_converged_foo_costs_no_api_call() {
    let f = Fixture::new();
    let test = foo("test", "test-deploy", 3, Some(3));
    f.add_deployment(owned_deployment(&test, 3, 3));
    f.add_foo(test);

    f.sync("default/test").await.unwrap();

    assert!(f.api.actions().is_empty(), "{:?}", f.api.action_names());
    // Nor an Event: a resync of a converged Foo writes nothing at all.
    assert!(f.events.events().is_empty(), "{:?}", f.events.events());
}

#[tokio::test]
async fn a_foreign_deployment_is_reported_and_never_touched() {
    let f = Fixture::new();
    let test = foo("test", "taken", 3, None);
    let other_owner = foo("other", "taken", 1, None);
    // One without any owner, and one controlled by another Foo.
    for (name, d) in [
        ("unowned", {
            let mut d = owned_deployment(&test, 1, 1);
            d.metadata.owner_references = None;
            d
        }),
        ("owned by another Foo", owned_deployment(&other_owner, 1, 1)),
    ] {
        let f2 = Fixture::new();
        f2.add_deployment(d);
        f2.add_foo(test.clone());
        let err = f2.sync("default/test").await.unwrap_err();
        assert!(
            matches!(&err, Error::ResourceExists { name } if name == "taken"),
            "{name}: {err}"
        );
        assert!(
            f2.api.actions().is_empty(),
            "{name}: must not modify: {:?}",
            f2.api.action_names()
        );
        assert_eq!(
            f2.events.events(),
            [
                "Warning ErrResourceExists Resource \"taken\" already exists and is not managed by Foo"
            ],
            "{name}"
        );
    }
    drop(f);
}

#[tokio::test]
async fn an_empty_deployment_name_is_a_warning_not_a_retry() {
    let f = Fixture::new();
    f.add_foo(foo("test", "", 1, None));

    f.sync("default/test").await.expect("not retried");

    assert!(f.api.actions().is_empty());
    let events = f.events.events();
    assert_eq!(events.len(), 1);
    assert!(
        events[0].starts_with("Warning ErrDeploymentNameMissing "),
        "{events:?}"
    );
}

#[tokio::test]
async fn an_invalid_deployment_is_the_users_error_a_warning_not_a_retry() {
    let f = Fixture::new();
    f.add_foo(foo("test", "Bad_Name!", 1, None));
    f.api.fail_next("create", "deployments", 422, "Invalid");

    f.sync("default/test").await.expect("not retried");

    assert_eq!(f.api.action_names(), ["create deployments"]);
    let events = f.events.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        events[0].starts_with("Warning ErrInvalidDeployment spec.deploymentName \"Bad_Name!\""),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_server_error_on_create_is_retried_without_user_facing_noise() {
    let f = Fixture::new();
    f.add_foo(foo("test", "test-deploy", 1, None));
    f.api
        .fail_next("create", "deployments", 500, "InternalError");

    let err = f.sync("default/test").await.unwrap_err();

    assert!(err.to_string().contains("create Deployment"), "{err}");
    assert!(f.events.events().is_empty());
}

#[tokio::test]
async fn a_deleted_foo_is_done() {
    let f = Fixture::new();
    f.sync("default/gone")
        .await
        .expect("a Foo that is gone is not an error");
    assert!(f.api.actions().is_empty());
    assert!(f.events.events().is_empty());
}

#[tokio::test]
async fn a_bad_key_is_an_error() {
    let f = Fixture::new();
    assert!(matches!(f.sync("a/b/c").await, Err(Error::Key(_))));
}

#[tokio::test]
async fn a_conflict_is_returned_for_a_retry_through_the_queue() {
    let f = Fixture::new();
    let test = foo("test", "test-deploy", 5, Some(1));
    f.add_deployment(owned_deployment(&test, 1, 1));
    f.add_foo(test);
    f.api.fail_next("patch", "deployments", 409, "Conflict");

    let err = f.sync("default/test").await.unwrap_err();

    assert!(err.is_conflict(), "{err}");
    // One attempt, no loop inside the sync, no status write, no Synced event.
    assert_eq!(f.api.action_names(), ["patch deployments"]);
    assert!(f.events.events().is_empty());
}

#[tokio::test]
async fn a_failed_status_write_fails_the_sync() {
    let f = Fixture::new();
    f.add_foo(foo("test", "test-deploy", 2, None));
    f.api
        .fail_next("update", "foos/status", 500, "InternalError");

    let err = f.sync("default/test").await.unwrap_err();

    assert!(err.to_string().contains("update Foo status"), "{err}");
    assert_eq!(
        f.api.action_names(),
        ["create deployments", "update foos/status"]
    );
}

/// A Foo that was synced before (it has a status) and lost its Deployment: the garbage
/// collector deletes the Deployment when the Foo is deleted, and the Deployment's delete
/// event can arrive before the Foo's. The Foo is read from the API server first; gone
/// (404) or replaced by a new Foo of the same name (another uid): nothing is created
/// for the deleted owner (found by the chaos soak: such a Deployment blocked the
/// recreated Foo until the garbage collector, backed off after API server outages,
/// removed it minutes later).
#[tokio::test]
async fn a_foo_that_lost_its_deployment_gets_it_back_only_if_still_live() {
    let f = Fixture::new();
    f.add_foo(foo("test", "test-deploy", 1, Some(1)));

    // Gone from the API server: nothing created, no error, no event.
    f.sync("default/test").await.unwrap();
    assert_eq!(f.api.action_names(), ["get foos"]);
    assert!(f.events.events().is_empty());

    // Replaced by a new Foo of the same name: its own sync will create the Deployment.
    f.api.clear();
    let mut replaced = foo("test", "test-deploy", 1, None);
    replaced.metadata.uid = Some("uid-new".into());
    f.api
        .respond_next("get", "foos", serde_json::to_value(&replaced).unwrap());
    f.sync("default/test").await.unwrap();
    assert_eq!(f.api.action_names(), ["get foos"]);

    // Still the same Foo (someone deleted its Deployment): recreated.
    f.api.clear();
    let same = foo("test", "test-deploy", 1, Some(1));
    f.api
        .respond_next("get", "foos", serde_json::to_value(&same).unwrap());
    f.sync("default/test").await.unwrap();
    assert_eq!(
        f.api.action_names(),
        ["get foos", "create deployments", "update foos/status"]
    );

    // The read fails: an error, retried through the queue; nothing created.
    f.api.clear();
    f.api.fail_next("get", "foos", 503, "ServiceUnavailable");
    let err = f.sync("default/test").await.unwrap_err();
    assert!(err.to_string().contains("get Foo"), "{err}");
    assert_eq!(f.api.action_names(), ["get foos"]);
}
