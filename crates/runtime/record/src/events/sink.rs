//! Where events.k8s.io/v1 Events are written: client-go `tools/events`'
//! `EventSink` (implemented there by `EventSinkImpl` over the typed client).
//!
//! Two calls: **create** an Event, and **patch** the `series` of an existing
//! one. The patch body is a JSON merge patch `{"series": {"count": N,
//! "lastObservedTime": T}}`: `series` is the only field the server lets change
//! (client-go computes a strategic merge patch against a copy without the
//! series, which is the same document). client-go's `Update` is not needed: it is
//! never called by its broadcaster either.
//!
//! Failures are classified as for core/v1 ([`SinkError`]): `NotFound` on a
//! patch means the Event expired or was deleted (the broadcaster creates it
//! again), `Transient` is retried, `Rejected` is given up.

use std::future::Future;

use k8s_openapi::api::events::v1::Event;
use kube::api::Patch;

use crate::sink::{SinkError, create_event, patch_event};

/// Stores events.k8s.io/v1 Events (client-go's `tools/events.EventSink`). Must
/// respect the namespace of the event. Implemented for [`kube::Client`]; tests
/// implement it in memory to script failures.
pub trait EventSink: Send + Sync + 'static {
    /// Creates `event` (its `resourceVersion` is unset); returns what the server
    /// stored.
    fn create(&self, event: &Event) -> impl Future<Output = Result<Event, SinkError>> + Send;

    /// Applies `patch` (a JSON merge patch of `series`) to the existing Event
    /// named by `event.metadata`; returns what the server stored.
    fn patch(
        &self,
        event: &Event,
        patch: &serde_json::Value,
    ) -> impl Future<Output = Result<Event, SinkError>> + Send;
}

/// events.k8s.io/v1 Events through kube: `POST
/// /apis/events.k8s.io/v1/namespaces/{ns}/events` and a merge `PATCH
/// .../events/{name}`.
impl EventSink for kube::Client {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        create_event(self, event).await
    }

    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, SinkError> {
        patch_event(self, event, &Patch::Merge(patch)).await
    }
}
