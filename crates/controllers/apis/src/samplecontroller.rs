//! The `samplecontroller.k8s.io` API group: kubernetes/sample-controller's
//! `pkg/apis/samplecontroller`.
//!
//! In Go the group is a package with a `register.go` (the group name and the
//! scheme registration) and one sub-package per version. Rust needs no scheme:
//! `kube` learns group, version and kind from the types themselves (the
//! [`kube::Resource`] impl that `#[derive(CustomResource)]` writes). What is
//! left is the group name and the versions.

pub mod v1alpha1;

/// The API group, Go's `samplecontroller.GroupName`.
pub const GROUP_NAME: &str = "samplecontroller.k8s.io";
