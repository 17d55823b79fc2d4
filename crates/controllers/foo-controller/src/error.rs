//! Why a Foo sync failed. Every variant means "retry with backoff"; the permanent
//! problems (Foo gone, empty deploymentName) and the expected states of a namespace
//! being deleted (a create refused as `NamespaceTerminating`, a 404 on the status
//! write; [`controller::expected`]) are not errors at all (see [`sync`](crate::sync)).

/// A failed sync of one Foo.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The work-queue key is not `namespace/name` (a bug in an event handler).
    #[error("invalid work-queue key: {0}")]
    Key(#[source] cache::Error),
    /// An owner reference to the Foo could not be built.
    #[error(transparent)]
    Owner(controller::Error),
    /// A Deployment with the Foo's `deploymentName` exists but is not controlled by this
    /// Foo. sample-controller's `ErrResourceExists`: reported as a Warning Event and
    /// retried with backoff, in case the other owner lets go of it; never modified.
    #[error("Resource {name:?} already exists and is not managed by Foo")]
    ResourceExists {
        /// The Deployment's name.
        name: String,
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
}

/// `Result` with the Foo controller's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
