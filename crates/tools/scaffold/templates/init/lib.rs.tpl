//! The {{project_name}} operator: its API types ([`api`]), controllers ([`controller`])
//! and admission webhooks ([`webhook`]). The binary (src/main.rs) wires them to a
//! manager; `cargo run --bin manifests` writes the CRDs and RBAC from [`crds`] and
//! [`rbac_rules`].

pub mod api;
pub mod controller;
pub mod webhook;

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CustomResourceDefinition of every kind, generated from its type.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        // +kcr:scaffold:crds
    ]
}

/// Every rule the manager's ClusterRole grants: what each controller reads and writes,
/// and what the manager itself needs (Events; token and access reviews for secure
/// metrics). Leader election has a Role of its own (deploy/rbac/leader_election_role.yaml).
pub fn rbac_rules() -> Vec<PolicyRule> {
    [
        controller::manager_rules(),
        // +kcr:scaffold:rbac
    ]
    .concat()
}
