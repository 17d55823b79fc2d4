//! Who may read a server's endpoints: every request authenticated by a TokenReview and
//! authorized by a SubjectAccessReview against the API server. controller-runtime's
//! `filters.WithAuthenticationAndAuthorization` (pkg/metrics/filters), which
//! kubebuilder's scaffold has put in front of `/metrics` since v4.1, built on
//! k8s.io/apiserver's delegating authenticator and authorizer.
//!
//! # The path of a request
//!
//! ```text
//!  GET /metrics, Authorization: Bearer <token>
//!      │
//!      ├─ no bearer token ────────────────────────────────────────► 401 Unauthorized
//!      ▼
//!  TokenReview{spec.token}  (authn cache: 1 min, by a hash of the token)
//!      ├─ API server unreachable / error / 10 s timeout ─────────► 500
//!      ├─ status.authenticated false ────────────────────────────► 401 Unauthorized
//!      ▼  user, uid, groups, extra
//!  SubjectAccessReview{user, uid, groups, extra,
//!                      nonResourceAttributes{path: "/metrics", verb: "get"}}
//!      │                (authz cache: allowed 5 min, denied 30 s)
//!      ├─ API server unreachable / error / 10 s timeout ─────────► 500
//!      ├─ status.allowed false ──────────────────────────────────► 403 (names the user)
//!      ▼
//!  the endpoint
//! ```
//!
//! The verb is the HTTP method in lower case (so `HEAD` needs `head`), the path is the
//! request's path without its query: a `metrics-reader` ClusterRole grants
//! `nonResourceURLs: ["/metrics"], verbs: ["get"]`. The controller itself needs
//! `create` on `tokenreviews` (authentication.k8s.io) and `subjectaccessreviews`
//! (authorization.k8s.io), which the built-in ClusterRole `system:auth-delegator`
//! holds.
//!
//! # The cache
//!
//! The numbers are controller-runtime's (`CacheTTL: 1m`, `AllowCacheTTL: 5m`,
//! `DenyCacheTTL: 30s`, `TokenAccessReviewTimeout: 10s`). A Prometheus scraping every 30
//! s then costs the API server one TokenReview a minute and one SubjectAccessReview
//! every five; the price is that a revoked token or RoleBinding keeps working for up to
//! that long. Invalid tokens are cached for the minute too (k8s.io/apiserver's
//! `cache.New(tokenAuth, false, CacheTTL, CacheTTL)`), so a client retrying a bad token
//! does not turn into a TokenReview per request; errors are never cached. Tokens are
//! keyed by a salted SHA-256 of the token (k8s.io/apiserver keys by an HMAC): the token
//! itself is never kept. Both caches are bounded ([`AuthConfig::cache_size`]), since
//! clients choose their keys.
//!
//! # Where this differs from controller-runtime
//!
//! * A failed review is not retried (k8s.io/apiserver retries with a backoff of 500 ms
//!   x 1.5, five times): the scraper retries at its next interval anyway, and a request
//!   held for seconds of retries would only pile up connections.
//! * Concurrent first requests with the same token each ask (k8s.io/apiserver
//!   coalesces them): a scraper sends one request at a time.
//! * Only bearer tokens authenticate; no client certificates, no request headers of a
//!   front proxy.

mod cache;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

use cache::TtlCache;

/// How long a TokenReview's answer is cached (controller-runtime's `CacheTTL`).
pub const DEFAULT_AUTHN_TTL: Duration = Duration::from_secs(60);
/// How long an allowing SubjectAccessReview is cached (`AllowCacheTTL`).
pub const DEFAULT_ALLOW_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a denying SubjectAccessReview is cached (`DenyCacheTTL`).
pub const DEFAULT_DENY_TTL: Duration = Duration::from_secs(30);
/// How long one review may take before the request is answered 500
/// (`TokenAccessReviewTimeout`).
pub const DEFAULT_REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// How many answers each cache holds at most (k8s.io/apiserver's webhook authorizer
/// holds 8192; a controller's metrics port has a few clients).
pub const DEFAULT_CACHE_SIZE: usize = 4096;

/// The filter's timings and cache bound; [`Default`] is controller-runtime's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// How long a TokenReview's answer (valid or invalid) is reused.
    pub authn_ttl: Duration,
    /// How long an allowing SubjectAccessReview is reused.
    pub allow_ttl: Duration,
    /// How long a denying SubjectAccessReview is reused.
    pub deny_ttl: Duration,
    /// The deadline of each review.
    pub review_timeout: Duration,
    /// The bound of each cache.
    pub cache_size: usize,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            authn_ttl: DEFAULT_AUTHN_TTL,
            allow_ttl: DEFAULT_ALLOW_TTL,
            deny_ttl: DEFAULT_DENY_TTL,
            review_timeout: DEFAULT_REVIEW_TIMEOUT,
            cache_size: DEFAULT_CACHE_SIZE,
        }
    }
}

/// Which review could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// authentication.k8s.io/v1 TokenReview.
    TokenReview,
    /// authorization.k8s.io/v1 SubjectAccessReview.
    SubjectAccessReview,
}

impl std::fmt::Display for Review {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Review::TokenReview => "TokenReview",
            Review::SubjectAccessReview => "SubjectAccessReview",
        })
    }
}

/// Why a request is refused. [`status`](Self::status) is the HTTP status to answer,
/// [`body`](Self::body) what to tell the client (never the API server's error: that is
/// for the log).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer <token>` header (anonymous requests are refused).
    #[error("no bearer token")]
    MissingToken,
    /// The API server does not know the token (expired, revoked, made up).
    #[error("the bearer token is not valid{}", reason_suffix(.reason))]
    InvalidToken {
        /// The TokenReview's `status.error`, if any.
        reason: String,
    },
    /// The API server says the user may not do this.
    #[error("user {user:?} may not {verb} {path}{}", reason_suffix(.reason))]
    Forbidden {
        /// The user's name.
        user: String,
        /// The verb asked about.
        verb: String,
        /// The path asked about.
        path: String,
        /// The SubjectAccessReview's `status.reason`, if any.
        reason: String,
    },
    /// The review request failed (the API server unreachable, or it refused: the
    /// controller lacks the `create` permission on the review, say).
    #[error("{review} failed{}: {source}", user_suffix(.user))]
    Api {
        /// Which review.
        review: Review,
        /// The user being authorized (empty for a TokenReview).
        user: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The review did not answer within [`AuthConfig::review_timeout`].
    #[error("{review} timed out after {timeout:?}{}", user_suffix(.user))]
    Timeout {
        /// Which review.
        review: Review,
        /// The user being authorized (empty for a TokenReview).
        user: String,
        /// The deadline.
        timeout: Duration,
    },
}

fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

fn user_suffix(user: &str) -> String {
    if user.is_empty() {
        String::new()
    } else {
        format!(" for user {user:?}")
    }
}

impl AuthError {
    /// The HTTP status to answer: 401 without a valid token, 403 when denied, 500 when
    /// the API server could not be asked.
    pub fn status(&self) -> u16 {
        match self {
            AuthError::MissingToken | AuthError::InvalidToken { .. } => 401,
            AuthError::Forbidden { .. } => 403,
            AuthError::Api { .. } | AuthError::Timeout { .. } => 500,
        }
    }

    /// The response body, controller-runtime's texts: `Unauthorized`, `Authorization
    /// denied for user <user>`, `Authentication failed`, `Authorization for user <user>
    /// failed`.
    pub fn body(&self) -> String {
        match self {
            AuthError::MissingToken | AuthError::InvalidToken { .. } => "Unauthorized\n".into(),
            AuthError::Forbidden { user, .. } => format!("Authorization denied for user {user}\n"),
            AuthError::Api { review, user, .. } | AuthError::Timeout { review, user, .. } => {
                match review {
                    Review::TokenReview => "Authentication failed\n".into(),
                    Review::SubjectAccessReview => {
                        format!("Authorization for user {user} failed\n")
                    }
                }
            }
        }
    }
}

/// Who a token belongs to: the TokenReview's `status.user`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct User {
    /// `system:serviceaccount:<namespace>:<name>` for a ServiceAccount.
    pub name: String,
    /// The user's uid.
    pub uid: String,
    /// Its groups (`system:serviceaccounts`, `system:authenticated`, ...).
    pub groups: Vec<String>,
    /// Extra attributes (a ServiceAccount token's Pod name and uid, ...).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    fn from_info(info: UserInfo) -> Self {
        Self {
            name: info.username.unwrap_or_default(),
            uid: info.uid.unwrap_or_default(),
            groups: info.groups.unwrap_or_default(),
            extra: info.extra.unwrap_or_default(),
        }
    }
}

/// The authentication and authorization filter: [`check`](Self::check) each request
/// before serving it. Clones share the caches.
#[derive(Clone)]
pub struct AuthFilter {
    inner: Arc<Inner>,
}

struct Inner {
    tokens: Api<TokenReview>,
    reviews: Api<SubjectAccessReview>,
    config: AuthConfig,
    /// Salts the token hashes: a process's keys say nothing about another's.
    salt: [u8; 32],
    /// Token hash -> the user, or why the token is invalid.
    authn: TtlCache<[u8; 32], Result<User, String>>,
    /// The SubjectAccessReview spec, as JSON -> allowed, or the reason it is not.
    authz: TtlCache<String, Result<(), String>>,
}

impl std::fmt::Debug for AuthFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthFilter")
            .field("config", &self.inner.config)
            .field("cached_tokens", &self.inner.authn.len())
            .field("cached_decisions", &self.inner.authz.len())
            .finish_non_exhaustive()
    }
}

impl AuthFilter {
    /// A filter asking the API server `client` talks to, with controller-runtime's
    /// timings.
    pub fn new(client: kube::Client) -> Self {
        Self::with_config(client, AuthConfig::default())
    }

    /// [`new`](Self::new) with other timings or cache bound.
    pub fn with_config(client: kube::Client, config: AuthConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                tokens: Api::all(client.clone()),
                reviews: Api::all(client),
                authn: TtlCache::new(config.cache_size),
                authz: TtlCache::new(config.cache_size),
                config,
                salt: rand::random(),
            }),
        }
    }

    /// The timings and bound in use.
    pub fn config(&self) -> &AuthConfig {
        &self.inner.config
    }

    /// Whether the request with these `headers`, `method` and `path` (without the
    /// query) may be served; the user if so.
    pub async fn check(
        &self,
        method: &http::Method,
        path: &str,
        headers: &http::HeaderMap,
    ) -> Result<User, AuthError> {
        let token = bearer_token(headers).ok_or(AuthError::MissingToken)?;
        let user = self.authenticate(token).await?;
        let verb = method.as_str().to_ascii_lowercase();
        self.authorize(&user, &verb, path).await?;
        Ok(user)
    }

    /// The TokenReview's answer for `token`, cached.
    async fn authenticate(&self, token: &str) -> Result<User, AuthError> {
        let inner = &self.inner;
        let key = token_key(&inner.salt, token);
        let answer = match inner.authn.get(&key) {
            Some(answer) => answer,
            None => {
                let answer = self.token_review(token).await?;
                inner
                    .authn
                    .insert(key, answer.clone(), inner.config.authn_ttl);
                answer
            }
        };
        answer.map_err(|reason| AuthError::InvalidToken { reason })
    }

    async fn token_review(&self, token: &str) -> Result<Result<User, String>, AuthError> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let answer = self
            .create(&self.inner.tokens, &review, Review::TokenReview, "")
            .await?;
        let status = answer.status.unwrap_or_default();
        Ok(match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Ok(User::from_info(user)),
            _ => Err(status.error.unwrap_or_default()),
        })
    }

    /// The SubjectAccessReview's answer for `user` doing `verb` on `path`, cached.
    async fn authorize(&self, user: &User, verb: &str, path: &str) -> Result<(), AuthError> {
        let inner = &self.inner;
        let spec = SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
            groups: Some(user.groups.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_string()),
                verb: Some(verb.to_string()),
            }),
            ..SubjectAccessReviewSpec::default()
        };
        // Every field of the spec is in the key, as k8s.io/apiserver's webhook
        // authorizer keys its cache by the review's JSON. (Serializing these types
        // cannot fail; if it did, the answer would just not be cached.)
        let key = serde_json::to_string(&spec).ok();
        let answer = match key.as_ref().and_then(|key| inner.authz.get(key)) {
            Some(answer) => answer,
            None => {
                let answer = self.subject_access_review(spec, &user.name).await?;
                let ttl = if answer.is_ok() {
                    inner.config.allow_ttl
                } else {
                    inner.config.deny_ttl
                };
                if let Some(key) = key {
                    inner.authz.insert(key, answer.clone(), ttl);
                }
                answer
            }
        };
        answer.map_err(|reason| AuthError::Forbidden {
            user: user.name.clone(),
            verb: verb.to_string(),
            path: path.to_string(),
            reason,
        })
    }

    async fn subject_access_review(
        &self,
        spec: SubjectAccessReviewSpec,
        user: &str,
    ) -> Result<Result<(), String>, AuthError> {
        let review = SubjectAccessReview {
            spec,
            ..SubjectAccessReview::default()
        };
        let answer = self
            .create(
                &self.inner.reviews,
                &review,
                Review::SubjectAccessReview,
                user,
            )
            .await?;
        let status = answer.status.unwrap_or_default();
        Ok(if status.allowed && !status.denied.unwrap_or(false) {
            Ok(())
        } else {
            Err(status.reason.unwrap_or_default())
        })
    }

    /// Creates `review` (the API server answers in the returned object's status),
    /// within the review timeout; `user` names who is being reviewed in the error.
    async fn create<K>(
        &self,
        api: &Api<K>,
        review: &K,
        which: Review,
        user: &str,
    ) -> Result<K, AuthError>
    where
        K: Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    {
        let timeout = self.inner.config.review_timeout;
        tokio::time::timeout(timeout, api.create(&PostParams::default(), review))
            .await
            .map_err(|_| AuthError::Timeout {
                review: which,
                user: user.to_string(),
                timeout,
            })?
            .map_err(|source| AuthError::Api {
                review: which,
                user: user.to_string(),
                source,
            })
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case, as
/// k8s.io/apiserver's bearertoken authenticator reads it); `None` without one.
fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn token_key(salt: &[u8; 32], token: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(token.as_bytes());
    hasher.finalize().into()
}

#[cfg(test)]
mod tests;
