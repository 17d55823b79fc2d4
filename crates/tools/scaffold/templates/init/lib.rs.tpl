//! `{{project_name}}`: a Kubernetes operator for the `{{domain}}` API groups, scaffolded by
//! `kcr` (kube-controllers-rs' kubebuilder) and built on its runtime crates: client-go's
//! informers, work queues and Events, controller-runtime's manager, builder and
//! webhooks, in Rust.
//!
//! | kubebuilder (Go) | here |
//! |---|---|
//! | `api/<version>/<kind>_types.go` | [`api`] |
//! | `internal/controller/<kind>_controller.go` | [`controller`] |
//! | `internal/webhook/<version>/<kind>_webhook.go` | [`webhook`] |
//! | `cmd/main.go` | `src/main.rs` |
//! | `make manifests` (controller-gen) | `cargo run --bin manifests` ([`crds`], [`rbac_rules`]) |
//! | `make test` (envtest) | `cargo test` (unit tests in each module, e2e tests in `tests/e2e`) |
//!
//! `kcr create api` and `kcr create webhook` add a line before each
//! `// +kcr:scaffold:...` marker; keep the markers where they are.

#![forbid(unsafe_code)]

pub mod api;
pub mod controller;
pub mod webhook;

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Every CustomResourceDefinition of this project, one per kind, in a fixed order:
/// what `cargo run --bin manifests` writes to `deploy/crd/` and the e2e tests install.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        // +kcr:scaffold:crds
    ]
}

/// The RBAC rules of every controller, as they declare them (`cargo run --bin
/// manifests` merges them into the ClusterRole `manager-role`, deploy/rbac/role.yaml).
pub fn rbac_rules() -> Vec<PolicyRule> {
    let per_controller: &[Vec<PolicyRule>] = &[
        controller::manager_rules(),
        // +kcr:scaffold:rbac
    ];
    per_controller.concat()
}
