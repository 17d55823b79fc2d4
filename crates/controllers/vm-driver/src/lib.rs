//! The server driver of the VirtualMachine controller.
//!
//! The VirtualMachine controller (after
//! [controller101](https://github.com/cloud-native-taiwan/controller101)) turns
//! `VirtualMachine` objects into servers of a private cloud. It does not talk to the
//! cloud itself: it calls a **driver**, and this crate is that layer, with no
//! Kubernetes dependency at all (the controller converts `cpu: 1`, `memory: 64Mi`
//! to numbers before calling).
//!
//! | controller101 `pkg/driver`                          | here                                        |
//! |-------------------------------------------------------|---------------------------------------------|
//! | the driver `Interface` (create, delete, exists, status) | [`Driver`] (object safe: `Arc<dyn Driver>`) |
//! | the create request (name, CPU, memory)                | [`ServerSpec`] (plus a root disk size)      |
//! | the create response (the server's ID)                 | [`ServerId`]                                |
//! | the status response (state, CPU %, memory %)          | [`ServerStatus`], [`ServerState`]           |
//! | the OpenStack driver                                  | [`QemuDriver`]: local QEMU processes via QMP |
//! | (in memory: tests and demos, `--vm-driver fake`)      | [`FakeDriver`]: in memory, fault injection  |
//! | (shared by processes: the chaos soak, `--vm-driver file`) | [`FileDriver`]: files, fault injection  |
//!
//! Two differences from controller101: every call here is `async` (a controller
//! worker must not block a runtime thread on a hypervisor), and errors are typed
//! ([`DriverError`]) so a controller can tell "not found" and "invalid" from
//! "retry later".
//!
//! # Idempotency
//!
//! A controller is level-triggered: after *any* failure it runs the whole sync for
//! a key again. A worker may have crashed after the driver created a server but
//! before the id reached the object's status; a response may have been lost. So
//! every call may be repeated, and repeating it converges:
//!
//! * [`create_server`](Driver::create_server) of an existing server returns the
//!   **existing id**, never a second server (and starts it again if it is not
//!   running). A controller may simply call it on every sync.
//! * [`delete_server`](Driver::delete_server) of a missing server is `Ok(())`.
//! * [`server_exists`](Driver::server_exists) and
//!   [`server_status`](Driver::server_status) are reads; status of a missing server
//!   is [`DriverError::NotFound`] ([`DriverError::is_not_found`]).
//!
//! # Re-adoption
//!
//! A controller restart must not lose, duplicate or orphan servers. The
//! [`QemuDriver`] keeps all its knowledge in its state directory and runs VMs as
//! daemons outside the controller's process tree, so a new driver on the same
//! directory finds every server, verifies its process through `/proc` (never
//! trusting a bare pid), and can report on it, delete it, or restart it if it died.
//! Details in [`QemuDriver`]'s module docs.
//!
//! # Test helpers
//!
//! The `testing` module (process checks for tests that run real QEMUs) is not part of
//! the production API: it exists with the crate's `testing` feature, which tests enable
//! under `[dev-dependencies]`: `vm-driver = { workspace = true, features = ["testing"] }`.
//! [`FakeDriver`] and [`FileDriver`] are not behind it: `vm-controller --vm-driver fake`
//! (and `file`) select them at run time, so they are drivers a binary ships with.
//!
//! # Example
//!
//! A controller holds an `Arc<dyn Driver>`; tests give it a [`FakeDriver`]:
//!
//! ```
//! use std::sync::Arc;
//! use vm_driver::{Driver, DriverError, FakeDriver, Operation, ServerSpec, ServerState};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), DriverError> {
//! let fake = Arc::new(FakeDriver::new());
//! let driver: Arc<dyn Driver> = fake.clone();
//!
//! // One sync of a VirtualMachine "default.vm-1": 1 CPU, 64 MiB, a 1 GiB disk.
//! let spec = ServerSpec::new("default.vm-1", 1, 64 << 20, 1 << 30);
//! fake.fail_next(Operation::Create, 1); // the cloud is briefly unreachable
//! assert!(driver.create_server(&spec).await.is_err()); // -> requeue with backoff
//! let id = driver.create_server(&spec).await?; // the retry succeeds
//! assert_eq!(driver.create_server(&spec).await?, id); // and repeats are harmless
//!
//! let status = driver.server_status("default.vm-1").await?;
//! assert_eq!(status.state, ServerState::Running);
//! assert_eq!(status.state.to_string(), "Running");
//!
//! driver.delete_server("default.vm-1").await?;
//! driver.delete_server("default.vm-1").await?; // already gone: still Ok
//! assert!(!driver.server_exists("default.vm-1").await?);
//! assert!(driver.server_status("default.vm-1").await.unwrap_err().is_not_found());
//! assert_eq!(fake.servers_created(), 1);
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

mod driver;
mod error;
pub mod fake;
pub mod file;
mod name;
mod procfs;
pub mod qemu;
pub mod qmp;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use driver::{Driver, MAX_CPUS, Operation, ServerId, ServerSpec, ServerState, ServerStatus};
pub use error::DriverError;
pub use fake::{FakeDriver, FakeServer};
pub use file::{FileDriver, FileFaults, FileServer, JournalEntry};
pub use name::{MAX_NAME_LEN, validate_name};
pub use qemu::QemuDriver;
