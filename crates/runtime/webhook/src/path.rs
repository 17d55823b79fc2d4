//! kubebuilder's webhook paths, so that the `// +kubebuilder:webhook:path=...` markers,
//! the generated `ValidatingWebhookConfiguration` / `MutatingWebhookConfiguration`
//! manifests and the paths this server registers agree without anyone writing them.
//!
//! `/validate-<group, '.' replaced by '-'>-<version>-<kind, lower case>` and
//! `/mutate-...` (controller-runtime's `generateValidatePath` / `generateMutatePath`).
//! The core group is the empty string, hence the double dash of `/validate--v1-pod`:
//! that is what kubebuilder generates, not a typo.
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! assert_eq!(webhook::validate_path::<Pod>(), "/validate--v1-pod");
//! assert_eq!(webhook::mutate_path::<Deployment>(), "/mutate-apps-v1-deployment");
//! assert_eq!(
//!     webhook::validate_path::<apis::samplecontroller::v1alpha1::Foo>(),
//!     "/validate-samplecontroller-k8s-io-v1alpha1-foo"
//! );
//! ```

/// The path of `K`'s validating webhook.
pub fn validate_path<K: kube::Resource<DynamicType = ()>>() -> String {
    webhook_path("validate", &K::group(&()), &K::version(&()), &K::kind(&()))
}

/// The path of `K`'s mutating (defaulting) webhook.
pub fn mutate_path<K: kube::Resource<DynamicType = ()>>() -> String {
    webhook_path("mutate", &K::group(&()), &K::version(&()), &K::kind(&()))
}

/// `/<prefix>-<group with '.' as '-'>-<version>-<kind lower case>`, for kinds known only
/// at run time.
pub fn webhook_path(prefix: &str, group: &str, version: &str, kind: &str) -> String {
    format!(
        "/{prefix}-{}-{version}-{}",
        group.replace('.', "-"),
        kind.to_lowercase()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubebuilder_paths() {
        assert_eq!(
            webhook_path("validate", "", "v1", "Pod"),
            "/validate--v1-pod"
        );
        assert_eq!(
            webhook_path("mutate", "batch.tutorial.kubebuilder.io", "v1", "CronJob"),
            "/mutate-batch-tutorial-kubebuilder-io-v1-cronjob"
        );
        assert_eq!(
            validate_path::<k8s_openapi::api::core::v1::ConfigMap>(),
            "/validate--v1-configmap"
        );
        assert_eq!(
            mutate_path::<k8s_openapi::api::networking::v1::NetworkPolicy>(),
            "/mutate-networking-k8s-io-v1-networkpolicy"
        );
    }
}
