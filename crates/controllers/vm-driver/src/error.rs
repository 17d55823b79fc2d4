//! The errors of every driver.
//!
//! A controller mostly needs to tell three things apart: "there is no such server"
//! ([`DriverError::is_not_found`], like client-go's `errors.IsNotFound`), "the request
//! itself is wrong and retrying will not help" ([`DriverError::is_invalid`]: record
//! an event, do not requeue with backoff forever), and everything else (retry with
//! backoff). The variants carry enough detail for a useful event or log line.

use std::io;
use std::path::PathBuf;

use crate::driver::Operation;
use crate::qmp::QmpError;

/// What went wrong in a driver call.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// No server has this name (only [`server_status`](crate::Driver::server_status)
    /// returns it: delete and exists treat a missing server as a normal answer).
    #[error("server {name:?} not found")]
    NotFound {
        /// The name asked for.
        name: String,
    },

    /// The name is not a safe path component (see [`validate_name`](crate::validate_name)).
    #[error("invalid server name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },

    /// The spec asks for something impossible (no CPUs, no memory, ...).
    #[error("invalid spec for server {name:?}: {reason}")]
    InvalidSpec {
        /// The server's name.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },

    /// A helper process (`qemu-img`, `qemu-system-x86_64`) could not be started, failed,
    /// or a QEMU process did not behave (did not start, would not die).
    #[error("{program}: {detail}")]
    Process {
        /// The program, e.g. `qemu-system-x86_64`.
        program: String,
        /// What happened, with the tail of its log where there is one.
        detail: String,
    },

    /// Talking to QEMU's QMP socket failed.
    #[error("server {name:?}: {source}")]
    Qmp {
        /// The server's name.
        name: String,
        /// The QMP failure.
        #[source]
        source: QmpError,
    },

    /// Reading or writing the driver's state directory failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done, e.g. `"creating directory"`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },

    /// A server's persisted state cannot be understood (e.g. a truncated
    /// `server.json`). Deleting the server cleans it up.
    #[error("state of server {name:?} is corrupt: {detail}")]
    CorruptState {
        /// The server's name.
        name: String,
        /// What is wrong.
        detail: String,
    },

    /// A failure injected by [`FakeDriver`](crate::FakeDriver) for a test.
    #[error("injected fault in {operation}")]
    Injected {
        /// The call that was made to fail.
        operation: Operation,
    },
}

impl DriverError {
    /// Whether this is [`DriverError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// Whether the request is invalid ([`InvalidName`](Self::InvalidName) or
    /// [`InvalidSpec`](Self::InvalidSpec)): retrying the same request cannot succeed.
    pub fn is_invalid(&self) -> bool {
        matches!(self, Self::InvalidName { .. } | Self::InvalidSpec { .. })
    }

    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
