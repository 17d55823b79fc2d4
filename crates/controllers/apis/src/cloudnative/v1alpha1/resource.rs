//! Turning a VirtualMachine's `spec.resource` quantities into the whole
//! numbers a VM driver takes.
//!
//! The API server already refuses malformed and out-of-range quantities (the
//! CEL rules in the CRD), so in a running cluster these conversions fail only
//! for values the API server cannot check: a quantity larger than the target
//! type, or an object stored before the rules existed. They still return
//! errors rather than panicking: a controller turns them into a `Failed`
//! phase and a Warning Event, not a crashed worker.

use super::VirtualMachineResource;
use crate::quantity::{self, QuantityError};

/// [`VirtualMachineResource`] in numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedResource {
    /// Whole CPUs, a fractional request rounded up (`1500m` -> 2).
    pub cpu_cores: u32,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Root disk in bytes.
    pub root_disk_bytes: u64,
}

/// A `spec.resource` field that could not be turned into a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {source}")]
pub struct ResourceError {
    /// The field's path, e.g. `spec.resource.cpu`.
    pub field: &'static str,
    /// What is wrong with its value.
    #[source]
    pub source: QuantityError,
}

impl VirtualMachineResource {
    /// All three quantities as numbers; the first bad field is the error.
    pub fn parse(&self) -> Result<ParsedResource, ResourceError> {
        Ok(ParsedResource {
            cpu_cores: self.cpu_cores()?,
            memory_bytes: self.memory_bytes()?,
            root_disk_bytes: self.root_disk_bytes()?,
        })
    }

    /// `cpu` as whole CPUs, rounded up.
    pub fn cpu_cores(&self) -> Result<u32, ResourceError> {
        quantity::cpu_cores(&self.cpu).map_err(|source| ResourceError {
            field: "spec.resource.cpu",
            source,
        })
    }

    /// `memory` in bytes, rounded up.
    pub fn memory_bytes(&self) -> Result<u64, ResourceError> {
        quantity::bytes(&self.memory).map_err(|source| ResourceError {
            field: "spec.resource.memory",
            source,
        })
    }

    /// `rootDisk` in bytes, rounded up.
    pub fn root_disk_bytes(&self) -> Result<u64, ResourceError> {
        quantity::bytes(&self.root_disk).map_err(|source| ResourceError {
            field: "spec.resource.rootDisk",
            source,
        })
    }
}
