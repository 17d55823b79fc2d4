//! The `cloudnative.tw` API group: controller101's `pkg/apis/cloudnative`
//! (github.com/cloud-native-taiwan/controller101).
//!
//! As with [`samplecontroller`](crate::samplecontroller), Go's `register.go`
//! shrinks to the group name: the kinds carry their own group, version and kind.

pub mod v1alpha1;

/// The API group, Go's `cloudnative.GroupName`.
pub const GROUP_NAME: &str = "cloudnative.tw";
