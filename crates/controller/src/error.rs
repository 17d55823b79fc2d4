//! The crate's error type.

/// What can go wrong in the loop and the owner helpers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// [`Controller::run`](crate::Controller::run) was cancelled before the informer
    /// caches synced; no worker ran.
    #[error("controller {controller}: cancelled before the informer caches synced")]
    CachesNotSynced {
        /// The controller's name.
        controller: String,
    },
    /// An owner reference cannot be built: the owner lacks a field the reference needs
    /// (it was not read from the API server).
    #[error("cannot reference {kind} as an owner: it has no {field}")]
    MissingOwnerField {
        /// The owner's kind.
        kind: String,
        /// The missing field.
        field: &'static str,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
