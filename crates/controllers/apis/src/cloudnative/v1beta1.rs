//! `cloudnative.tw/v1beta1`: the [`VirtualMachine`] kind, second version.
//!
//! The same machine as [`v1alpha1`](super::v1alpha1), asked for in a new shape:
//!
//! ```yaml
//! # v1alpha1 (the storage version)    # v1beta1
//! spec:                                spec:
//!   resource:                            compute:
//!     cpu: 1500m                           cpus: 2          # whole CPUs, an integer
//!     memory: 2Gi                          memory: 2Gi
//!     rootDisk: 10Gi                     rootDisk:
//!                                          size: 10Gi
//!                                          image: debian-13 # new in v1beta1
//! ```
//!
//! # What changed, and why
//!
//! * `spec.resource` is split by what it sizes: `compute` (CPUs and memory) and
//!   `rootDisk` (a disk, which can now say more than its size).
//! * `cpus` is an **integer**: the VM driver only ever gave whole CPUs (v1alpha1's
//!   `1500m` is rounded up to 2), so v1beta1 says what the machine gets.
//! * `rootDisk.image` is new: the image the root disk starts from, for a VM driver
//!   that installs one. v1alpha1 cannot say it (its drivers use their default).
//!
//! `status` is the same in both versions (the types are v1alpha1's).
//!
//! # One stored version, two served
//!
//! The API server stores every VirtualMachine as v1alpha1 (the CRD's storage
//! version) and converts on the fly: a v1beta1 read of a stored object, or a
//! v1beta1 write, goes through the conversion webhook (`/convert`, served by the
//! VirtualMachine controller), which converts through the hub, v1alpha1:
//! [`conversion`] has the two directions, as kubebuilder's `Hub` and
//! `Convertible`. Nothing is lost either way: what one version cannot hold
//! travels in an annotation of the other ([`CPU_ANNOTATION`],
//! [`ROOT_DISK_IMAGE_ANNOTATION`]).
//!
//! ```
//! use apis::cloudnative::{v1alpha1, v1beta1};
//! use apis::conversion::Convertible;
//!
//! let alpha = v1alpha1::VirtualMachine::new(
//!     "web",
//!     v1alpha1::VirtualMachineSpec { resource: v1alpha1::VirtualMachineResource::new("1500m", "2Gi", "10Gi") },
//! );
//! let beta = v1beta1::VirtualMachine::convert_from(&alpha).unwrap();
//! assert_eq!(beta.spec.compute.cpus, 2);
//! // "1500m" is kept for the way back.
//! let back: v1alpha1::VirtualMachine = beta.convert_to().unwrap();
//! assert_eq!(back, alpha);
//! ```

pub mod conversion;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::v1alpha1::{self, MEMORY_MESSAGE, MEMORY_RULE, ROOT_DISK_MESSAGE, ROOT_DISK_RULE};
pub use super::v1alpha1::{ResourceUsage, ServerStatus, VirtualMachinePhase, VirtualMachineStatus};
pub use conversion::{CPU_ANNOTATION, ROOT_DISK_IMAGE_ANNOTATION};

/// VirtualMachineSpec is the desired state of a VirtualMachine.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
// Several printcolumns share `type_ = "string"`; clippy mistakes that for a
// duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "cloudnative.tw",
    version = "v1beta1",
    kind = "VirtualMachine",
    plural = "virtualmachines",
    shortname = "vm",
    namespaced,
    status = "VirtualMachineStatus",
    derive = "PartialEq",
    doc = "VirtualMachine is a virtual machine with the CPUs and memory of spec.compute and the root disk of spec.rootDisk, created and observed by the VirtualMachine controller through a VM driver.",
    printcolumn(
        name = "Phase",
        type_ = "string",
        description = "Lifecycle phase",
        json_path = ".status.phase"
    ),
    printcolumn(
        name = "CPUs",
        type_ = "integer",
        description = "Requested CPUs",
        json_path = ".spec.compute.cpus"
    ),
    printcolumn(
        name = "Memory",
        type_ = "string",
        description = "Requested memory",
        json_path = ".spec.compute.memory"
    ),
    printcolumn(
        name = "State",
        type_ = "string",
        description = "Server state reported by the VM driver",
        json_path = ".status.server.state"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineSpec {
    /// The machine's CPUs and memory.
    pub compute: Compute,
    /// The machine's root disk.
    pub root_disk: RootDisk,
}

/// CPUs and memory.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Compute {
    /// Number of whole CPUs, at least 1.
    #[schemars(schema_with = "cpus_schema")]
    pub cpus: u32,
    /// Memory size, greater than 0 (e.g. 64Mi, 2Gi).
    #[schemars(schema_with = "memory_schema")]
    pub memory: Quantity,
}

/// The root disk.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootDisk {
    /// Disk size, greater than 0 (e.g. 1Gi, 10Gi).
    #[schemars(schema_with = "root_disk_schema")]
    pub size: Quantity,
    /// The image the disk starts from, for VM drivers that install one; omitted:
    /// the driver's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

impl VirtualMachineSpec {
    /// A spec from whole CPUs and quantity strings, e.g. `new(2, "4Gi", "20Gi")`,
    /// without an image.
    pub fn new(cpus: u32, memory: impl Into<String>, root_disk: impl Into<String>) -> Self {
        Self {
            compute: Compute {
                cpus,
                memory: Quantity(memory.into()),
            },
            root_disk: RootDisk {
                size: Quantity(root_disk.into()),
                image: None,
            },
        }
    }
}

/// An integer from 1 to `u32::MAX`, said with `minimum`/`maximum` rather than schemars'
/// `format: uint32`, which the API server does not know (every apply warned
/// `unrecognized format "uint32"`) and therefore does not enforce.
fn cpus_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "integer",
        "minimum": 1,
        "maximum": u32::MAX,
    })
}

fn memory_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    v1alpha1::quantity_schema(MEMORY_RULE, MEMORY_MESSAGE)
}

fn root_disk_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    v1alpha1::quantity_schema(ROOT_DISK_RULE, ROOT_DISK_MESSAGE)
}
