//! A recording, in-process stand-in for the API server, for unit-testing sync handlers.
//!
//! client-go's controllers are unit-tested with a fake clientset: the test fills the
//! listers directly, runs one `syncHandler(key)`, and then checks the list of
//! *actions* the fake client recorded (sample-controller's `controller_test.go`:
//! "expect create deployment, expect update foo status"). [`FakeApi`] is that fake for
//! a real [`kube::Client`]: it plugs in below kube's HTTP layer, so the code under test
//! builds its requests exactly as it would in production, and the test sees each one as
//! an [`ApiAction`].
//!
//! Default answers keep a sync going: create, update and patch echo the request body
//! back (in JSON; a protobuf body, as the typed clients of `gentype` send for built-in
//! types, is recorded and echoed as the JSON of the same object) (so the typed call decodes its own object), get answers 404 NotFound, delete
//! answers Success. [`FakeApi::fail_next`] scripts an API error (a 409 Conflict, a 500)
//! for the next matching call, [`FakeApi::respond_next`] the object it answers with. It is not an API server: nothing is stored, nothing is
//! validated. Anything that needs the server's behaviour belongs in an e2e test on the
//! real control plane (crates/dev/testenv).
//!
//! **Requires the `testing` feature.** A test double is not part of the production API:
//! this module (and the HTTP crates it plugs in with) is compiled for the crate's own
//! unit tests and, elsewhere, only with the `testing` cargo feature, which the tests
//! that use it enable under `[dev-dependencies]`:
//! `controller = { workspace = true, features = ["testing"] }`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use controller::testing::FakeApi;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! let api = FakeApi::new();
//! let configmaps: Api<ConfigMap> = Api::namespaced(api.client(), "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! configmaps.create(&PostParams::default(), &cm).await.unwrap();
//!
//! api.fail_next("update", "configmaps", 409, "Conflict");
//! let err = configmaps.replace("settings", &PostParams::default(), &cm).await.unwrap_err();
//! assert!(err.to_string().contains("Conflict"));
//! assert_eq!(api.action_names(), ["create configmaps", "update configmaps"]);
//! # }
//! ```

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde_json::{Value, json};

mod reconcile_results;
pub use reconcile_results::{reconcile_results, record_reconcile_results};

/// One request the code under test sent, decoded into client-go's action terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiAction {
    /// client-go's verb: get, list, watch, create, update, patch, delete,
    /// deletecollection.
    pub verb: String,
    /// API group ("" for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace, for namespaced requests.
    pub namespace: Option<String>,
    /// Resource (plural), e.g. "deployments".
    pub resource: String,
    /// Object name, when the request names one.
    pub name: Option<String>,
    /// Subresource, e.g. "status".
    pub subresource: Option<String>,
    /// The raw query string, e.g. "fieldManager=sample-controller".
    pub query: String,
    /// The JSON body, if any.
    pub body: Option<Value>,
}

impl ApiAction {
    /// Decodes a request's method, path and raw query (`/api/v1/...`,
    /// `/apis/<group>/<version>/...`) into an action without a body; `None` for other
    /// paths (discovery, `/healthz`) and methods. The test tools' proxy reads what a
    /// controller's request addresses with it (`crates/dev/apiproxy`).
    pub fn parse(method: &Method, path: &str, query: &str) -> Option<Self> {
        parse_action(method, path, query.to_string(), None)
    }

    /// "resource" or "resource/subresource", e.g. "foos/status".
    pub fn resource_path(&self) -> String {
        match &self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.clone(),
        }
    }

    /// "verb resource[/subresource]", e.g. "update foos/status": the form tests compare.
    pub fn describe(&self) -> String {
        format!("{} {}", self.verb, self.resource_path())
    }

    /// The value of query parameter `name` (not URL-decoded; ours are plain words).
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
}

impl fmt::Display for ApiAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())?;
        if let Some(ns) = &self.namespace {
            write!(f, " in {ns}")?;
        }
        if let Some(name) = &self.name {
            write!(f, " named {name}")?;
        }
        Ok(())
    }
}

/// A scripted answer to the next matching request: a failure, or an object.
struct ScriptedAnswer {
    verb: String,
    resource: String,
    answer: Answer,
}

enum Answer {
    Failure { code: u16, reason: String },
    Status(Value),
    Object(Value),
}

#[derive(Default)]
struct State {
    actions: Vec<ApiAction>,
    scripted: Vec<ScriptedAnswer>,
}

/// The recording fake API. Cheap to clone; clones share the record.
#[derive(Clone, Default)]
pub struct FakeApi {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for FakeApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeApi")
            .field("actions", &self.state.lock().actions.len())
            .finish()
    }
}

impl FakeApi {
    /// An empty fake with no recorded actions.
    pub fn new() -> Self {
        Self::default()
    }

    /// A [`kube::Client`] whose every request lands here. Its default namespace is
    /// "default".
    pub fn client(&self) -> kube::Client {
        let state = Arc::clone(&self.state);
        let service = tower::service_fn(move |req: Request<kube::client::Body>| {
            let state = Arc::clone(&state);
            async move { Ok::<_, Infallible>(handle(&state, req).await) }
        });
        kube::Client::new(service, "default")
    }

    /// Every request so far, in order.
    pub fn actions(&self) -> Vec<ApiAction> {
        self.state.lock().actions.clone()
    }

    /// [`ApiAction::describe`] of every request so far, in order.
    pub fn action_names(&self) -> Vec<String> {
        self.state
            .lock()
            .actions
            .iter()
            .map(ApiAction::describe)
            .collect()
    }

    /// Forgets the recorded actions (scripted answers stay).
    pub fn clear(&self) {
        self.state.lock().actions.clear();
    }

    /// Makes the next `verb` request on `resource` (e.g. "update", "deployments"; use
    /// "foos/status" for a subresource: "foos" alone does not match it) fail with HTTP `code` and Status `reason`
    /// ("Conflict", "InternalError", ...). Failures queue up in the order scripted.
    pub fn fail_next(&self, verb: &str, resource: &str, code: u16, reason: &str) {
        self.state.lock().scripted.push(ScriptedAnswer {
            verb: verb.to_string(),
            resource: resource.to_string(),
            answer: Answer::Failure {
                code,
                reason: reason.to_string(),
            },
        });
    }

    /// Makes the next `verb` request on `resource` fail with the Status `status` (its
    /// `code` is the HTTP status): for answers whose `details` matter, such as
    /// [`namespace_terminating`]. Queued with [`fail_next`](Self::fail_next)'s scripts.
    pub fn fail_next_status(&self, verb: &str, resource: &str, status: Value) {
        self.state.lock().scripted.push(ScriptedAnswer {
            verb: verb.to_string(),
            resource: resource.to_string(),
            answer: Answer::Status(status),
        });
    }

    /// Makes the next `verb` request on `resource` succeed with `object` instead of the
    /// echo of its body: what the API server would have answered (an apply returning
    /// the stored object with its status, say). Queued with [`fail_next`](Self::fail_next)'s
    /// scripts, in the order scripted.
    pub fn respond_next(&self, verb: &str, resource: &str, object: Value) {
        self.state.lock().scripted.push(ScriptedAnswer {
            verb: verb.to_string(),
            resource: resource.to_string(),
            answer: Answer::Object(object),
        });
    }
}

async fn handle(
    state: &Mutex<State>,
    req: Request<kube::client::Body>,
) -> Response<kube::client::Body> {
    let (parts, body) = req.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => return status_response(400, "BadRequest", &format!("unreadable body: {err}")),
    };
    let protobuf = matches!(
        protowire::media_type(
            parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
        ),
        protowire::MediaType::Protobuf
    );
    let body: Option<Value> = if bytes.is_empty() {
        None
    } else if protobuf {
        // A typed client's create or update of a built-in type: recorded (and echoed)
        // as the JSON the same object would have been sent as.
        match protowire::registry::to_json(&bytes) {
            Some(Ok(v)) => Some(v),
            Some(Err(err)) => {
                return status_response(400, "BadRequest", &format!("body is not protobuf: {err}"));
            }
            None => {
                return status_response(
                    415,
                    "UnsupportedMediaType",
                    "a protobuf body of a kind FakeApi cannot read",
                );
            }
        }
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(v) => Some(v),
            Err(err) => {
                return status_response(400, "BadRequest", &format!("body is not JSON: {err}"));
            }
        }
    };
    let query = parts.uri.query().unwrap_or("").to_string();
    let Some(action) = parse_action(&parts.method, parts.uri.path(), query, body) else {
        return status_response(
            404,
            "NotFound",
            &format!("no such path {}", parts.uri.path()),
        );
    };

    let mut st = state.lock();
    let resource = action.resource_path();
    let scripted = st
        .scripted
        .iter()
        .position(|f| f.verb == action.verb && f.resource == resource);
    let response = match scripted.map(|i| st.scripted.remove(i).answer) {
        Some(Answer::Failure { code, reason }) => status_response(
            code,
            &reason,
            &format!("scripted failure for {}", action.describe()),
        ),
        Some(Answer::Status(status)) => {
            let code = status["code"].as_u64().and_then(|c| u16::try_from(c).ok());
            json_response(code.unwrap_or(500), &status)
        }
        Some(Answer::Object(object)) => {
            json_response(if action.verb == "create" { 201 } else { 200 }, &object)
        }
        None => default_response(&action),
    };
    st.actions.push(action);
    response
}

fn default_response(action: &ApiAction) -> Response<kube::client::Body> {
    match action.verb.as_str() {
        "create" | "update" | "patch" => {
            let code = if action.verb == "create" { 201 } else { 200 };
            let body = action.body.clone().unwrap_or(Value::Null);
            json_response(code, &body)
        }
        "delete" | "deletecollection" => json_response(
            200,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
        ),
        _ => status_response(404, "NotFound", &format!("{} not found", action)),
    }
}

/// The Status the API server's NamespaceLifecycle admission answers a create of
/// `resource` `name` in the terminating namespace `namespace` with: 403 Forbidden and
/// a `NamespaceTerminating` cause (apiserver
/// `pkg/admission/plugin/namespace/lifecycle/admission.go`). For
/// [`FakeApi::fail_next_status`].
pub fn namespace_terminating(namespace: &str, resource: &str, name: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure",
        "message": format!(
            "{resource} \"{name}\" is forbidden: unable to create new content in namespace \
             {namespace} because it is being terminated"
        ),
        "reason": "Forbidden",
        "details": {
            "name": name, "kind": resource,
            "causes": [{
                "reason": crate::expected::NAMESPACE_TERMINATING_CAUSE,
                "message": format!("namespace {namespace} is being terminated"),
                "field": "metadata.namespace",
            }],
        },
        "code": 403,
    })
}

fn status_response(code: u16, reason: &str, message: &str) -> Response<kube::client::Body> {
    json_response(
        code,
        &json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code,
        }),
    )
}

fn json_response(code: u16, body: &Value) -> Response<kube::client::Body> {
    let mut response = Response::new(kube::client::Body::from(body.to_string().into_bytes()));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// Decodes `/api/v1/...` and `/apis/<group>/<version>/...` paths into an action.
fn parse_action(
    method: &Method,
    path: &str,
    query: String,
    body: Option<Value>,
) -> Option<ApiAction> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (resource, name, subresource) = match rest {
        [resource] => (*resource, None, None),
        [resource, name] => (*resource, Some(name.to_string()), None),
        [resource, name, sub] => (*resource, Some(name.to_string()), Some(sub.to_string())),
        _ => return None,
    };
    let watching = query
        .split('&')
        .any(|kv| kv == "watch=true" || kv == "watch=1");
    let verb = match (method.as_str(), name.is_some()) {
        ("GET", _) if watching => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return None,
    };
    Some(ApiAction {
        verb: verb.to_string(),
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource: resource.to_string(),
        name,
        subresource,
        query,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_decode_into_actions() {
        let a = parse_action(
            &Method::PUT,
            "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/f/status",
            "fieldManager=x".into(),
            None,
        )
        .unwrap();
        assert_eq!(a.describe(), "update foos/status");
        assert_eq!(
            (a.group.as_str(), a.namespace.as_deref(), a.name.as_deref()),
            ("samplecontroller.k8s.io", Some("ns"), Some("f"))
        );
        assert_eq!(a.query_param("fieldManager"), Some("x"));

        let a = parse_action(
            &Method::GET,
            "/api/v1/namespaces/ns/pods",
            "watch=true&resourceVersion=1".into(),
            None,
        )
        .unwrap();
        assert_eq!(a.describe(), "watch pods");
        let a = parse_action(&Method::GET, "/api/v1/namespaces/ns", String::new(), None).unwrap();
        assert_eq!(
            (a.verb.as_str(), a.resource.as_str(), a.name.as_deref()),
            ("get", "namespaces", Some("ns"))
        );
        let a = parse_action(
            &Method::DELETE,
            "/apis/apps/v1/namespaces/ns/deployments",
            String::new(),
            None,
        )
        .unwrap();
        assert_eq!(a.describe(), "deletecollection deployments");
        assert!(parse_action(&Method::GET, "/healthz", String::new(), None).is_none());
    }

    #[tokio::test]
    async fn a_scripted_failure_matches_exactly_its_resource_or_subresource() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{Api, PostParams};

        let api = FakeApi::new();
        let cms: Api<ConfigMap> = Api::namespaced(api.client(), "ns");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("a".into());
        let pp = PostParams::default();
        api.fail_next("update", "configmaps/status", 409, "Conflict");
        cms.replace("a", &pp, &cm)
            .await
            .expect("the main resource is not the subresource");
        let err = cms.replace_status("a", &pp, &cm).await.unwrap_err();
        assert!(err.to_string().contains("Conflict"), "{err}");
        api.fail_next("update", "configmaps", 500, "InternalError");
        cms.replace_status("a", &pp, &cm)
            .await
            .expect("the subresource is not the main resource");
        assert!(cms.replace("a", &pp, &cm).await.is_err());
    }

    #[tokio::test]
    async fn scripted_objects_answer_the_next_matching_call_once() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{Api, PostParams};

        let api = FakeApi::new();
        let configmaps: Api<ConfigMap> = Api::namespaced(api.client(), "default");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("settings".into());
        api.respond_next(
            "create",
            "configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "settings", "uid": "from-the-server"}}),
        );
        let created = configmaps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
        assert_eq!(created.metadata.uid.as_deref(), Some("from-the-server"));
        // Used up: the next create echoes its body again.
        let echoed = configmaps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
        assert_eq!(echoed.metadata.uid, None);
    }
}
