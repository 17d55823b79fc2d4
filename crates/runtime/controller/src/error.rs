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

/// An API call a sync handler made, and how it failed: the error variant both
/// controllers' sync errors carry, so "was it a 409?" is answered in one place.
///
/// A 409 Conflict is the common, harmless case under optimistic concurrency: our cached
/// copy was stale; returning the error retries the key through the queue, and the retry
/// reads the newer object.
#[derive(Debug, thiserror::Error)]
#[error("{action} {namespace}/{name}: {source}")]
pub struct ApiError {
    /// What was attempted, e.g. "create Deployment".
    pub action: &'static str,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The API error (boxed: it is large, and errors are the rare path).
    #[source]
    pub source: Box<kube::Error>,
}

impl ApiError {
    /// `action` on `namespace/name` failed with `source`.
    pub fn new(action: &'static str, namespace: &str, name: &str, source: kube::Error) -> Self {
        Self {
            action,
            namespace: namespace.to_string(),
            name: name.to_string(),
            source: Box::new(source),
        }
    }

    /// The HTTP status the API server answered with, if it answered.
    pub fn status_code(&self) -> Option<u16> {
        match &*self.source {
            kube::Error::Api(status) => Some(status.code),
            _ => None,
        }
    }

    /// "action namespace/name: message" with the API server's own message when it
    /// answered (kube's `Display` of an API error adds a debug dump of the whole
    /// Status), for Events and conditions that users read.
    ///
    /// ```
    /// use controller::ApiError;
    /// use kube::core::Status;
    ///
    /// let status = Status::failure("provided port is already allocated", "Invalid").with_code(422);
    /// let err = ApiError::new("create Service", "ns", "web", kube::Error::Api(Box::new(status)));
    /// assert_eq!(err.user_message(), "create Service ns/web: provided port is already allocated");
    /// ```
    pub fn user_message(&self) -> String {
        match &*self.source {
            kube::Error::Api(status) if !status.message.is_empty() => format!(
                "{} {}/{}: {}",
                self.action, self.namespace, self.name, status.message
            ),
            _ => self.to_string(),
        }
    }

    /// 409 Conflict: the object changed since we read it.
    pub fn is_conflict(&self) -> bool {
        self.status_code() == Some(409)
    }

    /// 404 Not Found: the object is gone ([`crate::expected::is_not_found`]). On the
    /// status write of an object deleted since the cache saw it, an expected state: the
    /// sync ends with `Ok` (see [`crate::expected`]).
    pub fn is_not_found(&self) -> bool {
        crate::expected::is_not_found(&self.source)
    }

    /// A create refused because the namespace is being deleted: 403 with the
    /// `NamespaceTerminating` cause ([`crate::expected::is_namespace_terminating`]). An
    /// expected state while a namespace is torn down, not a failure: the sync ends with
    /// `Ok`, without a Warning Event (see [`crate::expected`]).
    pub fn is_namespace_terminating(&self) -> bool {
        crate::expected::is_namespace_terminating(&self.source)
    }

    /// 422 Unprocessable Entity (`Invalid`): the server's validation refused the
    /// object. For an object a controller builds from a user's spec, that is the
    /// user's error to fix, not a reason to retry.
    pub fn is_invalid(&self) -> bool {
        self.status_code() == Some(422)
    }
}
