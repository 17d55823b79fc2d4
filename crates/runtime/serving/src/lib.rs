//! Secure serving for the HTTP servers a controller runs: the admission webhook server
//! (`webhook`) and the metrics server (`metrics`). What k8s.io/apiserver calls secure
//! serving and delegated authentication/authorization, and controller-runtime splits
//! into `pkg/certwatcher` and `pkg/metrics/filters`:
//!
//! * [`certs`]: the serving certificate, read from a directory and reloaded when its
//!   files change (controller-runtime's `certwatcher`), or generated self-signed when no
//!   directory holds one (controller-runtime's metrics server does the same);
//! * [`limits`]: what a client may cost the server: deadlines for a request's headers
//!   and body, an idle keep-alive timeout, a cap on concurrent connections;
//! * [`auth`]: every request authenticated by a TokenReview and authorized by a
//!   SubjectAccessReview against the API server, with a short cache of decisions
//!   (controller-runtime's `filters.WithAuthenticationAndAuthorization`);
//! * `testing` (feature `testing`): a fake API server answering the filter's reviews,
//!   for the tests of this crate and of the servers that use the filter.
//!
//! | controller-runtime / k8s.io/apiserver | here |
//! |---|---|
//! | `certwatcher.CertWatcher` | [`certs::CertWatcher`] |
//! | the metrics server's `createListener` (a pair from `CertDir`, else self-signed) | [`certs::ServingCert::load`], [`certs::self_signed`] |
//! | `filters.WithAuthenticationAndAuthorization`, `DelegatingAuthenticatorConfig`, `DelegatingAuthorizerConfig` | [`auth::AuthFilter`], [`auth::AuthConfig`] |
//!
//! # Who uses what
//!
//! ```text
//!  webhook server ── certs::CertWatcher (the API server verifies it: caBundle) + limits
//!  metrics server ── certs::ServingCert (a directory, or self-signed) + limits
//!                    + auth::AuthFilter (--metrics-secure, the default)
//!  health server  ── limits only: plain HTTP, no token (the kubelet probes it)
//! ```
//!
//! Why a crate of its own: the webhook and metrics servers need the same certificate
//! handling and the same limits, and neither should depend on the other for them. The
//! filter asks the API server through whatever `kube::Client` the caller hands it (the
//! manager's, with its throttling), so this crate builds no client and reads no flags.
#![forbid(unsafe_code)]

pub mod auth;
pub mod certs;
pub mod limits;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
