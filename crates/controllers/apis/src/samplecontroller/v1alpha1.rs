//! `samplecontroller.k8s.io/v1alpha1`: the [`Foo`] kind, sample-controller's
//! `pkg/apis/samplecontroller/v1alpha1/types.go`.
//!
//! A Foo asks for a Deployment named `spec.deploymentName` running
//! `spec.replicas` copies of nginx; the Foo controller creates and scales that
//! Deployment and reports its available replicas in `status.availableReplicas`.
//!
//! # Differences from the Go types, and why
//!
//! * `replicas` is an `i32`, not Go's `*int32`. sample-controller dereferences
//!   the pointer without a nil check, so a Foo without `replicas` panics its
//!   worker. Here the CRD schema carries `default: 1`, so the **API server**
//!   fills in a missing value before the object is stored, and
//!   `minimum: 1` / `maximum: 10` make it reject out-of-range values with a
//!   422 naming the field. The controller can therefore never see a missing
//!   or absurd value (serde's default of 1 covers objects from before the
//!   default existed).
//! * `deploymentName` has no `minLength`: like sample-controller, the
//!   controller itself reports an empty name as a Warning Event, which is the
//!   behaviour learners compare against.
//! * sample-controller's later `taskCount` / `taskRuntime` / task status fields
//!   are not part of the classic example and are left out.
//!
//! # Generated items
//!
//! `#[derive(CustomResource)]` on [`FooSpec`] generates the [`Foo`] object
//! itself (`apiVersion`, `kind`, `metadata`, `spec`, `status`), its
//! [`kube::Resource`] impl (so `kube::Api<Foo>` works) and `Foo::crd()`, from
//! which [`foo_crd`] builds the CustomResourceDefinition that
//! `hack/update-crds.sh` writes to `deploy/crds/samplecontroller.k8s.io_foos.yaml`.
//!
//! ```
//! use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
//!
//! let foo = Foo::new("example-foo", FooSpec::new("example-foo-deploy", 2));
//! let json = serde_json::to_value(&foo).unwrap();
//! assert_eq!(json["apiVersion"], "samplecontroller.k8s.io/v1alpha1");
//! assert_eq!(json["spec"]["deploymentName"], "example-foo-deploy");
//! ```

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The annotation key that approves an API in a protected group.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Value of the approval annotation required for CRDs in a `*.k8s.io` group
/// ([KEP-2337](https://github.com/kubernetes/enhancements/blob/master/keps/sig-api-machinery/2337-k8s.io-group-protection/README.md)).
///
/// The API server refuses a CRD in a protected group without it; an
/// "unapproved" value is accepted and only sets the
/// `KubernetesAPIApprovalPolicyConformant` condition to false. This is the
/// value sample-controller's own CRD uses.
pub const API_APPROVED_ANNOTATION_VALUE: &str = "unapproved, experimental-only; please get an approval from Kubernetes API reviewers if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups";

/// Foo's CustomResourceDefinition as `deploy/crds` ships it: `Foo::crd()`
/// plus the [`API_APPROVED_ANNOTATION`].
///
/// Use this, not `Foo::crd()`, to install the CRD. The annotation is added here
/// rather than with `#[kube(annotation(...))]` because kube-derive also puts
/// that attribute's annotations on every object `Foo::new` builds.
pub fn foo_crd() -> CustomResourceDefinition {
    let mut crd = Foo::crd();
    crd.metadata.annotations.get_or_insert_default().insert(
        API_APPROVED_ANNOTATION.to_string(),
        API_APPROVED_ANNOTATION_VALUE.to_string(),
    );
    crd
}

/// The replica count of a Foo that does not say (the schema's `default`).
pub const DEFAULT_REPLICAS: i32 = 1;
/// The smallest replica count the API server accepts (the schema's `minimum`).
pub const MIN_REPLICAS: i32 = 1;
/// The largest replica count the API server accepts (the schema's `maximum`).
pub const MAX_REPLICAS: i32 = 10;

/// FooSpec is the spec for a Foo resource: which Deployment to run, and how
/// many replicas of it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
// Several printcolumns share `type_ = "string"`; clippy mistakes that for a
// duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    plural = "foos",
    namespaced,
    status = "FooStatus",
    derive = "PartialEq",
    doc = "Foo is a specification for a Foo resource: a Deployment of nginx named spec.deploymentName with spec.replicas replicas.",
    printcolumn(
        name = "Deployment",
        type_ = "string",
        description = "The Deployment this Foo owns",
        json_path = ".spec.deploymentName"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        description = "Requested replicas",
        json_path = ".spec.replicas"
    ),
    printcolumn(
        name = "Available",
        type_ = "integer",
        description = "Available replicas of the Deployment",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// Name of the Deployment to create and own (in the Foo's namespace).
    /// An empty name is accepted by the API server; the controller reports it
    /// with a Warning Event, as sample-controller does.
    pub deployment_name: String,

    /// Number of replicas of the Deployment, 1 to 10. The API server fills in
    /// 1 when it is omitted.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 1, max = 10))]
    pub replicas: i32,
}

impl FooSpec {
    /// A spec for `replicas` replicas of the Deployment `deployment_name`.
    pub fn new(deployment_name: impl Into<String>, replicas: i32) -> Self {
        Self {
            deployment_name: deployment_name.into(),
            replicas,
        }
    }
}

/// The serde (and schema) default of [`FooSpec::replicas`].
fn default_replicas() -> i32 {
    DEFAULT_REPLICAS
}

/// FooStatus is the status for a Foo resource, written by the controller
/// through the `status` subresource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// Available replicas of the owned Deployment, copied from its status.
    pub available_replicas: i32,
}
