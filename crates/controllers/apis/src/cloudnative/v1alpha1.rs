//! `cloudnative.tw/v1alpha1`: the [`VirtualMachine`] kind, controller101's
//! `pkg/apis/cloudnative/v1alpha1/types.go`.
//!
//! A VirtualMachine asks for a machine with `spec.resource.cpu` CPUs,
//! `spec.resource.memory` of memory and a `spec.resource.rootDisk` root disk.
//! The VirtualMachine controller creates it through a VM driver and reports
//! the driver's view in `status` (phase, server id and state, usage).
//!
//! # Differences from the Go types, and why
//!
//! * `spec.resource` is a struct with three required fields instead of a
//!   `corev1.ResourceList` map: a map accepts any key and misses none, so a
//!   typo (`memroy`) or a missing disk would only surface in the controller.
//! * The sizes are checked by the **API server**, with CEL rules from the
//!   Kubernetes quantity library (`isQuantity`, `quantity`, `compareTo`,
//!   `isGreaterThan`; Kubernetes 1.29+): `cpu >= 1`, `memory > 0`,
//!   `rootDisk > 0`. A bad VirtualMachine is refused with a 422 naming the
//!   field and saying what is expected, instead of being stored and failing
//!   later. The fields are int-or-string (`cpu: 2` and `cpu: "2"` are both
//!   quantities), so every rule first turns `self` into a string.
//! * Go's `spec.action` is gone: a level-triggered controller converges on
//!   the spec; it does not take commands.
//! * `status.phase` is an enum of what the controller really reports
//!   (`Creating`, `Active`, `Failed`, `Terminating`, `Unknown`), and
//!   `status.server` gained the driver's server `id`.
//!
//! Use [`VirtualMachineResource::parse`] to turn the quantities into whole
//! CPUs and bytes.
//!
//! ```
//! use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
//!
//! let vm = VirtualMachine::new(
//!     "test-vm",
//!     VirtualMachineSpec { resource: VirtualMachineResource::new("1500m", "64Mi", "1Gi") },
//! );
//! let parsed = vm.spec.resource.parse().unwrap();
//! assert_eq!(parsed.cpu_cores, 2); // rounded up
//! assert_eq!(parsed.memory_bytes, 64 * 1024 * 1024);
//! ```

mod resource;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use resource::{ParsedResource, ResourceError};

/// The CEL rule on `spec.resource.cpu`.
///
/// The upper bound is v1beta1's: `compute.cpus` is a `uint32`, and a v1alpha1 object
/// must convert to v1beta1 (the API server converts on every read through v1beta1, the
/// preferred version: `kubectl get vm` of a namespace fails for all of it on one object
/// that cannot). Fractions round up, so 4294967295 is the largest quantity that fits.
pub const CPU_RULE: &str = "isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('1')) >= 0 && quantity(string(self)).compareTo(quantity('4294967295')) <= 0";
/// The message of [`CPU_RULE`].
pub const CPU_MESSAGE: &str =
    "cpu must be a quantity from 1 to 4294967295 CPUs, such as 1, 2 or 1500m (fractions round up)";
/// The CEL rule on `spec.resource.memory`.
pub const MEMORY_RULE: &str =
    "isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))";
/// The message of [`MEMORY_RULE`].
pub const MEMORY_MESSAGE: &str = "memory must be a quantity greater than 0, such as 64Mi or 2Gi";
/// The CEL rule on `spec.resource.rootDisk`.
pub const ROOT_DISK_RULE: &str =
    "isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))";
/// The message of [`ROOT_DISK_RULE`].
pub const ROOT_DISK_MESSAGE: &str =
    "rootDisk must be a quantity greater than 0, such as 1Gi or 10Gi";

/// VirtualMachineSpec is the desired state of a VirtualMachine.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
// Several printcolumns share `type_ = "string"`; clippy mistakes that for a
// duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "cloudnative.tw",
    version = "v1alpha1",
    kind = "VirtualMachine",
    plural = "virtualmachines",
    shortname = "vm",
    namespaced,
    status = "VirtualMachineStatus",
    derive = "PartialEq",
    doc = "VirtualMachine is a virtual machine with the CPUs, memory and root disk of spec.resource, created and observed by the VirtualMachine controller through a VM driver.",
    printcolumn(
        name = "Phase",
        type_ = "string",
        description = "Lifecycle phase",
        json_path = ".status.phase"
    ),
    printcolumn(
        name = "CPU",
        type_ = "string",
        description = "Requested CPUs",
        json_path = ".spec.resource.cpu"
    ),
    printcolumn(
        name = "Memory",
        type_ = "string",
        description = "Requested memory",
        json_path = ".spec.resource.memory"
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
    /// The size of the machine.
    pub resource: VirtualMachineResource,
}

/// The size of a virtual machine, as Kubernetes quantities.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineResource {
    /// Number of CPUs, at least 1; a fraction such as 1500m is rounded up to whole CPUs.
    #[schemars(schema_with = "cpu_schema")]
    pub cpu: Quantity,
    /// Memory size, greater than 0 (e.g. 64Mi, 2Gi).
    #[schemars(schema_with = "memory_schema")]
    pub memory: Quantity,
    /// Root disk size, greater than 0 (e.g. 1Gi, 10Gi).
    #[schemars(schema_with = "root_disk_schema")]
    pub root_disk: Quantity,
}

impl VirtualMachineResource {
    /// A resource from quantity strings, e.g. `new("2", "4Gi", "20Gi")`.
    pub fn new(
        cpu: impl Into<String>,
        memory: impl Into<String>,
        root_disk: impl Into<String>,
    ) -> Self {
        Self {
            cpu: Quantity(cpu.into()),
            memory: Quantity(memory.into()),
            root_disk: Quantity(root_disk.into()),
        }
    }
}

/// VirtualMachineStatus is the observed state of a VirtualMachine, written by
/// the controller through the `status` subresource.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineStatus {
    /// Where the machine is in its lifecycle.
    pub phase: VirtualMachinePhase,
    /// Why the machine is in this phase (set for `Failed` and `Unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The server as the VM driver reports it, once it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerStatus>,
    /// When the controller last wrote this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// The lifecycle phase of a VirtualMachine.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum VirtualMachinePhase {
    /// The controller asked the driver for the server; it is not running yet.
    Creating,
    /// The server exists and runs.
    Active,
    /// Creating or running the server failed; `reason` says why.
    Failed,
    /// The VirtualMachine is being deleted and the server torn down.
    Terminating,
    /// The driver cannot tell (e.g. it is unreachable); `reason` says why.
    Unknown,
}

/// A server as the VM driver reports it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The driver's id of the server.
    pub id: String,
    /// The driver's state of the server (e.g. running, stopped).
    pub state: String,
    /// Current resource usage.
    pub usage: ResourceUsage,
}

/// Resource usage of a server, in percent of what it was given.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    /// CPU usage in percent of all its CPUs (0-100).
    pub cpu: f64,
    /// Memory usage in percent of its memory (0-100).
    pub memory: f64,
}

/// The schema of a quantity field (int-or-string, like apimachinery's own
/// Quantity schema) with one CEL rule. The description is left to the field's
/// doc comment; k8s-openapi's long generic Quantity description is not repeated
/// in every field.
pub(crate) fn quantity_schema(rule: &str, message: &str) -> schemars::Schema {
    schemars::json_schema!({
        "x-kubernetes-int-or-string": true,
        "x-kubernetes-validations": [{ "rule": rule, "message": message }],
    })
}

fn cpu_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    quantity_schema(CPU_RULE, CPU_MESSAGE)
}

fn memory_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    quantity_schema(MEMORY_RULE, MEMORY_MESSAGE)
}

fn root_disk_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    quantity_schema(ROOT_DISK_RULE, ROOT_DISK_MESSAGE)
}
