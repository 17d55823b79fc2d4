//! `webapp.my.domain/v1`, kind `Guestbook`: kubebuilder's `api/v1/guestbook_types.go`.
//!
//! The spec is what the user asks for, the status what the controller
//! (`crate::controller::guestbook`) last observed. Replace the example fields with your
//! own (TODO(user)), then run `cargo run --bin manifests` to regenerate the CRD.
//!
//! Validation can live in two places: in the schema, as `#[schemars(...)]` attributes
//! (kubebuilder's `// +kubebuilder:validation:...` markers), which the API server
//! enforces with a 422 naming the field; or in the validating webhook
//! (`crate::webhook::guestbook`), for rules a schema cannot express.
//!
//! ```
//! use guestbook::api::guestbook_v1::{Guestbook, GuestbookSpec};
//!
//! let guestbook = Guestbook::new("guestbook-sample", GuestbookSpec::default());
//! let json = serde_json::to_value(&guestbook).unwrap();
//! assert_eq!(json["apiVersion"], "webapp.my.domain/v1");
//! assert_eq!(json["kind"], "Guestbook");
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// TODO(user): add the fields users set. Keep them serde `camelCase` (the Kubernetes
// API conventions) and document each one with a `///` comment: it becomes the field's
// `description` in the CRD, which `kubectl explain` shows.
/// GuestbookSpec is the desired state of a Guestbook.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
// The printer columns share `type_ = "string"`; clippy mistakes that for a duplicated
// attribute.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "webapp.my.domain",
    version = "v1",
    kind = "Guestbook",
    plural = "guestbooks",
    namespaced,
    status = "GuestbookStatus",
    derive = "PartialEq",
    doc = "Guestbook is the Schema for the guestbooks API.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        description = "Whether the Guestbook is ready",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct GuestbookSpec {
    /// The title shown at the top of the guestbook. The defaulting webhook sets it to
    /// the Guestbook's name when it is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,

    /// How many entries the guestbook keeps, 1 to 1000. The defaulting webhook sets it
    /// to 100 when it is empty; the validating webhook refuses other values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_entries: Option<i32>,
}

// TODO(user): add what the controller observes. Conditions are the standard way to
// report it (`kubectl wait --for=condition=Ready guestbook/<name>` reads them).
/// GuestbookStatus is the observed state of a Guestbook.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuestbookStatus {
    /// The Guestbook's conditions, one per type (`Ready`), each with the generation
    /// it describes (`observedGeneration`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
