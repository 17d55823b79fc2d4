//! The `operator.k8s-summit.org` API group: the Operator101 tutorial's MyWeb
//! operator, the textbook kubebuilder example.
//!
//! As with [`samplecontroller`](crate::samplecontroller), Go's `groupversion_info.go`
//! shrinks to the group name: the kinds carry their own group, version and kind.

pub mod v1;

/// The API group, kubebuilder's `GroupVersion.Group`.
pub const GROUP_NAME: &str = "operator.k8s-summit.org";
