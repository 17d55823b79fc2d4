//! The errors of this crate: setting the server up ([`Error`]), reading an HTTP body as an
//! `AdmissionReview` ([`ReviewError`]) and decoding the object under review
//! ([`DecodeError`]).

use std::io;
use std::path::PathBuf;

/// What went wrong while setting up or starting the webhook server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server could not listen on its address (in use, no permission, unknown host).
    #[error("cannot serve webhooks on {address}: {source}")]
    Bind {
        /// The address as given.
        address: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The certificate or key file could not be read.
    #[error("cannot read {path}: {source}")]
    ReadCertificate {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The files were read but do not hold a usable certificate chain and matching key.
    #[error("invalid serving certificate ({cert}, {key}): {reason}")]
    InvalidCertificate {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What is wrong with them.
        reason: String,
    },
    /// rustls refused the TLS configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// Two webhooks were registered at the same path (controller-runtime panics here).
    #[error("a webhook is already registered at {path}")]
    DuplicatePath {
        /// The path.
        path: String,
    },
    /// A path that cannot be served: empty, not starting with `/`, or with a query.
    #[error("invalid webhook path {path:?}: it must start with '/' and contain no '?' or '#'")]
    InvalidPath {
        /// The path.
        path: String,
    },
}

/// This crate's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an HTTP request body is not an `admission.k8s.io/v1` `AdmissionReview` with a
/// request. The server answers `400 Bad Request` with this message.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The body is empty.
    #[error("request body is empty")]
    Empty,
    /// The body is not JSON.
    #[error("the request body is not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// JSON, but not an `admission.k8s.io/v1` `AdmissionReview`.
    #[error(
        "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion {api_version:?} kind {kind:?}"
    )]
    NotAReview {
        /// The body's `apiVersion` (empty if missing).
        api_version: String,
        /// The body's `kind` (empty if missing).
        kind: String,
    },
    /// An `AdmissionReview` without a `request` (a response, for instance).
    #[error("the AdmissionReview has no request")]
    NoRequest,
    /// The `request` lacks fields or has wrong types (uid, kind, operation, ...).
    #[error("the AdmissionReview's request is invalid: {0}")]
    InvalidRequest(#[source] serde_json::Error),
}

/// Why the object of an admission request cannot be handed to a
/// [`Validator`](crate::Validator) or [`Defaulter`](crate::Defaulter). The handlers answer
/// "denied" with code 400 and this message: the API server shows it to the user.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The request is for another kind than the handler's (a webhook configuration whose
    /// rules match more than the kind the path was generated for).
    #[error("this webhook admits {expected}, but the request is for {got}")]
    WrongKind {
        /// The handler's kind, e.g. `samplecontroller.k8s.io/v1alpha1 Foo`.
        expected: String,
        /// The request's kind.
        got: String,
    },
    /// The request has no `object` (or `oldObject`) where the operation needs one.
    #[error("the {operation} request has no {field}")]
    Missing {
        /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
        operation: String,
        /// `object` or `oldObject`.
        field: &'static str,
    },
    /// The object does not deserialize into the handler's type.
    #[error("cannot decode {field} as {kind}: {source}")]
    Invalid {
        /// `object` or `oldObject`.
        field: &'static str,
        /// The handler's kind.
        kind: String,
        /// serde's error, with the field path when serde gives one.
        #[source]
        source: serde_json::Error,
    },
}
