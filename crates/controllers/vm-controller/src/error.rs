//! Why a VirtualMachine sync failed.
//!
//! Two kinds of failure, treated very differently by the [sync](crate::sync):
//!
//! * **transient** ([`Error::Driver`], [`Error::Api`]): the driver or the API server
//!   said no this time. The sync writes what it knows into the status (`Failed` or
//!   `Unknown` with a reason), records a Warning Event, and returns the error, so the
//!   key is retried with exponential backoff until the driver recovers.
//! * **permanent** ([`Error::InvalidSpec`], [`Error::ServerName`]): the object can
//!   never work as it is. The sync reports it (status `Failed`, Warning Event) and
//!   returns `Ok`: retrying would only burn API calls; the user's fix is an edit,
//!   which enqueues the object again.

use vm_driver::DriverError;

/// A failed sync of one VirtualMachine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The work-queue key is not `namespace/name` (a bug in an event handler).
    #[error("invalid work-queue key: {0}")]
    Key(#[source] cache::Error),
    /// No valid driver name can be derived from the object (it has no UID).
    #[error("no server name for VirtualMachine {name:?}: {reason}")]
    ServerName {
        /// The object's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// `spec.resource` cannot be turned into a server the driver accepts.
    #[error("invalid spec.resource: {0}")]
    InvalidSpec(String),
    /// A driver call failed.
    #[error("{operation} {server}: {source}")]
    Driver {
        /// The call, e.g. `create_server`.
        operation: &'static str,
        /// The server's name.
        server: String,
        /// The driver's error (boxed: it is large, and errors are the rare path).
        #[source]
        source: Box<DriverError>,
    },
    /// An API call failed (a 409 Conflict from a stale cache is the common, harmless
    /// case: the retry reads the newer object).
    #[error(transparent)]
    Api(#[from] controller::ApiError),
}

impl Error {
    /// Whether the API answered 409 Conflict (optimistic concurrency: our cached copy
    /// was stale).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Api(e) if e.is_conflict())
    }

    /// Whether retrying the same object cannot help (see the [module docs](self)).
    pub fn is_permanent(&self) -> bool {
        match self {
            Error::ServerName { .. } | Error::InvalidSpec(_) => true,
            Error::Driver { source, .. } => source.is_invalid(),
            Error::Key(_) | Error::Api(_) => false,
        }
    }
}

/// `Result` with the VirtualMachine controller's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
