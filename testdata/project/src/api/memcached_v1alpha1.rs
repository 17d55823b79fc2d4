//! `cache.my.domain/v1alpha1`, kind `Memcached`: kubebuilder's deploy-image plugin's
//! `api/v1alpha1/memcached_types.go`.
//!
//! A Memcached asks for `spec.size` replicas of the image `memcached:1.6-alpine`
//! listening on `spec.containerPort`; the controller (`crate::controller::memcached`)
//! runs them as a Deployment it owns and reports a `Ready` condition.
//!
//! ```
//! use guestbook::api::memcached_v1alpha1::Memcached;
//!
//! let memcached: Memcached = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "cache.my.domain/v1alpha1",
//!     "kind": "Memcached",
//!     "metadata": {"name": "memcached-sample"},
//!     "spec": {"size": 2},
//! }))
//! .unwrap();
//! assert_eq!(memcached.spec.size, 2);
//! assert_eq!(memcached.spec.container_port, 11211);
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The port the image listens on when `spec.containerPort` is not set
/// (`kcr create api ... --image-container-port 11211`).
pub const DEFAULT_CONTAINER_PORT: i32 = 11211;

// TODO(user): add the fields users set. Document each one with a `///` comment: it
// becomes the field's `description` in the CRD, which `kubectl explain` shows.
/// MemcachedSpec is the desired state of a Memcached.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
// The printer columns share `type_ = "string"`; clippy mistakes that for a duplicated
// attribute.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "cache.my.domain",
    version = "v1alpha1",
    kind = "Memcached",
    plural = "memcacheds",
    namespaced,
    status = "MemcachedStatus",
    derive = "PartialEq",
    doc = "Memcached is the Schema for the memcacheds API.",
    printcolumn(
        name = "Size",
        type_ = "integer",
        description = "How many memcached pods are asked for",
        json_path = ".spec.size"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        description = "Whether every memcached pod is available",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// How many pods of the image to run, 0 or more.
    // The schema says 0 or more (kubebuilder's `+kubebuilder:validation:Minimum=0`), so
    // `kubectl apply` refuses a negative size at once. Without it the API server stored
    // one and the controller could only complain (`Ready=False`, reason `InvalidSpec`, a
    // Warning Event): `kcr sieve`'s complaints oracle found that (docs/reliability.md,
    // finding 18). The controller still checks, for objects stored before this rule.
    #[schemars(range(min = 0))]
    pub size: i32,

    /// The port the image listens on in its container.
    #[serde(default = "default_container_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: i32,
}

fn default_container_port() -> i32 {
    DEFAULT_CONTAINER_PORT
}

/// MemcachedStatus is the observed state of a Memcached.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// The Memcached's conditions, one per type (`Ready`), each with the generation
    /// it describes (`observedGeneration`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
