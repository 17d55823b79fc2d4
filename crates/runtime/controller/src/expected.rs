//! API answers that are expected states, not failures: the classification both
//! controllers use so that tearing down a namespace is quiet.
//!
//! While a namespace is being deleted, a controller still syncs the objects in it (the
//! namespace controller deletes them one kind at a time, and every deletion is an
//! event). Two answers are then normal:
//!
//! * **A create is refused because the namespace is terminating.** The API server's
//!   NamespaceLifecycle admission plugin (apiserver
//!   `pkg/admission/plugin/namespace/lifecycle/admission.go`) refuses every create in a
//!   namespace whose phase is `Terminating` with a 403 Forbidden ("unable to create new
//!   content in namespace X because it is being terminated") and adds one
//!   `details.causes[]` entry of type `NamespaceTerminating` (core/v1's
//!   `NamespaceTerminatingCause`, JSON field `reason`) on `metadata.namespace`. The code
//!   and reason are those of any RBAC refusal; only the cause tells them apart, which
//!   is why [`is_namespace_terminating`] looks at the cause and not at the 403
//!   (apimachinery's `errors.HasStatusCause(err, v1.NamespaceTerminatingCause)`).
//!   Kubernetes' own controllers treat it as nothing to do: the ReplicaSet controller's
//!   `manageReplicas` (`pkg/controller/replicaset/replica_set.go`) counts a pod create
//!   refused with that cause as a success ("any creation will fail"), and the root CA
//!   publisher (`pkg/controller/certificates/rootcacertpublisher/publisher.go`) returns
//!   `nil` for it ("don't retry a create if the namespace ... is terminating"). Nothing
//!   is lost by stopping: the namespace deletion deletes the owner as well, and if the
//!   deletion is ever abandoned the owner's next event syncs it again.
//! * **A write finds the object gone** (404 Not Found, [`is_not_found`]): most often
//!   the status write of an object deleted since the informer's cache last saw it.
//!   The object no longer exists, so there is nothing to converge; its deletion event
//!   arrives on the watch and the next sync finds it missing from the cache.
//!
//! A sync that meets either ends with `Ok` and logs at debug: no "error syncing" line,
//! no `controller_runtime_reconcile_errors_total`, no rate-limited requeue. Any other
//! 403 (missing RBAC) stays an error: that one needs a human.

// The cause classifier lives with the typed client that decodes the Status on both
// wires (`gentype::response`), so the Event sink (`record`) uses the same one.
pub use gentype::response::{
    NAMESPACE_TERMINATING_CAUSE, has_status_cause, is_namespace_terminating,
};

/// Whether the API server answered 404 Not Found: the object (or its namespace) is
/// gone (apimachinery's `errors.IsNotFound`).
pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiError;
    use kube::core::Status;
    use kube::core::response::{StatusCause, StatusDetails};

    /// The Status NamespaceLifecycle admission answers a create in the terminating
    /// namespace `ns` with (admission.NewForbidden plus the cause).
    fn terminating() -> kube::Error {
        let details = StatusDetails {
            name: "web".into(),
            group: "apps".into(),
            kind: "deployments".into(),
            uid: String::new(),
            causes: vec![StatusCause {
                reason: "NamespaceTerminating".into(),
                message: "namespace ns is being terminated".into(),
                field: "metadata.namespace".into(),
            }],
            retry_after_seconds: 0,
        };
        let message = "deployments.apps \"web\" is forbidden: unable to create new content \
                       in namespace ns because it is being terminated";
        kube::Error::Api(
            Status::failure(message, "Forbidden")
                .with_code(403)
                .with_details(details)
                .boxed(),
        )
    }

    fn plain(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Status::failure("no", reason).with_code(code).boxed())
    }

    #[test]
    fn a_create_refused_in_a_terminating_namespace_is_expected() {
        let err = terminating();
        assert!(is_namespace_terminating(&err));
        assert!(!is_not_found(&err));
        let api = ApiError::new("create Deployment", "ns", "web", err);
        assert!(api.is_namespace_terminating());
        assert!(!api.is_not_found());
    }

    #[test]
    fn a_plain_forbidden_is_still_an_error() {
        // RBAC's 403: same code, same reason, no cause.
        let err = plain(403, "Forbidden");
        assert!(!is_namespace_terminating(&err));
        let api = ApiError::new("create Deployment", "ns", "web", err);
        assert!(!api.is_namespace_terminating());
        // Nor is an answer that is not an API Status at all.
        let io = kube::Error::Service(Box::new(std::io::Error::other("connection refused")));
        assert!(!is_namespace_terminating(&io));
        assert!(!is_not_found(&io));
    }

    #[test]
    fn a_gone_object_is_not_found_and_nothing_else_is() {
        assert!(is_not_found(&plain(404, "NotFound")));
        assert!(
            ApiError::new("update Foo status", "ns", "a", plain(404, "NotFound")).is_not_found()
        );
        for (code, reason) in [(409, "Conflict"), (500, "InternalError"), (410, "Gone")] {
            let err = plain(code, reason);
            assert!(!is_not_found(&err), "{code}");
            assert!(!is_namespace_terminating(&err), "{code}");
        }
    }

    /// The same answer over the wire, as a client sees it: the cause survives kube's
    /// decoding of the JSON Status.
    #[tokio::test]
    async fn the_classifier_sees_the_cause_through_a_real_client() {
        use crate::testing::{FakeApi, namespace_terminating};
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{Api, PostParams};

        let api = FakeApi::new();
        api.fail_next_status(
            "create",
            "configmaps",
            namespace_terminating("ns", "configmaps", "web"),
        );
        api.fail_next("create", "configmaps", 403, "Forbidden");
        let configmaps: Api<ConfigMap> = Api::namespaced(api.client(), "ns");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("web".into());
        let Err(first) = configmaps.create(&PostParams::default(), &cm).await else {
            panic!("the scripted 403 was not answered");
        };
        assert!(is_namespace_terminating(&first), "{first}");
        let Err(second) = configmaps.create(&PostParams::default(), &cm).await else {
            panic!("the scripted 403 was not answered");
        };
        assert!(!is_namespace_terminating(&second), "{second}");
    }
}
