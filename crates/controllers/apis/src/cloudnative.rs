//! The `cloudnative.tw` API group: controller101's `pkg/apis/cloudnative`
//! (github.com/cloud-native-taiwan/controller101).
//!
//! As with [`samplecontroller`](crate::samplecontroller), Go's `register.go`
//! shrinks to the group name: the kinds carry their own group, version and kind.
//!
//! VirtualMachine is served in two versions: [`v1alpha1`] (controller101's shape,
//! the storage version and the conversion hub, what the controller reconciles)
//! and [`v1beta1`] (a new shape of the same machine). The API server converts
//! between them through the VirtualMachine controller's conversion webhook; the
//! conversion itself is plain Rust in [`v1beta1::conversion`].

pub mod v1alpha1;
pub mod v1beta1;

/// The API group, Go's `cloudnative.GroupName`.
pub const GROUP_NAME: &str = "cloudnative.tw";
