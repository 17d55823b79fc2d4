//! The driver interface: controller101's `pkg/driver` `Interface`, as a Rust trait.
//!
//! A controller never talks to a hypervisor directly. It asks a [`Driver`] four
//! questions, and every one of them is **idempotent**, because a level-triggered
//! controller repeats itself: a sync that failed half way (the process crashed, the
//! response was lost, the status update conflicted) runs again from the top with the
//! same key, and must converge instead of doing the work twice.
//!
//! | controller101 driver call | here                      | idempotent means                                           |
//! |---------------------------|---------------------------|------------------------------------------------------------|
//! | create server             | [`Driver::create_server`] | an existing server's id is returned; never a second server |
//! | delete server             | [`Driver::delete_server`] | deleting a missing server is `Ok(())`                      |
//! | does the server exist     | [`Driver::server_exists`] | a pure read                                                |
//! | server status             | [`Driver::server_status`] | a pure read; a missing server is [`DriverError::NotFound`] |
//!
//! The trait is object safe (`Arc<dyn Driver>`): methods return a boxed future, the
//! same pattern as `cache::ListerWatcher`, so a controller can hold "some driver" and
//! tests can swap in the [`FakeDriver`](crate::FakeDriver).

use std::fmt;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::error::DriverError;
use crate::name::validate_name;

/// Largest vCPU count a spec may ask for (QEMU's `pc` machine without x2APIC).
pub const MAX_CPUS: u32 = 255;

/// What a server should look like: controller101's create request.
///
/// The controller converts the Kubernetes quantities of a VirtualMachine (`cpu: 2`,
/// `memory: 64Mi`, `disk: 1Gi`) to plain numbers before it calls the driver, so this
/// crate has no Kubernetes dependency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSpec {
    /// The server's name: unique per driver, a safe path component (see
    /// [`validate_name`](crate::validate_name)).
    pub name: String,
    /// Number of virtual CPUs, `1..=255`.
    pub cpus: u32,
    /// Memory in bytes (QEMU gets whole MiB, rounded up), at least 1 MiB.
    pub memory_bytes: u64,
    /// Size of the root disk in bytes (rounded up to a 512-byte sector), at least 1.
    pub root_disk_bytes: u64,
}

impl ServerSpec {
    /// A spec; call [`validate`](Self::validate) (every driver does) to check it.
    pub fn new(
        name: impl Into<String>,
        cpus: u32,
        memory_bytes: u64,
        root_disk_bytes: u64,
    ) -> Self {
        Self {
            name: name.into(),
            cpus,
            memory_bytes,
            root_disk_bytes,
        }
    }

    /// Checks the name and the sizes; [`DriverError::InvalidName`] or
    /// [`DriverError::InvalidSpec`] says which rule was broken.
    pub fn validate(&self) -> Result<(), DriverError> {
        validate_name(&self.name)?;
        let invalid = |reason: String| DriverError::InvalidSpec {
            name: self.name.clone(),
            reason,
        };
        if self.cpus == 0 || self.cpus > MAX_CPUS {
            return Err(invalid(format!(
                "cpus must be 1..={MAX_CPUS}, got {}",
                self.cpus
            )));
        }
        if self.memory_bytes < 1 << 20 {
            return Err(invalid(format!(
                "memory_bytes must be at least 1 MiB, got {}",
                self.memory_bytes
            )));
        }
        if self.root_disk_bytes == 0 {
            return Err(invalid("root_disk_bytes must be positive".into()));
        }
        Ok(())
    }

    /// Memory in MiB, rounded up (what QEMU's `-m` takes).
    pub fn memory_mib(&self) -> u64 {
        self.memory_bytes.div_ceil(1 << 20)
    }
}

/// The stable identity of a server: the ID in controller101's create response.
///
/// For the QEMU driver it is a UUID written into the server's state directory and
/// given to QEMU with `-uuid`, so it survives restarts of both QEMU and the
/// controller. A controller stores it in the VirtualMachine's status.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ServerId(pub String);

impl ServerId {
    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The run state of a server.
///
/// QEMU's `query-status` knows about fifteen run states; a controller only needs to
/// know which family a state belongs to. The string form ([`as_str`](Self::as_str),
/// `Display`) is what a controller writes into the VirtualMachine's status.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ServerState {
    /// Not yet running: QEMU's `prelaunch`, `inmigrate`, `restore-vm`.
    Starting,
    /// Running guest code.
    Running,
    /// Stopped by someone (QMP `stop`, a debugger, a migration or snapshot in progress).
    Paused,
    /// The guest suspended itself (ACPI S3).
    Suspended,
    /// Not running: the guest powered off, or the process is gone.
    Shutdown,
    /// Stopped by an error: `internal-error`, `io-error`, `guest-panicked`, `watchdog`.
    Crashed,
    /// A state this crate does not know (a newer QEMU); the raw string is kept.
    Unknown(String),
}

impl ServerState {
    /// Maps a QMP `query-status` `status` string to a state.
    pub fn from_qemu_status(status: &str) -> Self {
        match status {
            "running" => Self::Running,
            "prelaunch" | "inmigrate" | "restore-vm" => Self::Starting,
            "paused" | "debug" | "save-vm" | "finish-migrate" | "postmigrate" | "colo" => {
                Self::Paused
            }
            "suspended" => Self::Suspended,
            "shutdown" => Self::Shutdown,
            "internal-error" | "io-error" | "guest-panicked" | "watchdog" => Self::Crashed,
            other => Self::Unknown(other.to_owned()),
        }
    }

    /// The string form: `"Running"`, `"Paused"`, ...; an unknown state is its raw
    /// QEMU string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Starting => "Starting",
            Self::Running => "Running",
            Self::Paused => "Paused",
            Self::Suspended => "Suspended",
            Self::Shutdown => "Shutdown",
            Self::Crashed => "Crashed",
            Self::Unknown(raw) => raw,
        }
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The observed state and usage of a server: controller101's status response.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    /// The run state.
    pub state: ServerState,
    /// CPU use as a percentage of the server's vCPUs (100 = every vCPU busy). The
    /// QEMU driver measures the whole QEMU process, so emulation overhead can push it
    /// above 100.
    pub cpu_percent: f64,
    /// Resident memory as a percentage of the requested memory. The QEMU driver counts
    /// the whole QEMU process (guest RAM actually touched plus QEMU itself), so a small
    /// VM can exceed 100.
    pub memory_percent: f64,
}

/// The four driver calls, for fault injection, call counters and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// [`Driver::create_server`].
    Create,
    /// [`Driver::delete_server`].
    Delete,
    /// [`Driver::server_exists`].
    Exists,
    /// [`Driver::server_status`].
    Status,
}

impl Operation {
    /// Every operation.
    pub const ALL: [Operation; 4] = [Self::Create, Self::Delete, Self::Exists, Self::Status];

    /// The method name: `"create_server"`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create_server",
            Self::Delete => "delete_server",
            Self::Exists => "server_exists",
            Self::Status => "server_status",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Creates, deletes and inspects servers: controller101's `driver.Interface`.
///
/// Every call is idempotent (see the [module docs](crate#idempotency)), so a
/// controller may repeat any call after any failure. Implementations must be safe to
/// call concurrently, including for the same name.
pub trait Driver: Send + Sync {
    /// Makes sure a server named `spec.name` exists and is running; returns its id.
    ///
    /// Idempotent: if the server already exists, its existing id is returned and no
    /// second server is made (an existing server is not resized when the spec
    /// differs). A server that exists but is not running is started again, same id.
    fn create_server<'a>(
        &'a self,
        spec: &'a ServerSpec,
    ) -> BoxFuture<'a, Result<ServerId, DriverError>>;

    /// Makes sure no server named `name` exists (its disk included).
    ///
    /// Idempotent: deleting a missing server is `Ok(())`.
    fn delete_server<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), DriverError>>;

    /// Whether a server named `name` exists (is defined), running or not.
    fn server_exists<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, DriverError>>;

    /// The state and usage of the server named `name`;
    /// [`DriverError::NotFound`] when there is none.
    fn server_status<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ServerStatus, DriverError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_validation_names_the_broken_rule() {
        let ok = ServerSpec::new("vm-1", 1, 64 << 20, 1 << 20);
        assert!(ok.validate().is_ok());
        let cases = [
            (
                ServerSpec {
                    cpus: 0,
                    ..ok.clone()
                },
                "cpus",
            ),
            (
                ServerSpec {
                    cpus: 256,
                    ..ok.clone()
                },
                "cpus",
            ),
            (
                ServerSpec {
                    memory_bytes: 1000,
                    ..ok.clone()
                },
                "memory_bytes",
            ),
            (
                ServerSpec {
                    root_disk_bytes: 0,
                    ..ok.clone()
                },
                "root_disk_bytes",
            ),
        ];
        for (spec, field) in cases {
            let err = spec.validate().unwrap_err();
            assert!(matches!(err, DriverError::InvalidSpec { .. }), "{err:?}");
            assert!(err.to_string().contains(field), "{err}");
        }
        let bad_name = ServerSpec {
            name: "../etc".into(),
            ..ok
        };
        assert!(matches!(
            bad_name.validate(),
            Err(DriverError::InvalidName { .. })
        ));
    }

    #[test]
    fn memory_mib_rounds_up() {
        let spec = |bytes| ServerSpec::new("a", 1, bytes, 1);
        assert_eq!(spec(64 << 20).memory_mib(), 64);
        assert_eq!(spec((64 << 20) + 1).memory_mib(), 65);
        assert_eq!(spec(1 << 20).memory_mib(), 1);
    }

    #[test]
    fn qemu_states_map_to_families() {
        assert_eq!(
            ServerState::from_qemu_status("running"),
            ServerState::Running
        );
        assert_eq!(ServerState::from_qemu_status("paused"), ServerState::Paused);
        assert_eq!(
            ServerState::from_qemu_status("prelaunch"),
            ServerState::Starting
        );
        assert_eq!(
            ServerState::from_qemu_status("guest-panicked"),
            ServerState::Crashed
        );
        assert_eq!(
            ServerState::from_qemu_status("shutdown"),
            ServerState::Shutdown
        );
        let unknown = ServerState::from_qemu_status("teleporting");
        assert_eq!(unknown, ServerState::Unknown("teleporting".into()));
        assert_eq!(unknown.to_string(), "teleporting");
        assert_eq!(ServerState::Running.to_string(), "Running");
    }
}
