//! Why a MyWeb reconcile failed. Every variant means "retry with backoff"; a MyWeb that
//! is gone, and the expected states of a namespace being deleted (a create refused as
//! `NamespaceTerminating`, a 404 on the status write; [`controller::expected`]), are
//! not errors at all (see [`reconcile`](crate::reconcile)).

/// A failed reconcile of one MyWeb.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lister could not answer (a malformed key: a bug).
    #[error("reading the cache: {0}")]
    Cache(#[source] cache::Error),
    /// An owner reference to the MyWeb could not be built (it has no UID).
    #[error(transparent)]
    OwnerRef(controller::Error),
    /// An object with the MyWeb's name exists but is not controlled by this MyWeb:
    /// sample-controller's `ErrResourceExists`, for each of the three kinds. Reported
    /// as a Warning Event and a `Ready=False` condition, retried with backoff in case
    /// its owner lets go of it, never modified.
    #[error("{kind} {name:?} already exists and is not managed by MyWeb")]
    ResourceExists {
        /// The object's kind.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
    /// An API call failed; for a refused write (a node port already taken, say) the
    /// message is the API server's.
    #[error(transparent)]
    Api(#[from] controller::ApiError),
}

impl Error {
    /// The error as users read it in the Warning Event and the `Ready=False` message: for
    /// a refused write, the API server's own message (without kube's debug dump).
    pub fn user_message(&self) -> String {
        match self {
            Error::Api(err) => err.user_message(),
            other => other.to_string(),
        }
    }

    /// The `reason` of the `Ready=False` condition and of the Warning Event this error
    /// is reported with (CamelCase, as the API conventions ask).
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Cache(_) | Error::OwnerRef(_) => "InternalError",
            Error::ResourceExists { .. } => crate::ERR_RESOURCE_EXISTS,
            Error::Api(_) => crate::ERR_APPLY_FAILED,
        }
    }
}

/// `Result` with the MyWeb operator's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
