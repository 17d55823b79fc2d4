//! Unit tests on a fake API server: fill the caches by hand, reconcile once, check
//! the requests sent and the Events recorded.

use std::sync::Arc;

use super::*;
use crate::api::memcached_v1alpha1::MemcachedSpec;
use cache::Indexer;
use controller::testing::FakeApi;
use k8s_openapi::api::apps::v1::DeploymentStatus;
use record::FakeRecorder;
use serde_json::Value;

/// A Memcached of `size` as the API server would have stored it: its spec read from
/// JSON, so the fields not named take their serde defaults (and a field added to the
/// spec does not break the tests).
fn stored_memcached(size: i32) -> Memcached {
    let spec: MemcachedSpec = serde_json::from_value(serde_json::json!({ "size": size }))
        .expect("a spec with its defaults");
    let mut memcached = Memcached::new("sample", spec);
    memcached.metadata.namespace = Some("default".into());
    memcached.metadata.uid = Some("uid-sample".into());
    memcached.metadata.resource_version = Some("7".into());
    memcached.metadata.generation = Some(1);
    memcached
}

/// One test's world: caches filled by hand, the fake API, the fake recorder.
struct Fixture {
    memcacheds: Indexer<Memcached>,
    deployments: Indexer<Deployment>,
    api: FakeApi,
    events: FakeRecorder,
}

impl Fixture {
    fn with(memcached: Memcached) -> Self {
        let f = Self {
            memcacheds: Indexer::new(),
            deployments: Indexer::new(),
            api: FakeApi::new(),
            events: FakeRecorder::new(),
        };
        f.memcacheds.add("default/sample", Arc::new(memcached));
        f
    }

    fn add_deployment(&self, deployment: Deployment) {
        self.deployments.add("default/sample", Arc::new(deployment));
    }

    async fn reconcile(&self) -> Result<Action, Error> {
        let reconciler = MemcachedReconciler {
            client: self.api.client(),
            memcacheds: Lister::new(self.memcacheds.clone()),
            deployments: Lister::new(self.deployments.clone()),
            recorder: self.events.recorder(),
            freshness: None,
            image: DEFAULT_IMAGE.to_string(),
        };
        reconciler
            .reconcile(&Request::new(Some("default"), "sample"))
            .await
    }

    /// The body of the first request described as `describe`.
    fn body(&self, describe: &str) -> Value {
        let action = self
            .api
            .actions()
            .into_iter()
            .find(|a| a.describe() == describe);
        action
            .and_then(|a| a.body)
            .unwrap_or_else(|| panic!("no {describe} in {:?}", self.api.action_names()))
    }

    /// The Ready condition the reconcile wrote.
    fn written_ready(&self) -> Value {
        self.body("update memcacheds/status")["status"]["conditions"][0].clone()
    }
}

#[tokio::test]
async fn a_new_memcached_gets_its_deployment() {
    let f = Fixture::with(stored_memcached(3));

    f.reconcile().await.unwrap();

    // Created by server-side apply, as every later change is: then the controller's
    // applies own every field it set (a POSTed Deployment kept the POST's port entry
    // when `containerPort` changed).
    assert_eq!(
        f.api.action_names(),
        ["patch deployments", "update memcacheds/status"]
    );
    let deployment = f.body("patch deployments");
    assert_eq!(deployment["metadata"]["name"], "sample");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "memcached:1.6-alpine");
    assert_eq!(container["ports"][0]["containerPort"], 11211);
    let owner = &deployment["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Memcached");
    assert_eq!(owner["apiVersion"], "cache.my.domain/v1alpha1");
    assert_eq!(owner["uid"], "uid-sample");
    assert_eq!(owner["controller"], true);
    // Created just now: no pods yet.
    let ready = f.written_ready();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], REASON_PROGRESSING);
    assert_eq!(ready["observedGeneration"], 1);
}

#[tokio::test]
async fn an_owned_deployment_is_applied_and_ready_when_available() {
    let memcached = stored_memcached(2);
    let f = Fixture::with(memcached.clone());
    let mut deployment = deployment_for_memcached(&memcached, DEFAULT_IMAGE).unwrap();
    deployment.metadata.uid = Some("uid-deployment".into());
    deployment.metadata.generation = Some(1);
    f.add_deployment(deployment.clone());
    // What the API server answers the apply with: the Deployment rolled out.
    deployment.status = Some(DeploymentStatus {
        observed_generation: Some(1),
        available_replicas: Some(2),
        ..DeploymentStatus::default()
    });
    f.api.respond_next(
        "patch",
        "deployments",
        serde_json::to_value(&deployment).unwrap(),
    );

    f.reconcile().await.unwrap();

    assert_eq!(
        f.api.action_names(),
        ["patch deployments", "update memcacheds/status"]
    );
    let apply = &f.api.actions()[0];
    assert_eq!(apply.query_param("fieldManager"), Some(CONTROLLER_NAME));
    assert_eq!(apply.query_param("force"), Some("true"));
    assert_eq!(
        apply.body.as_ref().unwrap()["metadata"]["uid"],
        "uid-deployment"
    );
    let ready = f.written_ready();
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["reason"], REASON_AVAILABLE);
    assert_eq!(
        f.events.events(),
        ["Normal Ready Every memcached pod is available"]
    );
}

#[tokio::test]
async fn a_negative_size_is_reported_not_retried() {
    let f = Fixture::with(stored_memcached(-1));

    assert_eq!(f.reconcile().await.unwrap(), Action::Done);

    assert_eq!(f.api.action_names(), ["update memcacheds/status"]);
    let ready = f.written_ready();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], REASON_INVALID_SPEC);
    assert_eq!(
        f.events.events(),
        ["Warning InvalidSpec spec.size must be 0 or more, not -1"]
    );
}

#[tokio::test]
async fn someone_elses_deployment_is_never_touched() {
    let f = Fixture::with(stored_memcached(1));
    let mut foreign = Deployment::default();
    foreign.metadata.name = Some("sample".into());
    foreign.metadata.namespace = Some("default".into());
    f.add_deployment(foreign);

    let err = f.reconcile().await.unwrap_err();

    assert!(matches!(err, Error::ResourceExists { .. }), "{err}");
    assert_eq!(f.api.action_names(), ["update memcacheds/status"]);
    assert_eq!(f.written_ready()["reason"], "ErrResourceExists");
    assert_eq!(f.events.events().len(), 1);
    assert!(f.events.events()[0].starts_with("Warning ErrResourceExists"));
}
