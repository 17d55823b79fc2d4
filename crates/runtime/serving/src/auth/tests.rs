//! The filter against a fake API server: a tower service behind `kube::Client` that
//! answers TokenReviews from a table of tokens and SubjectAccessReviews from a table of
//! (user, path, verb) grants, counting what it is asked. The e2e test
//! (cmd/sample-controller/tests/e2e/secure_metrics.rs) runs the real thing.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;

use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::*;

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
    /// Every request body, in order.
    requests: Vec<(String, Value)>,
}

#[derive(Clone, Default)]
struct FakeApi {
    state: Arc<Mutex<State>>,
}

impl FakeApi {
    fn token(self, token: &str, user: &str) -> Self {
        self.state
            .lock()
            .tokens
            .insert(token.to_string(), user.to_string());
        self
    }

    fn grant(self, user: &str, path: &str, verb: &str) -> Self {
        self.state
            .lock()
            .grants
            .insert((user.to_string(), path.to_string(), verb.to_string()));
        self
    }

    fn client(&self) -> kube::Client {
        let state = self.state.clone();
        let service = tower::service_fn(move |req: Request<kube::client::Body>| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(answer(&state, req).await) }
        });
        kube::Client::new(service, "default")
    }

    fn filter(&self) -> AuthFilter {
        AuthFilter::new(self.client())
    }

    /// How many reviews of each kind were asked for.
    fn counts(&self) -> (usize, usize) {
        let state = self.state.lock();
        let count = |kind: &str| state.requests.iter().filter(|(k, _)| k == kind).count();
        (count("tokenreviews"), count("subjectaccessreviews"))
    }

    fn last(&self, kind: &str) -> Value {
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
            let key = (
                spec["user"].as_str().unwrap_or("").to_string(),
                spec["nonResourceAttributes"]["path"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                spec["nonResourceAttributes"]["verb"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
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
    *response.status_mut() = StatusCode::from_u16(code).expect("a valid status");
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    headers
}

const READER: &str = "system:serviceaccount:monitoring:prometheus";
const STRANGER: &str = "system:serviceaccount:default:stranger";

fn api() -> FakeApi {
    FakeApi::default()
        .token("reader-token", READER)
        .token("stranger-token", STRANGER)
        .grant(READER, "/metrics", "get")
}

#[tokio::test]
async fn no_token_is_401_without_asking_the_api_server() {
    let api = api();
    let filter = api.filter();
    for headers in [
        HeaderMap::new(),
        {
            let mut h = HeaderMap::new();
            h.insert(
                http::header::AUTHORIZATION,
                HeaderValue::from_static("Basic dTpw"),
            );
            h
        },
        bearer(""),
    ] {
        let err = filter
            .check(&Method::GET, "/metrics", &headers)
            .await
            .unwrap_err();
        assert!(matches!(err, AuthError::MissingToken), "{err}");
        assert_eq!((err.status(), err.body().as_str()), (401, "Unauthorized\n"));
    }
    assert_eq!(api.counts(), (0, 0));
}

#[tokio::test]
async fn an_unknown_token_is_401_with_the_reviews_reason() {
    let api = api();
    let err = api
        .filter()
        .check(&Method::GET, "/metrics", &bearer("made-up"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 401);
    assert_eq!(
        err.to_string(),
        "the bearer token is not valid: token not found"
    );
    assert_eq!(api.last("tokenreviews")["spec"]["token"], "made-up");
    assert_eq!(
        api.counts(),
        (1, 0),
        "no SubjectAccessReview for an invalid token"
    );
}

#[tokio::test]
async fn a_granted_user_passes_and_the_review_carries_the_users_identity() {
    let api = api();
    let user = api
        .filter()
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap();
    assert_eq!(user.name, READER);
    let review = api.last("subjectaccessreviews");
    assert_eq!(review["apiVersion"], "authorization.k8s.io/v1");
    let spec = &review["spec"];
    assert_eq!(spec["user"], READER);
    assert_eq!(spec["uid"], format!("uid-{READER}"));
    assert_eq!(
        spec["groups"],
        json!(["system:serviceaccounts", "system:authenticated"])
    );
    assert_eq!(
        spec["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["p"])
    );
    assert_eq!(
        spec["nonResourceAttributes"],
        json!({"path": "/metrics", "verb": "get"})
    );
    assert!(spec.get("resourceAttributes").is_none());
    assert_eq!(
        api.last("tokenreviews")["apiVersion"],
        "authentication.k8s.io/v1"
    );
}

#[tokio::test]
async fn a_user_without_the_grant_is_403_naming_the_user() {
    let api = api();
    let filter = api.filter();
    let err = filter
        .check(&Method::GET, "/metrics", &bearer("stranger-token"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 403);
    assert_eq!(
        err.body(),
        format!("Authorization denied for user {STRANGER}\n")
    );
    assert!(err.to_string().contains("no RBAC policy matched"), "{err}");
    // The verb is the method in lower case, the path the one asked for: the reader's
    // grant of get on /metrics covers neither HEAD nor another path.
    for (method, path) in [(Method::HEAD, "/metrics"), (Method::GET, "/debug/pipeline")] {
        let err = filter
            .check(&method, path, &bearer("reader-token"))
            .await
            .unwrap_err();
        assert_eq!(err.status(), 403, "{method} {path}");
        let attributes = &api.last("subjectaccessreviews")["spec"]["nonResourceAttributes"];
        assert_eq!(attributes["verb"], method.as_str().to_lowercase());
        assert_eq!(attributes["path"], path);
    }
}

#[tokio::test(start_paused = true)]
async fn answers_are_cached_for_controller_runtimes_ttls() {
    let api = api();
    let filter = api.filter();
    let get = |token: &'static str| {
        let filter = filter.clone();
        async move { filter.check(&Method::GET, "/metrics", &bearer(token)).await }
    };
    // Allowed: one TokenReview and one SubjectAccessReview for many requests.
    for _ in 0..5 {
        get("reader-token").await.unwrap();
    }
    assert_eq!(api.counts(), (1, 1));
    // The token is re-reviewed after a minute; the allowed decision holds 5 minutes.
    tokio::time::advance(DEFAULT_AUTHN_TTL + Duration::from_millis(1)).await;
    get("reader-token").await.unwrap();
    assert_eq!(api.counts(), (2, 1));
    tokio::time::advance(DEFAULT_ALLOW_TTL).await;
    get("reader-token").await.unwrap();
    assert_eq!(api.counts(), (3, 2));

    // Denied: cached for 30 s only.
    get("stranger-token").await.unwrap_err();
    get("stranger-token").await.unwrap_err();
    assert_eq!(api.counts(), (4, 3));
    tokio::time::advance(DEFAULT_DENY_TTL + Duration::from_millis(1)).await;
    get("stranger-token").await.unwrap_err();
    assert_eq!(
        api.counts(),
        (4, 4),
        "the token still cached, the denial re-asked"
    );

    // Invalid tokens are cached too: a client retrying one costs one review a minute.
    for _ in 0..3 {
        assert_eq!(get("made-up").await.unwrap_err().status(), 401);
    }
    assert_eq!(api.counts(), (5, 4));
}

#[tokio::test]
async fn the_cache_keeps_a_hash_of_the_token_never_the_token() {
    let api = api();
    let filter = api.filter();
    filter
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap();
    let debug = format!("{filter:?}");
    assert!(!debug.contains("reader-token"), "{debug}");
    let key = token_key(&filter.inner.salt, "reader-token");
    assert!(filter.inner.authn.get(&key).is_some());
    assert_ne!(
        &key[..],
        Sha256::digest(b"reader-token").as_slice(),
        "salted"
    );
    // Another process (another salt) keys the same token differently.
    assert_ne!(key, token_key(&api.filter().inner.salt, "reader-token"));
}

#[tokio::test]
async fn an_api_server_error_is_500_and_not_cached() {
    let api = api();
    let filter = api.filter();
    api.state.lock().fail_with = Some(403);
    let err = filter
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            AuthError::Api {
                review: Review::TokenReview,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        (err.status(), err.body().as_str()),
        (500, "Authentication failed\n")
    );
    // Once the API server answers again, so does the filter: nothing was cached.
    api.state.lock().fail_with = None;
    filter
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_failing_subject_access_review_is_500_naming_the_user() {
    let api = api();
    let filter = api.filter();
    // The token's answer cached (the request itself is denied: another path).
    let denied = filter
        .check(&Method::GET, "/debug/pipeline", &bearer("reader-token"))
        .await
        .unwrap_err();
    assert_eq!(denied.status(), 403);
    api.state.lock().fail_with = Some(500);
    let err = filter
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            AuthError::Api {
                review: Review::SubjectAccessReview,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        (err.status(), err.body()),
        (500, format!("Authorization for user {READER} failed\n"))
    );
    api.state.lock().fail_with = None;
    filter
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_review_that_never_answers_times_out_after_10_s() {
    let api = api();
    api.state.lock().hang = true;
    let filter = api.filter();
    let started = tokio::time::Instant::now();
    let err = filter
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, AuthError::Timeout { review: Review::TokenReview, timeout, .. } if timeout == DEFAULT_REVIEW_TIMEOUT),
        "{err}"
    );
    assert_eq!(err.status(), 500);
    assert_eq!(started.elapsed(), DEFAULT_REVIEW_TIMEOUT);
}

#[test]
fn bearer_tokens_are_read_as_the_api_server_reads_them() {
    let read = |value: &'static str| {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, HeaderValue::from_static(value));
        bearer_token(&headers).map(str::to_string)
    };
    assert_eq!(read("Bearer abc").as_deref(), Some("abc"));
    assert_eq!(read("bearer abc").as_deref(), Some("abc"));
    assert_eq!(read("BEARER  abc ").as_deref(), Some("abc"));
    assert_eq!(read("Bearer"), None);
    assert_eq!(read("Bearer "), None);
    assert_eq!(read("Token abc"), None);
}
