//! `{{api_group}}/{{version}}`, kind `{{kind}}`: kubebuilder's `api/{{version}}/{{kind_snake}}_types.go`.
//!
//! The spec is what the user asks for, the status what the controller
//! (`crate::controller::{{kind_snake}}`) last observed. Replace the example fields with your
//! own (TODO(user)), then run `cargo run --bin manifests` to regenerate the CRD.
//!
//! Validation can live in two places: in the schema, as `#[schemars(...)]` attributes
//! (kubebuilder's `// +kubebuilder:validation:...` markers), which the API server
//! enforces with a 422 naming the field; or in the validating webhook
//! (`crate::webhook::{{kind_snake}}`), for rules a schema cannot express.
//!
//! ```
//! use {{crate_name}}::api::{{api_module}}::{{{kind}}, {{kind}}Spec};
//!
//! let {{kind_snake}} = {{kind}}::new("{{kind_lower}}-sample", {{kind}}Spec::default());
//! let json = serde_json::to_value(&{{kind_snake}}).unwrap();
//! assert_eq!(json["apiVersion"], "{{api_group}}/{{version}}");
//! assert_eq!(json["kind"], "{{kind}}");
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// TODO(user): add the fields users set. Keep them serde `camelCase` (the Kubernetes
// API conventions) and document each one with a `///` comment: it becomes the field's
// `description` in the CRD, which `kubectl explain` shows.
/// {{kind}}Spec is the desired state of a {{kind}}.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
// The printer columns share `type_ = "string"`; clippy mistakes that for a duplicated
// attribute.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "{{api_group}}",
    version = "{{version}}",
    kind = "{{kind}}",
    plural = "{{plural}}",
// kcr:if namespaced
    namespaced,
// kcr:end
    status = "{{kind}}Status",
    derive = "PartialEq",
    doc = "{{kind}} is the Schema for the {{plural}} API.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        description = "Whether the {{kind}} is ready",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct {{kind}}Spec {
    /// The title shown at the top of the {{kind_lower}}. The defaulting webhook sets it to
    /// the {{kind}}'s name when it is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,

    /// How many entries the {{kind_lower}} keeps, 1 to 1000. The defaulting webhook sets it
    /// to 100 when it is empty; the validating webhook refuses other values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_entries: Option<i32>,
}

// TODO(user): add what the controller observes. Conditions are the standard way to
// report it (`kubectl wait --for=condition=Ready {{kind_lower}}/<name>` reads them).
/// {{kind}}Status is the observed state of a {{kind}}.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct {{kind}}Status {
    /// The {{kind}}'s conditions, one per type (`Ready`), each with the generation
    /// it describes (`observedGeneration`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
