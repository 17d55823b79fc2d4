//! The errors of this crate.

use std::io;

/// What went wrong while setting up or running the metrics and health servers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bind address (`--metrics-bind-address`, `--health-probe-bind-address`) does not
    /// parse.
    #[error(
        "invalid bind address {address:?}: {reason} (expected \":8080\", \"host:port\" or \"0\" to disable)"
    )]
    InvalidBindAddress {
        /// The value given.
        address: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The server could not listen on its address (in use, no permission, unknown host).
    #[error("cannot serve {server} on {address}: {source}")]
    Bind {
        /// Which server: `"metrics"` or `"health probes"`.
        server: &'static str,
        /// The address as given.
        address: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A health or readiness check with this name is already registered.
    #[error("a check named {name:?} is already registered")]
    DuplicateCheck {
        /// The name.
        name: String,
    },
    /// A check name is empty or contains `/` (it becomes a URL path segment).
    #[error("invalid check name {name:?}: must be non-empty and must not contain '/'")]
    InvalidCheckName {
        /// The name.
        name: String,
    },
    /// The metrics server's certificate could not be loaded or generated
    /// (`--metrics-cert-path`).
    #[error("metrics server certificate: {0}")]
    Certificate(#[from] serving::certs::CertError),
    /// Encoding the metrics as text failed.
    #[error("encoding metrics: {0}")]
    Encode(#[from] std::fmt::Error),
}

/// This crate's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
