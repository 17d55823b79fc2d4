//! The crate's error type.

/// Errors from the cache: bad keys and selectors, missing indexes, objects that are
/// not in the cache, and failures talking to the API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A lister lookup found nothing: client-go's `errors.NewNotFound`, which callers
    /// test with `errors.IsNotFound`. Test for it with [`Error::is_not_found`].
    #[error("{resource} \"{name}\" not found")]
    NotFound {
        /// The resource (plural, with group when it has one), e.g. `foos.samplecontroller.k8s.io`.
        resource: String,
        /// The object's name (`namespace/name` for namespaced lookups by key).
        name: String,
    },
    /// A key that is not `name` or `namespace/name`.
    #[error("unexpected key format: {key:?} (want \"name\" or \"namespace/name\")")]
    InvalidKey {
        /// The offending key.
        key: String,
    },
    /// An object without `metadata.name`, which cannot be keyed.
    #[error("object has no metadata.name, so it has no key")]
    MissingName,
    /// `by_index` and friends asked for an index that was never added.
    #[error("index with name {0:?} does not exist")]
    IndexNotFound(String),
    /// An index function was added twice under one name.
    #[error("indexer conflict: {0:?} already exists")]
    IndexerConflict(String),
    /// A label selector that does not parse.
    #[error("invalid label selector {selector:?}: {reason}")]
    InvalidSelector {
        /// The selector as given.
        selector: String,
        /// What is wrong with it, and where.
        reason: String,
    },
    /// A setting that must be made before the informer starts was made after.
    #[error("{0}: the informer has already started")]
    AlreadyStarted(&'static str),
    /// The API server or the connection to it failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

impl Error {
    /// Whether this is a [`Error::NotFound`]: client-go's `errors.IsNotFound`.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
