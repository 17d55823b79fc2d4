//! A fake API server for the authentication and authorization filter
//! ([`crate::auth::AuthFilter`]): a tower service behind `kube::Client` that answers
//! TokenReviews from a table of tokens and SubjectAccessReviews from a table of
//! (user, path, verb) grants, and records what it is asked. For unit tests of the
//! filter and of the servers behind it; the e2e test
//! (cmd/sample-controller/tests/e2e/secure_metrics.rs) asks the real API server.
//!
//! **Requires the `testing` feature** (tests enable it under `[dev-dependencies]`):
//! a test double is not part of the production API.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use serving::testing::FakeAuthApi;
//!
//! let api = FakeAuthApi::default()
//!     .token("reader-token", "system:serviceaccount:monitoring:prometheus")
//!     .grant("system:serviceaccount:monitoring:prometheus", "/metrics", "get");
//! let filter = serving::auth::AuthFilter::new(api.client());
//! # let _ = filter;
//! assert_eq!(api.counts(), (0, 0));
//! # }
//! ```

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;

use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde_json::{Value, json};

#[derive(Default)]
struct State {
    /// token -> username (anything else is invalid).
    tokens: HashMap<String, String>,
    /// (username, path, verb) allowed.
    grants: HashSet<(String, String, String)>,
    /// Answer every request with this HTTP status instead.
    fail_with: Option<u16>,
    /// Never answer (the review times out).
    hang: bool,
    /// Every request: the resource (`tokenreviews`, `subjectaccessreviews`) and body.
    requests: Vec<(String, Value)>,
}

/// The fake API server. Clones share one state, so a test can change the answers
/// while a filter built from [`client`](Self::client) is in use.
#[derive(Clone, Default)]
pub struct FakeAuthApi {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for FakeAuthApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeAuthApi")
            .field("requests", &self.state.lock().requests.len())
            .finish_non_exhaustive()
    }
}

impl FakeAuthApi {
    /// `token` authenticates as `user` (with the groups of a ServiceAccount). Returns
    /// a handle on the same fake, for chaining.
    pub fn token(&self, token: &str, user: &str) -> Self {
        self.state
            .lock()
            .tokens
            .insert(token.to_string(), user.to_string());
        self.clone()
    }

    /// `user` may `verb` the non-resource URL `path`, from now on. Returns a handle on
    /// the same fake, for chaining.
    pub fn grant(&self, user: &str, path: &str, verb: &str) -> Self {
        self.state
            .lock()
            .grants
            .insert((user.to_string(), path.to_string(), verb.to_string()));
        self.clone()
    }

    /// Answers every review with HTTP status `code` (a Status body) from now on;
    /// `None` answers normally again.
    pub fn fail_with(&self, code: Option<u16>) {
        self.state.lock().fail_with = code;
    }

    /// Never answers a review from now on (the caller's timeout decides).
    pub fn hang(&self) {
        self.state.lock().hang = true;
    }

    /// A client whose every request this fake answers.
    pub fn client(&self) -> kube::Client {
        let state = self.state.clone();
        let service = tower::service_fn(move |req: Request<kube::client::Body>| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(answer(&state, req).await) }
        });
        kube::Client::new(service, "default")
    }

    /// How many reviews were asked for: (TokenReviews, SubjectAccessReviews).
    pub fn counts(&self) -> (usize, usize) {
        let state = self.state.lock();
        let count = |kind: &str| state.requests.iter().filter(|(k, _)| k == kind).count();
        (count("tokenreviews"), count("subjectaccessreviews"))
    }

    /// The body of the last request for `kind` (`tokenreviews`, `subjectaccessreviews`).
    ///
    /// # Panics
    /// If none was made: a test asserting on it expects one.
    pub fn last(&self, kind: &str) -> Value {
        let state = self.state.lock();
        state
            .requests
            .iter()
            .rev()
            .find(|(k, _)| k == kind)
            .map(|(_, body)| body.clone())
            .expect("a request of that kind")
    }
}

async fn answer(
    state: &Mutex<State>,
    req: Request<kube::client::Body>,
) -> Response<kube::client::Body> {
    let (parts, body) = req.into_parts();
    let body: Value = body
        .collect()
        .await
        .ok()
        .and_then(|b| serde_json::from_slice(&b.to_bytes()).ok())
        .unwrap_or(Value::Null);
    let kind = parts
        .uri
        .path()
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    let (hang, fail_with) = {
        let mut state = state.lock();
        state.requests.push((kind.clone(), body.clone()));
        (state.hang, state.fail_with)
    };
    if hang {
        std::future::pending::<()>().await;
    }
    if let Some(code) = fail_with {
        return json_response(
            code,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "message": "scripted failure", "reason": "Forbidden", "code": code}),
        );
    }
    let state = state.lock();
    match (parts.method.as_str(), kind.as_str()) {
        ("POST", "tokenreviews") => {
            let token = body["spec"]["token"].as_str().unwrap_or("");
            let status = match state.tokens.get(token) {
                Some(user) => json!({"authenticated": true, "user": {
                    "username": user, "uid": format!("uid-{user}"),
                    "groups": ["system:serviceaccounts", "system:authenticated"],
                    "extra": {"authentication.kubernetes.io/pod-name": ["p"]}}}),
                None => json!({"authenticated": false, "error": "token not found"}),
            };
            let mut review = body.clone();
            review["status"] = status;
            json_response(201, review)
        }
        ("POST", "subjectaccessreviews") => {
            let spec = &body["spec"];
            let attributes = &spec["nonResourceAttributes"];
            let text = |v: &Value| v.as_str().unwrap_or("").to_string();
            let key = (
                text(&spec["user"]),
                text(&attributes["path"]),
                text(&attributes["verb"]),
            );
            let allowed = state.grants.contains(&key);
            let mut review = body.clone();
            review["status"] = if allowed {
                json!({"allowed": true, "reason": "RBAC: allowed"})
            } else {
                json!({"allowed": false, "reason": "no RBAC policy matched"})
            };
            json_response(201, review)
        }
        _ => json_response(404, json!({"kind": "Status", "code": 404})),
    }
}

fn json_response(code: u16, body: Value) -> Response<kube::client::Body> {
    let mut response = Response::new(kube::client::Body::from(body.to_string().into_bytes()));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
