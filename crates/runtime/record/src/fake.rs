//! The fake recorder: client-go's `record.FakeRecorder`.
//!
//! A controller's unit tests want to assert *which* events a sync emitted without
//! an API server. [`FakeRecorder`] turns every event into the string
//! `"<Type> <Reason> <message>"` (for example
//! `"Warning ErrResourceExists Resource \"x\" already exists"`) and keeps them in
//! order. Turn it into an [`EventRecorder`] with `.into()` and give that to the
//! controller: the controller's code is the same in production and in tests,
//! whichever Event API production writes. [`EventRecorder::eventf`] gives the
//! same string (`action` and `related` are not part of it, as in client-go's
//! non-verbose `tools/events` fake).
//!
//! Deviation: client-go's fake writes into a buffered channel and *blocks* when it
//! is full; this one appends to a list, which tests read with
//! [`FakeRecorder::events`] or [`FakeRecorder::take_events`].
//!
//! **Requires the `testing` feature.** No production code path records into a fake
//! (binaries build their recorder from a broadcaster), so this test double is not part
//! of the production API: the module, and the recorder's fake branch, are compiled for
//! the crate's own unit tests and, elsewhere, only with the `testing` cargo feature,
//! which the tests that use it enable under `[dev-dependencies]`:
//! `record = { workspace = true, features = ["testing"] }`.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use record::{EventRecorder, EventType, FakeRecorder};
//!
//! let fake = FakeRecorder::new();
//! let recorder: EventRecorder = fake.clone().into();
//! recorder.event(&ConfigMap::default(), EventType::Warning, "ErrResourceExists", "already exists");
//! assert_eq!(fake.events(), ["Warning ErrResourceExists already exists"]);
//! ```

use std::sync::Arc;

use parking_lot::Mutex;

use crate::event::EventType;
use crate::recorder::EventRecorder;

/// Collects events as strings for unit tests. Clones share the same list. See the
/// [module docs](self).
#[derive(Debug, Clone, Default)]
pub struct FakeRecorder {
    events: Arc<Mutex<Vec<String>>>,
    include_object: bool,
}

impl FakeRecorder {
    /// An empty fake recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `" involvedObject{kind=K,apiVersion=V}"` to each string (client-go's
    /// `IncludeObject`).
    pub fn with_include_object(mut self) -> Self {
        self.include_object = true;
        self
    }

    /// An [`EventRecorder`] writing into this fake.
    pub fn recorder(&self) -> EventRecorder {
        self.clone().into()
    }

    /// The events recorded so far, oldest first.
    pub fn events(&self) -> Vec<String> {
        self.events.lock().clone()
    }

    /// The events recorded so far, removing them (like reading client-go's channel).
    pub fn take_events(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.lock())
    }

    pub(crate) fn write_event(
        &self,
        object: Option<(&str, &str)>,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        let mut line = format!("{event_type} {reason} {message}");
        if self.include_object
            && let Some((kind, api_version)) = object
        {
            line.push_str(&format!(
                " involvedObject{{kind={kind},apiVersion={api_version}}}"
            ));
        }
        self.events.lock().push(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};

    #[test]
    fn collects_events_in_order_through_the_recorder_interface() {
        let fake = FakeRecorder::new().with_include_object();
        let recorder = fake.recorder();
        recorder.event(
            &ConfigMap::default(),
            EventType::Warning,
            "ErrResourceExists",
            "Resource \"x\" already exists",
        );
        let reference = ObjectReference {
            kind: Some("Foo".into()),
            api_version: Some("samplecontroller.k8s.io/v1alpha1".into()),
            name: Some("x".into()),
            ..ObjectReference::default()
        };
        recorder.event_ref(&reference, EventType::Normal, "Synced", "synced");
        recorder.eventf(
            &ConfigMap::default(),
            Some(&reference),
            EventType::Normal,
            "Adopted",
            "Adopt",
            "adopted",
        );
        recorder.eventf_ref(
            &reference,
            None,
            EventType::Warning,
            "Failed",
            "Sync",
            "boom",
        );
        assert_eq!(
            fake.take_events(),
            [
                "Warning ErrResourceExists Resource \"x\" already exists involvedObject{kind=ConfigMap,apiVersion=v1}",
                "Normal Synced synced involvedObject{kind=Foo,apiVersion=samplecontroller.k8s.io/v1alpha1}",
                "Normal Adopted adopted involvedObject{kind=ConfigMap,apiVersion=v1}",
                "Warning Failed boom involvedObject{kind=Foo,apiVersion=samplecontroller.k8s.io/v1alpha1}",
            ]
        );
        assert!(fake.events().is_empty());
        assert_eq!(recorder.dropped_events(), 0);
    }
}
