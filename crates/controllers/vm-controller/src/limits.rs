//! The sizes a VirtualMachine may ask for, checked in one place for the two paths a user
//! sees the answer on: the admission webhook's denial ([`crate::webhook`]) and, when the
//! webhook is not installed, the `InvalidSpec` status reason and Warning Event of the
//! sync ([`crate::server_spec`]).
//!
//! # Why the limit is named even for an absurd value
//!
//! The quantity code (`apis::quantity`) can only say that `cpu: "99999999999"` does
//! not fit its target type ("the maximum is 4294967295", `u32::MAX`): true, and no help,
//! because the limit that applies is [`MAX_CPUS`]. Every value above the limit, whether
//! it overflows the integer or not, is therefore reported the same way, in the API
//! server's `field.Invalid` wording: `spec.resource.cpu: Invalid value: "99999999999":
//! must be at most 64`. A value that is not a quantity at all, or is negative, keeps
//! the quantity code's message, which says what is wrong with it.

use apis::cloudnative::v1alpha1::{ParsedResource, ResourceError, VirtualMachineResource};
use apis::quantity::QuantityError;

/// The most CPUs a VirtualMachine may ask for.
pub const MAX_CPUS: u32 = 64;
/// The most memory a VirtualMachine may ask for: 256 GiB.
pub const MAX_MEMORY_BYTES: u64 = 256 << 30;
/// The largest root disk a VirtualMachine may ask for: 2 TiB.
pub const MAX_ROOT_DISK_BYTES: u64 = 2 << 40;

/// A `spec.resource` size outside what the controller gives. The `Display` is the
/// message users read (webhook denial, status reason, Event).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Not a quantity, or negative: the quantity code's own message.
    #[error(transparent)]
    Unreadable(#[from] ResourceError),
    /// Above the limit (including values too large for any integer type).
    #[error("{field}: Invalid value: {value:?}: must be at most {max}")]
    TooLarge {
        /// The field's path, e.g. `spec.resource.cpu`.
        field: &'static str,
        /// The value as written.
        value: String,
        /// The limit as users write it, e.g. `64` or `256Gi`.
        max: &'static str,
    },
    /// Zero (or, for CPUs, less than one after rounding up: only zero).
    #[error("{field}: Invalid value: {value:?}: must be {min}")]
    TooSmall {
        /// The field's path.
        field: &'static str,
        /// The value as written.
        value: String,
        /// What it must be instead, e.g. `at least 1 CPU`.
        min: &'static str,
    },
}

/// One size field: its path, its value, its limit as a number and as written.
struct Field<'a> {
    path: &'static str,
    value: &'a str,
    max: u64,
    shown: &'static str,
    min: &'static str,
}

impl Field<'_> {
    /// `parsed` (the field as a number) checked against the limits; an overflow of the
    /// number is "too large" like any other value above the limit.
    fn check(&self, parsed: Result<u64, ResourceError>) -> Result<u64, SizeError> {
        let too_large = || SizeError::TooLarge {
            field: self.path,
            value: self.value.to_string(),
            max: self.shown,
        };
        match parsed {
            Ok(0) => Err(SizeError::TooSmall {
                field: self.path,
                value: self.value.to_string(),
                min: self.min,
            }),
            Ok(n) if n > self.max => Err(too_large()),
            Ok(n) => Ok(n),
            Err(ResourceError {
                source: QuantityError::Overflow { .. },
                ..
            }) => Err(too_large()),
            Err(err) => Err(SizeError::Unreadable(err)),
        }
    }
}

/// `resource` as numbers, each within its limit (at least 1 CPU, more than 0 bytes, at
/// most [`MAX_CPUS`], [`MAX_MEMORY_BYTES`], [`MAX_ROOT_DISK_BYTES`]); the first bad
/// field (cpu, memory, rootDisk) is the error.
///
/// ```
/// use apis::cloudnative::v1alpha1::VirtualMachineResource;
/// use vm_controller::limits::checked;
///
/// let err = checked(&VirtualMachineResource::new("99999999999", "1Gi", "1Gi")).unwrap_err();
/// assert_eq!(err.to_string(), r#"spec.resource.cpu: Invalid value: "99999999999": must be at most 64"#);
/// assert_eq!(checked(&VirtualMachineResource::new("1500m", "1Gi", "1Gi")).unwrap().cpu_cores, 2);
/// ```
pub fn checked(resource: &VirtualMachineResource) -> Result<ParsedResource, SizeError> {
    let cpu = Field {
        path: "spec.resource.cpu",
        value: &resource.cpu.0,
        max: u64::from(MAX_CPUS),
        shown: "64",
        min: "at least 1 CPU",
    };
    let cpu_cores = cpu.check(resource.cpu_cores().map(u64::from))?;
    let memory = Field {
        path: "spec.resource.memory",
        value: &resource.memory.0,
        max: MAX_MEMORY_BYTES,
        shown: "256Gi",
        min: "greater than 0",
    };
    let memory_bytes = memory.check(resource.memory_bytes())?;
    let root_disk = Field {
        path: "spec.resource.rootDisk",
        value: &resource.root_disk.0,
        max: MAX_ROOT_DISK_BYTES,
        shown: "2Ti",
        min: "greater than 0",
    };
    let root_disk_bytes = root_disk.check(resource.root_disk_bytes())?;
    Ok(ParsedResource {
        // Within MAX_CPUS, so within u32.
        cpu_cores: u32::try_from(cpu_cores).unwrap_or(MAX_CPUS),
        memory_bytes,
        root_disk_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(cpu: &str, memory: &str, disk: &str) -> String {
        checked(&VirtualMachineResource::new(cpu, memory, disk))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_shown_limits_are_the_limits() {
        assert_eq!(MAX_CPUS.to_string(), "64");
        assert_eq!(MAX_MEMORY_BYTES, 256 * 1024 * 1024 * 1024);
        assert_eq!(MAX_ROOT_DISK_BYTES, 2 * 1024 * 1024 * 1024 * 1024);
    }

    #[test]
    fn a_cpu_count_too_large_for_any_integer_names_the_real_limit() {
        // Larger than u32 (the quantity code's target type) and than u64.
        for cpu in [
            "99999999999",
            "4294967296",
            "1e30",
            "99999999999999999999999",
        ] {
            assert_eq!(
                message(cpu, "1Gi", "1Gi"),
                format!("spec.resource.cpu: Invalid value: {cpu:?}: must be at most 64"),
            );
        }
    }

    #[test]
    fn one_cpu_over_the_limit_is_refused_and_the_limit_is_accepted() {
        assert_eq!(
            message("65", "1Gi", "1Gi"),
            r#"spec.resource.cpu: Invalid value: "65": must be at most 64"#
        );
        // 64.001 CPUs round up to 65.
        assert!(message("64001m", "1Gi", "1Gi").ends_with("must be at most 64"));
        let parsed = checked(&VirtualMachineResource::new("64", "256Gi", "2Ti")).unwrap();
        assert_eq!(
            parsed,
            ParsedResource {
                cpu_cores: 64,
                memory_bytes: MAX_MEMORY_BYTES,
                root_disk_bytes: MAX_ROOT_DISK_BYTES,
            }
        );
    }

    #[test]
    fn memory_and_disk_name_their_limits_even_when_they_overflow() {
        assert_eq!(
            message("1", "257Gi", "1Gi"),
            r#"spec.resource.memory: Invalid value: "257Gi": must be at most 256Gi"#
        );
        assert_eq!(
            message("1", "1Gi", "99999999Ei"),
            r#"spec.resource.rootDisk: Invalid value: "99999999Ei": must be at most 2Ti"#
        );
    }

    #[test]
    fn zero_and_unreadable_values_say_what_is_wrong() {
        assert_eq!(
            message("0", "1Gi", "1Gi"),
            r#"spec.resource.cpu: Invalid value: "0": must be at least 1 CPU"#
        );
        assert_eq!(
            message("1", "0", "1Gi"),
            r#"spec.resource.memory: Invalid value: "0": must be greater than 0"#
        );
        let unreadable = message("two", "1Gi", "1Gi");
        assert!(
            unreadable.starts_with("spec.resource.cpu: "),
            "{unreadable}"
        );
        assert!(
            unreadable.contains("not a Kubernetes quantity"),
            "{unreadable}"
        );
        assert!(message("1", "-1Gi", "1Gi").contains("negative"));
    }
}
