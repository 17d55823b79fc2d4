//! Where events are written: client-go's `EventSink` (implemented there by the
//! typed client's `EventSinkImpl`).
//!
//! The broadcaster needs only two calls, **create** and **patch**, and must know
//! which failures are worth retrying. [`EventSink`] is that contract; it is
//! implemented for [`kube::Client`] (core/v1 Events in the event's own namespace)
//! and can be implemented by tests to script failures.
//!
//! Error classes, following client-go's `recordEvent`:
//!
//! * [`SinkError::NotFound`]: a patch found no Event (it expired or was deleted);
//!   the broadcaster creates it instead.
//! * [`SinkError::Rejected`]: the server understood and refused (`AlreadyExists`,
//!   the namespace is terminating, validation, RBAC). Retrying would get the same
//!   answer, so the event is given up.
//! * [`SinkError::Transient`]: the request did not get an answer (connection
//!   refused while the API server restarts, a timeout) or got `429`/`5xx`: retried
//!   with backoff. Deviation: client-go gives up on *every* status error, but its
//!   REST client has already retried 429/5xx answers that carry `Retry-After`
//!   internally; kube-client does not, so we count them as transient.

use std::future::Future;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Event;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A failed write. See the [module docs](self) for what each class means.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// The Event to patch does not exist (404).
    #[error("event not found")]
    NotFound,
    /// The server refused the write; retrying cannot help.
    #[error("server rejected event ({code} {reason}): {message}")]
    Rejected {
        /// HTTP status code (0 when the request could not even be built).
        code: u16,
        /// The Status reason (`AlreadyExists`, `Forbidden`, ...).
        reason: String,
        /// The server's message.
        message: String,
    },
    /// No answer, or a `429`/`5xx`: worth retrying.
    #[error("transient error writing event: {0}")]
    Transient(String),
}

impl SinkError {
    /// Rejections that are expected and not worth an error log (client-go logs
    /// them at V(5)): `AlreadyExists`, and writes into a terminating namespace.
    pub fn is_expected_rejection(&self) -> bool {
        match self {
            SinkError::Rejected { code, reason, .. } => {
                *code == 409 && reason == "AlreadyExists"
                    || reason == gentype::response::NAMESPACE_TERMINATING_CAUSE
            }
            _ => false,
        }
    }
}

impl From<kube::Error> for SinkError {
    fn from(err: kube::Error) -> Self {
        match err {
            kube::Error::Api(ref status) => {
                let terminating = gentype::response::is_namespace_terminating(&err);
                let code = status.code;
                if code == 404 {
                    return SinkError::NotFound;
                }
                if code == 429 || code >= 500 {
                    return SinkError::Transient(format!("{code} {}", status.message));
                }
                SinkError::Rejected {
                    code,
                    reason: if terminating {
                        gentype::response::NAMESPACE_TERMINATING_CAUSE.to_string()
                    } else {
                        status.reason.clone()
                    },
                    message: status.message.clone(),
                }
            }
            // The request cannot be built or its answer not read: the same would
            // happen next time (client-go's RequestConstructionError).
            kube::Error::BuildRequest(e) => SinkError::Rejected {
                code: 0,
                reason: "BuildRequest".to_string(),
                message: e.to_string(),
            },
            kube::Error::SerdeError(e) => SinkError::Rejected {
                code: 0,
                reason: "Serde".to_string(),
                message: e.to_string(),
            },
            other => SinkError::Transient(other.to_string()),
        }
    }
}

/// Stores events (client-go's `EventSink`). Must respect the namespace of the event.
pub trait EventSink: Send + Sync + 'static {
    /// Creates `event`; returns what the server stored.
    fn create(&self, event: &Event) -> impl Future<Output = Result<Event, SinkError>> + Send;

    /// Applies `patch` (`count`, `lastTimestamp`, `message`) to the existing Event
    /// named by `event.metadata`; returns what the server stored.
    fn patch(
        &self,
        event: &Event,
        patch: &serde_json::Value,
    ) -> impl Future<Output = Result<Event, SinkError>> + Send;
}

/// What both sinks write: a core/v1 or an events.k8s.io/v1 Event, through the typed
/// client ([`gentype::Client`]).
pub(crate) trait EventObject:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + Serialize
    + DeserializeOwned
    + std::fmt::Debug
    + 'static
{
}

impl<K> EventObject for K where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug
        + 'static
{
}

/// Creates `event` in its namespace (`default` when it has none), without a
/// resourceVersion (as client-go: a create never carries one). Shared by the core/v1
/// and events.k8s.io/v1 sinks.
///
/// Returned: the Event sent with the metadata the server assigned (name, uid,
/// resourceVersion, ...). Only that metadata is read back (`gentype`'s
/// `create_metadata`): what a sink's caller keeps of a created Event (the correlator's
/// count, first timestamp, name and resourceVersion) is what it sent plus that
/// metadata, and the server stores an Event's other fields as sent. The whole answer is
/// neither encoded by the server nor decoded here (docs/benchmarks.md, converge).
pub(crate) async fn create_event<K>(client: &kube::Client, event: &K) -> Result<K, SinkError>
where
    K: EventObject,
{
    let mut event = event.clone();
    event.meta_mut().resource_version = None;
    let metadata = api_for(client, &event)
        .create_metadata(&PostParams::default(), &event)
        .await?;
    *event.meta_mut() = metadata;
    Ok(event)
}

/// Applies `patch` to the existing Event named by `event`'s metadata; `NotFound`
/// for an Event without a name. Shared by both sinks.
pub(crate) async fn patch_event<K>(
    client: &kube::Client,
    event: &K,
    patch: &Patch<&serde_json::Value>,
) -> Result<K, SinkError>
where
    K: EventObject,
{
    let name = event.meta().name.as_deref().unwrap_or_default();
    if name.is_empty() {
        return Err(SinkError::NotFound);
    }
    Ok(api_for(client, event)
        .patch(name, &PatchParams::default(), patch)
        .await?)
}

/// The typed client for `event`'s namespace: protobuf on the wire, as client-go's
/// typed Events clients speak (gentype).
fn api_for<K>(client: &kube::Client, event: &K) -> gentype::Client<K>
where
    K: EventObject,
{
    let namespace = event
        .meta()
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or(crate::event::NAMESPACE_DEFAULT);
    gentype::Client::new(Api::namespaced(client.clone(), namespace))
}

/// core/v1 Events through kube: `POST /api/v1/namespaces/{ns}/events` and a
/// strategic merge `PATCH .../events/{name}`.
impl EventSink for kube::Client {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        create_event(self, event).await
    }

    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, SinkError> {
        patch_event(self, event, &Patch::Strategic(patch)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api_error(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Status::failure("boom", reason).with_code(code).boxed())
    }

    #[test]
    fn classifies_api_errors() {
        assert_eq!(
            SinkError::from(api_error(404, "NotFound")),
            SinkError::NotFound
        );
        assert!(matches!(
            SinkError::from(api_error(503, "ServiceUnavailable")),
            SinkError::Transient(_)
        ));
        assert!(matches!(
            SinkError::from(api_error(429, "TooManyRequests")),
            SinkError::Transient(_)
        ));
        let exists = SinkError::from(api_error(409, "AlreadyExists"));
        assert!(matches!(exists, SinkError::Rejected { code: 409, .. }));
        assert!(exists.is_expected_rejection());
        let invalid = SinkError::from(api_error(422, "Invalid"));
        assert!(matches!(invalid, SinkError::Rejected { code: 422, .. }));
        assert!(!invalid.is_expected_rejection());
    }
}
