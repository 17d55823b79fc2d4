//! The filter against a fake API server (`crate::testing::FakeAuthApi`: TokenReviews
//! from a table of tokens, SubjectAccessReviews from a table of grants, counting what
//! it is asked). The e2e test (cmd/sample-controller/tests/e2e/secure_metrics.rs) runs
//! the real thing.

use http::{HeaderMap, HeaderValue, Method};
use serde_json::json;

use super::*;
use crate::testing::FakeAuthApi;

/// The filter in front of `api`.
fn filter_of(api: &FakeAuthApi) -> AuthFilter {
    AuthFilter::new(api.client())
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

fn api() -> FakeAuthApi {
    FakeAuthApi::default()
        .token("reader-token", READER)
        .token("stranger-token", STRANGER)
        .grant(READER, "/metrics", "get")
}

#[tokio::test]
async fn no_token_is_401_without_asking_the_api_server() {
    let api = api();
    let filter = filter_of(&api);
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
    let err = filter_of(&api)
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
    let user = filter_of(&api)
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
    let filter = filter_of(&api);
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
    let filter = filter_of(&api);
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
    let filter = filter_of(&api);
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
    assert_ne!(key, token_key(&filter_of(&api).inner.salt, "reader-token"));
}

#[tokio::test]
async fn an_api_server_error_is_500_and_not_cached() {
    let api = api();
    let filter = filter_of(&api);
    api.fail_with(Some(403));
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
    api.fail_with(None);
    filter
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_failing_subject_access_review_is_500_naming_the_user() {
    let api = api();
    let filter = filter_of(&api);
    // The token's answer cached (the request itself is denied: another path).
    let denied = filter
        .check(&Method::GET, "/debug/pipeline", &bearer("reader-token"))
        .await
        .unwrap_err();
    assert_eq!(denied.status(), 403);
    api.fail_with(Some(500));
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
    api.fail_with(None);
    filter
        .check(&Method::GET, "/metrics", &bearer("reader-token"))
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_review_that_never_answers_times_out_after_10_s() {
    let api = api();
    api.hang();
    let filter = filter_of(&api);
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
