//! End-to-end tests against the real control plane (`hack/control-plane.sh`):
//! every test binary shares one control plane; each test has its own namespace.
//!
//! These check the behaviour our controllers rely on: readiness and
//! discovery, Deployments becoming available (kube-controller-manager,
//! kube-scheduler, kwok), garbage collection, RBAC with ServiceAccount tokens,
//! CRD establishment, schema validation and the status subresource, the
//! optimistic concurrency (409 Conflict), and admission webhooks served by the test
//! process that the API server calls over TLS.

mod api;
mod crd;
mod gc;
mod rbac;
mod semantics;
mod webhook;
mod workloads;

use std::time::Duration;

/// Generous: a 2-core CI machine runs these next to other test binaries.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// The HTTP status code of a Kubernetes API error, if `err` is one.
pub fn api_code<T>(result: &Result<T, kube::Error>) -> Option<u16> {
    match result {
        Err(kube::Error::Api(status)) => Some(status.code),
        _ => None,
    }
}
