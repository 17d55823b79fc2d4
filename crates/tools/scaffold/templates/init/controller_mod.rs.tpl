//! The controllers: one module per kind, each a reconciler on the builder
//! (controller-runtime's `NewControllerManagedBy(mgr).For(..).Owns(..).Complete(r)`)
//! with a `setup` that registers it with the manager and the RBAC rules it needs.

use k8s_openapi::api::rbac::v1::PolicyRule;

// +kcr:scaffold:controllers

/// What the manager needs whatever its controllers do: writing Events (both APIs:
/// `--events-api` chooses) and, for the secure metrics endpoint, reviewing the
/// scraper's token and access.
pub fn manager_rules() -> Vec<PolicyRule> {
    vec![
        rule("", "events", &["create", "patch"]),
        rule("events.k8s.io", "events", &["create", "patch"]),
        rule("authentication.k8s.io", "tokenreviews", &["create"]),
        rule("authorization.k8s.io", "subjectaccessreviews", &["create"]),
    ]
}

/// One RBAC rule: `verbs` on `resource` in `group` (`""`: the core group).
pub fn rule(group: &str, resource: &str, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(vec![resource.to_owned()]),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..PolicyRule::default()
    }
}
