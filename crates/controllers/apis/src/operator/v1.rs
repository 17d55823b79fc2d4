//! `operator.k8s-summit.org/v1`: the [`MyWeb`] kind, the Operator101 tutorial's
//! `api/v1/myweb_types.go`.
//!
//! A MyWeb asks for a web page served by nginx: `spec.pageContentHtml` becomes the
//! `index.html` of a ConfigMap, a Deployment runs `spec.image` with that ConfigMap
//! mounted as nginx's html root, and a Service of type NodePort exposes it on
//! `spec.nodePortNumber` of every node. The MyWeb operator (crates/controllers/myweb-operator)
//! owns those three objects and reports a `Ready` condition.
//!
//! # Validation lives in the schema
//!
//! kubebuilder writes `// +kubebuilder:validation:Minimum=30000` markers above the Go
//! fields; here the same rules are `#[schemars(...)]` attributes, and
//! `hack/update-crds.sh` turns them into the CRD. The API server then refuses a MyWeb
//! with an empty `image` or a `nodePortNumber` outside 30000..=32767 (the default
//! NodePort range) with a 422 naming the field, so the operator never sees one.
//!
//! ```
//! use apis::operator::v1::{MyWeb, MyWebSpec};
//!
//! let web = MyWeb::new("sample", MyWebSpec::new("nginx:1.27", 30080, "<h1>Hello</h1>"));
//! let json = serde_json::to_value(&web).unwrap();
//! assert_eq!(json["apiVersion"], "operator.k8s-summit.org/v1");
//! assert_eq!(json["spec"]["nodePortNumber"], 30080);
//! assert_eq!(json["spec"]["pageContentHtml"], "<h1>Hello</h1>");
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The smallest `nodePortNumber` the API server accepts (the default
/// `--service-node-port-range` of kube-apiserver starts here).
pub const MIN_NODE_PORT: i32 = 30000;
/// The largest `nodePortNumber` the API server accepts.
pub const MAX_NODE_PORT: i32 = 32767;

/// The type of the condition that says whether the page is being served.
pub const CONDITION_READY: &str = "Ready";

/// MyWebSpec is the desired state of a MyWeb: which nginx image serves which page on
/// which node port.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
// Several printcolumns share `type_ = "string"`; clippy mistakes that for a
// duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "operator.k8s-summit.org",
    version = "v1",
    kind = "MyWeb",
    plural = "mywebs",
    shortname = "web",
    category = "all",
    namespaced,
    status = "MyWebStatus",
    derive = "PartialEq",
    doc = "MyWeb is a web page served by nginx: a ConfigMap holding spec.pageContentHtml, a Deployment running spec.image, and a NodePort Service on spec.nodePortNumber.",
    printcolumn(
        name = "Image",
        type_ = "string",
        description = "The web server image",
        json_path = ".spec.image"
    ),
    printcolumn(
        name = "NodePort",
        type_ = "integer",
        description = "The node port the page is served on",
        json_path = ".spec.nodePortNumber"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        description = "Whether the page is being served",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MyWebSpec {
    /// The container image serving the page, e.g. `nginx:1.27`. It must serve
    /// `/usr/share/nginx/html` (nginx's html root), where the page is mounted.
    #[schemars(length(min = 1))]
    pub image: String,

    /// The port on every node the page is served on, 30000 to 32767.
    #[schemars(range(min = 30000, max = 32767))]
    pub node_port_number: i32,

    /// The page (`index.html`); empty serves an empty page.
    #[serde(default)]
    pub page_content_html: String,
}

impl MyWebSpec {
    /// A spec serving `page_content_html` with `image` on `node_port_number`.
    pub fn new(
        image: impl Into<String>,
        node_port_number: i32,
        page_content_html: impl Into<String>,
    ) -> Self {
        Self {
            image: image.into(),
            node_port_number,
            page_content_html: page_content_html.into(),
        }
    }
}

/// MyWebStatus is what the operator last observed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MyWebStatus {
    /// The conditions of the MyWeb; `Ready` says whether the page is served as the
    /// spec says, and if not, why (reason and message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// The tutorial's flag: true once the ConfigMap, Deployment and Service match the
    /// spec and the Deployment has an available replica.
    #[serde(default)]
    pub completed: bool,

    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl MyWebStatus {
    /// The condition of type `type_`, if any.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

impl MyWeb {
    /// The `Ready` condition, if the operator has written one.
    pub fn ready_condition(&self) -> Option<&Condition> {
        self.status.as_ref()?.condition(CONDITION_READY)
    }
}
