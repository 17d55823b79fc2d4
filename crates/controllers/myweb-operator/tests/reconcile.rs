//! Unit tests of the MyWeb reconcile, one per branch, in the style of sample-controller's
//! controller_test.go: fill the listers directly, run one reconcile, then compare the
//! requests the fake API received and the Events the fake recorder got.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use apis::operator::v1::{CONDITION_READY, MyWeb, MyWebSpec};
use builder::Action;
use cache::{Indexer, Lister};
use controller::testing::{ApiAction, FakeApi};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::core::{PartialObjectMeta, PartialObjectMetaExt};
use myweb_operator::status::{Readiness, next_status};
use myweb_operator::{Error, Listers, MyWebReconciler, objects};
use record::FakeRecorder;
use serde_json::Value;

/// One test's world: caches we fill by hand, the fake API, the fake recorder.
struct Fixture {
    webs: Indexer<MyWeb>,
    /// Metadata only, as the operator's metadata informer caches ConfigMaps.
    config_maps: Indexer<PartialObjectMeta<ConfigMap>>,
    deployments: Indexer<Deployment>,
    services: Indexer<Service>,
    api: FakeApi,
    events: FakeRecorder,
}

impl Fixture {
    fn new() -> Self {
        Self {
            webs: Indexer::new(),
            config_maps: Indexer::new(),
            deployments: Indexer::new(),
            services: Indexer::new(),
            api: FakeApi::new(),
            events: FakeRecorder::new(),
        }
    }

    async fn reconcile(&self, name: &str) -> Result<Action, Error> {
        let listers = Listers {
            webs: Lister::new(self.webs.clone()),
            config_maps: Lister::new(self.config_maps.clone()),
            deployments: Lister::new(self.deployments.clone()),
            services: Lister::new(self.services.clone()),
        };
        MyWebReconciler::new(self.api.client(), listers, self.events.recorder())
            .reconcile_web("default", name)
            .await
    }

    fn add<K: kube::Resource + Send + Sync + 'static>(indexer: &Indexer<K>, obj: K) {
        indexer.add(cache::meta_namespace_key(&obj).unwrap(), Arc::new(obj));
    }

    /// Caches `cm` as the metadata informer would: its metadata, nothing else.
    fn add_config_map(&self, cm: ConfigMap) {
        Self::add(&self.config_maps, cm.metadata.into_response_partial());
    }

    /// Puts the three objects the operator would have made for `web` in the caches,
    /// as the API server would have stored them (with UIDs), the Deployment rolled out.
    fn add_owned_objects(&self, web: &MyWeb) {
        let stored = |meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                      kind: &str| {
            meta.uid = Some(format!("uid-{kind}"));
            meta.resource_version = Some("10".into());
            meta.generation = Some(1);
        };
        let mut cm = objects::config_map(web).unwrap();
        stored(&mut cm.metadata, "cm");
        let mut d = objects::deployment(web).unwrap();
        stored(&mut d.metadata, "deploy");
        d.status = Some(rolled_out());
        let mut svc = objects::service(web).unwrap();
        stored(&mut svc.metadata, "svc");
        self.add_config_map(cm);
        Self::add(&self.deployments, d);
        Self::add(&self.services, svc);
    }

    fn action(&self, describe: &str) -> ApiAction {
        let actions = self.api.actions();
        actions
            .iter()
            .find(|a| a.describe() == describe)
            .unwrap_or_else(|| panic!("no {describe} in {:?}", self.api.action_names()))
            .clone()
    }

    /// The `Ready` condition of the status the reconcile wrote.
    fn written_ready(&self) -> Value {
        let status = self.action("update mywebs/status").body.unwrap();
        let conditions = status["status"]["conditions"].as_array().unwrap().clone();
        conditions
            .into_iter()
            .find(|c| c["type"] == CONDITION_READY)
            .expect("a Ready condition")
    }
}

fn web(name: &str) -> MyWeb {
    let mut web = MyWeb::new(name, MyWebSpec::new("nginx:1.27", 30080, "<h1>hello</h1>"));
    web.metadata.namespace = Some("default".into());
    web.metadata.uid = Some(format!("uid-{name}"));
    web.metadata.resource_version = Some("7".into());
    web.metadata.generation = Some(3);
    web
}

fn rolled_out() -> DeploymentStatus {
    DeploymentStatus {
        observed_generation: Some(1),
        replicas: Some(1),
        updated_replicas: Some(1),
        available_replicas: Some(1),
        ..DeploymentStatus::default()
    }
}

#[tokio::test]
async fn a_web_that_is_gone_or_being_deleted_needs_nothing() {
    let f = Fixture::new();
    f.reconcile("missing").await.unwrap();
    let mut deleting = web("deleting");
    deleting.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    );
    Fixture::add(&f.webs, deleting);
    f.reconcile("deleting").await.unwrap();
    assert!(f.api.actions().is_empty(), "{:?}", f.api.action_names());
    assert!(f.events.events().is_empty());
}

#[tokio::test]
async fn a_new_web_gets_its_three_objects_created_then_a_progressing_status() {
    let f = Fixture::new();
    Fixture::add(&f.webs, web("site"));

    f.reconcile("site").await.unwrap();

    assert_eq!(
        f.api.action_names(),
        [
            "create configmaps",
            "create deployments",
            "create services",
            "update mywebs/status"
        ]
    );
    for action in &f.api.actions()[..3] {
        assert_eq!(action.query_param("fieldManager"), Some("myweb-operator"));
        let body = action.body.as_ref().unwrap();
        assert_eq!(body["metadata"]["name"], "site");
        assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "uid-site");
        assert_eq!(body["metadata"]["ownerReferences"][0]["controller"], true);
    }
    let cm = f.action("create configmaps").body.unwrap();
    assert_eq!(cm["data"]["index.html"], "<h1>hello</h1>");
    let svc = f.action("create services").body.unwrap();
    assert_eq!(svc["spec"]["ports"][0]["nodePort"], 30080);

    // The created Deployment has no status yet: not ready.
    let ready = f.written_ready();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "Progressing");
    assert_eq!(ready["observedGeneration"], 3);
    let status = f.action("update mywebs/status").body.unwrap();
    assert_eq!(status["status"]["completed"], false);
    assert_eq!(
        status["metadata"]["resourceVersion"], "7",
        "optimistic concurrency"
    );
    assert!(f.events.events().is_empty(), "{:?}", f.events.events());
}

#[tokio::test]
async fn owned_objects_are_applied_with_force_and_the_uid_the_cache_saw() {
    let f = Fixture::new();
    let site = web("site");
    Fixture::add(&f.webs, site.clone());
    f.add_owned_objects(&site);

    f.reconcile("site").await.unwrap();

    assert_eq!(
        f.api.action_names(),
        [
            "patch configmaps",
            "patch deployments",
            "patch services",
            "update mywebs/status"
        ]
    );
    for (action, uid) in f.api.actions()[..3]
        .iter()
        .zip(["uid-cm", "uid-deploy", "uid-svc"])
    {
        assert_eq!(action.query_param("fieldManager"), Some("myweb-operator"));
        assert_eq!(action.query_param("force"), Some("true"));
        let body = action.body.as_ref().unwrap();
        assert_eq!(
            body["metadata"]["uid"], uid,
            "guards against a replaced object"
        );
        assert!(body.get("status").is_none(), "only the fields we own");
    }
    // The ConfigMap is the fence against a stale cache: its apply carries the
    // resourceVersion the cache saw and the MyWeb's generation; the others no
    // resourceVersion (no read-modify-write).
    let bodies: Vec<Value> = f.api.actions()[..3]
        .iter()
        .map(|a| a.body.clone().unwrap())
        .collect();
    assert_eq!(bodies[0]["metadata"]["resourceVersion"], "10");
    assert_eq!(
        bodies[0]["metadata"]["annotations"][objects::WEB_GENERATION_ANNOTATION],
        "3"
    );
    for body in &bodies[1..] {
        assert!(body["metadata"].get("resourceVersion").is_none(), "{body}");
    }
    // The Deployment echoed back is the one we applied, without a status: the status
    // comes from the API server's answer, not from the cache.
    assert_eq!(f.written_ready()["reason"], "Progressing");
}

#[tokio::test]
async fn a_rolled_out_deployment_makes_the_web_ready_once() {
    let f = Fixture::new();
    let site = web("site");
    Fixture::add(&f.webs, site.clone());
    f.add_owned_objects(&site);
    // The fake API echoes requests; script the Deployment the server would return.
    let mut served = objects::deployment(&site).unwrap();
    served.metadata.generation = Some(1);
    served.status = Some(rolled_out());
    f.api.respond_next(
        "patch",
        "deployments",
        serde_json::to_value(&served).unwrap(),
    );

    f.reconcile("site").await.unwrap();

    let ready = f.written_ready();
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["reason"], "Available");
    assert_eq!(
        f.action("update mywebs/status").body.unwrap()["status"]["completed"],
        true
    );
    assert_eq!(
        f.events.events(),
        ["Normal Ready the page is served on node port 30080"]
    );

    // Already Ready in the cache: no status write, no second Event.
    let f2 = Fixture::new();
    let mut ready_web = site.clone();
    ready_web.status = next_status(
        &site,
        &Readiness {
            ready: true,
            reason: "Available".into(),
            message: "the page is served on node port 30080".into(),
        },
        k8s_openapi::jiff::Timestamp::now(),
    );
    Fixture::add(&f2.webs, ready_web.clone());
    f2.add_owned_objects(&ready_web);
    f2.api.respond_next(
        "patch",
        "deployments",
        serde_json::to_value(&served).unwrap(),
    );
    f2.reconcile("site").await.unwrap();
    assert_eq!(
        f2.api.action_names(),
        ["patch configmaps", "patch deployments", "patch services"]
    );
    assert!(f2.events.events().is_empty());
}

#[tokio::test]
async fn an_object_of_the_same_name_not_controlled_by_the_web_is_never_touched() {
    let f = Fixture::new();
    Fixture::add(&f.webs, web("site"));
    let mut foreign = ConfigMap::default();
    foreign.metadata.namespace = Some("default".into());
    foreign.metadata.name = Some("site".into());
    foreign.metadata.uid = Some("uid-foreign".into());
    f.add_config_map(foreign);

    let err = f.reconcile("site").await.unwrap_err();

    assert!(
        matches!(
            err,
            Error::ResourceExists {
                kind: "ConfigMap",
                ..
            }
        ),
        "{err}"
    );
    // No write to any object: the ConfigMap comes first, and nothing after it runs.
    assert_eq!(f.api.action_names(), ["update mywebs/status"]);
    let ready = f.written_ready();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "ErrResourceExists");
    assert_eq!(
        ready["message"],
        "ConfigMap \"site\" already exists and is not managed by MyWeb"
    );
    assert_eq!(
        f.events.events(),
        ["Warning ErrResourceExists ConfigMap \"site\" already exists and is not managed by MyWeb"]
    );
}

#[tokio::test]
async fn a_refused_service_is_a_warning_a_false_condition_and_an_error() {
    let f = Fixture::new();
    Fixture::add(&f.webs, web("site"));
    f.api.fail_next("create", "services", 422, "Invalid");

    let err = f.reconcile("site").await.unwrap_err();

    assert!(
        matches!(&err, Error::Api(e) if e.status_code() == Some(422)),
        "{err}"
    );
    assert_eq!(
        f.api.action_names(),
        [
            "create configmaps",
            "create deployments",
            "create services",
            "update mywebs/status"
        ]
    );
    let ready = f.written_ready();
    assert_eq!(ready["reason"], "ApplyFailed");
    let message = ready["message"].as_str().unwrap();
    assert!(message.contains("create Service default/site"), "{message}");
    assert!(
        message.contains("scripted failure for create services"),
        "the server's message: {message}"
    );
    assert_eq!(
        message, "create Service default/site: scripted failure for create services",
        "the server's message, without kube's debug dump of the Status"
    );
    let events = f.events.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        events[0].starts_with("Warning ApplyFailed create Service"),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_failed_status_write_is_an_error_to_retry() {
    let f = Fixture::new();
    Fixture::add(&f.webs, web("site"));
    f.api.fail_next("update", "mywebs/status", 409, "Conflict");
    let err = f.reconcile("site").await.unwrap_err();
    assert!(matches!(&err, Error::Api(e) if e.is_conflict()), "{err}");
}

/// Sieve's stale-state finding (docs/reliability.md): restarted onto an API server that
/// lags, the operator's cache held the MyWeb one generation back while the ConfigMap
/// already said it was applied from the newer one. Applying would put the old page back
/// and roll the Deployment backwards. Nothing is written; the MyWeb is looked at again.
#[tokio::test]
async fn a_cached_web_older_than_the_one_last_applied_writes_nothing() {
    let f = Fixture::new();
    let site = web("site"); // generation 3
    let mut newer = site.clone();
    newer.metadata.generation = Some(4);
    newer.spec.page_content_html = "<h1>newer</h1>".into();
    Fixture::add(&f.webs, site);
    f.add_owned_objects(&newer);

    let action = f.reconcile("site").await.unwrap();

    assert_eq!(
        action,
        Action::requeue_after(myweb_operator::reconcile::STALE_CACHE_RETRY)
    );
    assert!(f.api.actions().is_empty(), "{:?}", f.api.action_names());
    assert!(f.events.events().is_empty(), "{:?}", f.events.events());
}

/// The same finding when the cached ConfigMap is behind too (so its annotation is): the
/// API server refuses the ConfigMap's apply (409, the resourceVersion it carries is not
/// the server's), and the Deployment and the Service are not touched. Not an error: no
/// Warning Event, no Ready=False, a requeue.
#[tokio::test]
async fn a_config_map_behind_the_server_stops_the_apply_before_the_deployment() {
    let f = Fixture::new();
    let site = web("site");
    Fixture::add(&f.webs, site.clone());
    f.add_owned_objects(&site);
    f.api.fail_next("patch", "configmaps", 409, "Conflict");

    let action = f.reconcile("site").await.unwrap();

    assert_eq!(
        action,
        Action::requeue_after(myweb_operator::reconcile::STALE_CACHE_RETRY)
    );
    assert_eq!(f.api.action_names(), ["patch configmaps"]);
    assert!(f.events.events().is_empty(), "{:?}", f.events.events());
}

/// A 409 on a create is someone else's object of that name appearing since the cache
/// looked (AlreadyExists), not the fence: an error to retry, as before.
#[tokio::test]
async fn a_create_refused_with_409_is_still_an_error() {
    let f = Fixture::new();
    Fixture::add(&f.webs, web("site"));
    f.api
        .fail_next("create", "configmaps", 409, "AlreadyExists");

    let err = f.reconcile("site").await.unwrap_err();

    assert!(
        matches!(&err, Error::Api(e) if e.status_code() == Some(409)),
        "{err}"
    );
}

/// A MyWeb that was reconciled before (it has a status), as the cache holds it after it
/// lost its three objects.
fn reconciled_web(name: &str) -> MyWeb {
    let mut site = web(name);
    let readiness = Readiness::not_ready("Progressing", "rolling out");
    site.status = next_status(&site, &readiness, k8s_openapi::jiff::Timestamp::now());
    assert!(site.status.is_some());
    site
}

/// Sieve's deleted-owner finding (docs/reliability.md): the MyWeb was deleted, the
/// garbage collector deleted its objects, and their events queued the MyWeb before its
/// own DELETED reached the cache. Recreating would make objects for an owner that is
/// gone. One GET of the MyWeb (404 here: FakeApi's answer to a get nobody scripted),
/// and nothing is created; no Event, no status, no error.
#[tokio::test]
async fn a_web_gone_from_the_server_gets_nothing_recreated() {
    let f = Fixture::new();
    Fixture::add(&f.webs, reconciled_web("site"));

    let action = f.reconcile("site").await.unwrap();

    assert_eq!(action, Action::Done);
    assert_eq!(f.api.action_names(), ["get mywebs"]);
    assert!(f.events.events().is_empty(), "{:?}", f.events.events());
}

/// The same when a MyWeb of that name exists but is another one (deleted and created
/// again): its own events queue it; the old one's objects are not made.
#[tokio::test]
async fn a_web_replaced_on_the_server_gets_nothing_recreated() {
    let f = Fixture::new();
    Fixture::add(&f.webs, reconciled_web("site"));
    let mut replaced = web("site");
    replaced.metadata.uid = Some("uid-another".into());
    f.api
        .respond_next("get", "mywebs", serde_json::to_value(&replaced).unwrap());

    assert_eq!(f.reconcile("site").await.unwrap(), Action::Done);
    assert_eq!(f.api.action_names(), ["get mywebs"]);
}

/// A MyWeb that still exists gets what it lost recreated, with one GET however many
/// objects are missing; one that has an object left is applied without a GET.
#[tokio::test]
async fn a_live_web_gets_its_lost_objects_back_after_one_get() {
    let f = Fixture::new();
    let site = reconciled_web("site");
    Fixture::add(&f.webs, site.clone());
    f.api
        .respond_next("get", "mywebs", serde_json::to_value(&site).unwrap());

    f.reconcile("site").await.unwrap();

    assert_eq!(
        &f.api.action_names()[..4],
        [
            "get mywebs",
            "create configmaps",
            "create deployments",
            "create services",
        ]
    );

    // Only the ConfigMap cached: it is applied, the other two created after one GET.
    let f = Fixture::new();
    Fixture::add(&f.webs, site.clone());
    f.add_config_map(objects::config_map(&site).unwrap());
    f.api
        .respond_next("get", "mywebs", serde_json::to_value(&site).unwrap());
    f.reconcile("site").await.unwrap();
    assert_eq!(
        &f.api.action_names()[..4],
        [
            "patch configmaps",
            "get mywebs",
            "create deployments",
            "create services"
        ]
    );
}

/// A failed GET is an error to retry (with backoff), never a create on a guess.
#[tokio::test]
async fn a_failed_owner_get_is_an_error_and_creates_nothing() {
    let f = Fixture::new();
    Fixture::add(&f.webs, reconciled_web("site"));
    f.api.fail_next("get", "mywebs", 503, "ServiceUnavailable");

    let err = f.reconcile("site").await.unwrap_err();

    assert!(
        matches!(&err, Error::Api(e) if e.status_code() == Some(503)),
        "{err}"
    );
    assert!(
        !f.api.action_names().iter().any(|a| a.starts_with("create")),
        "{:?}",
        f.api.action_names()
    );
}
