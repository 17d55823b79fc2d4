//! Unit tests on a fake API server: fill the caches by hand, reconcile once, check
//! the requests sent and the Events recorded.

use std::sync::Arc;

use super::*;
use crate::api::{{api_module}}::{{kind}}Spec;
use cache::Indexer;
use controller::testing::FakeApi;
use k8s_openapi::api::apps::v1::DeploymentStatus;
use record::FakeRecorder;
use serde_json::Value;

/// A {{kind}} of `size` as the API server would have stored it: its spec read from
/// JSON, so the fields not named take their serde defaults (and a field added to the
/// spec does not break the tests).
fn stored_{{kind_snake}}(size: i32) -> {{kind}} {
    let spec: {{kind}}Spec = serde_json::from_value(serde_json::json!({ "size": size }))
        .expect("a spec with its defaults");
    let mut {{kind_snake}} = {{kind}}::new("sample", spec);
    {{kind_snake}}.metadata.namespace = Some("default".into());
    {{kind_snake}}.metadata.uid = Some("uid-sample".into());
    {{kind_snake}}.metadata.resource_version = Some("7".into());
    {{kind_snake}}.metadata.generation = Some(1);
    {{kind_snake}}
}

/// One test's world: caches filled by hand, the fake API, the fake recorder.
struct Fixture {
    {{plural}}: Indexer<{{kind}}>,
    deployments: Indexer<Deployment>,
    api: FakeApi,
    events: FakeRecorder,
}

impl Fixture {
    fn with({{kind_snake}}: {{kind}}) -> Self {
        let f = Self {
            {{plural}}: Indexer::new(),
            deployments: Indexer::new(),
            api: FakeApi::new(),
            events: FakeRecorder::new(),
        };
        f.{{plural}}.add("default/sample", Arc::new({{kind_snake}}));
        f
    }

    fn add_deployment(&self, deployment: Deployment) {
        self.deployments.add("default/sample", Arc::new(deployment));
    }

    async fn reconcile(&self) -> Result<Action, Error> {
        let reconciler = {{kind}}Reconciler {
            client: self.api.client(),
            {{plural}}: Lister::new(self.{{plural}}.clone()),
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
        self.body("update {{plural}}/status")["status"]["conditions"][0].clone()
    }
}

#[tokio::test]
async fn a_new_{{kind_snake}}_gets_its_deployment() {
    let f = Fixture::with(stored_{{kind_snake}}(3));

    f.reconcile().await.unwrap();

    // Created by server-side apply, as every later change is: then the controller's
    // applies own every field it set (a POSTed Deployment kept the POST's port entry
    // when `containerPort` changed).
    assert_eq!(
        f.api.action_names(),
        ["patch deployments", "update {{plural}}/status"]
    );
    let deployment = f.body("patch deployments");
    assert_eq!(deployment["metadata"]["name"], "sample");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "{{image}}");
    assert_eq!(container["ports"][0]["containerPort"], {{container_port}});
    let owner = &deployment["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "{{kind}}");
    assert_eq!(owner["apiVersion"], "{{api_group}}/{{version}}");
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
    let {{kind_snake}} = stored_{{kind_snake}}(2);
    let f = Fixture::with({{kind_snake}}.clone());
    let mut deployment = deployment_for_{{kind_snake}}(&{{kind_snake}}, DEFAULT_IMAGE).unwrap();
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
        ["patch deployments", "update {{plural}}/status"]
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
        ["Normal Ready Every {{kind_lower}} pod is available"]
    );
}

#[tokio::test]
async fn a_negative_size_is_reported_not_retried() {
    let f = Fixture::with(stored_{{kind_snake}}(-1));

    assert_eq!(f.reconcile().await.unwrap(), Action::Done);

    assert_eq!(f.api.action_names(), ["update {{plural}}/status"]);
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
    let f = Fixture::with(stored_{{kind_snake}}(1));
    let mut foreign = Deployment::default();
    foreign.metadata.name = Some("sample".into());
    foreign.metadata.namespace = Some("default".into());
    f.add_deployment(foreign);

    let err = f.reconcile().await.unwrap_err();

    assert!(matches!(err, Error::ResourceExists { .. }), "{err}");
    assert_eq!(f.api.action_names(), ["update {{plural}}/status"]);
    assert_eq!(f.written_ready()["reason"], "ErrResourceExists");
    assert_eq!(f.events.events().len(), 1);
    assert!(f.events.events()[0].starts_with("Warning ErrResourceExists"));
}
