//! The fake recorder: client-go's `record.FakeRecorder`.
//!
//! A controller's unit tests want to assert *which* events a sync emitted without
//! an API server. [`FakeRecorder`] turns every event into the string
//! `"<Type> <Reason> <message>"` (for example
//! `"Warning ErrResourceExists Resource \"x\" already exists"`) and keeps them in
//! order. Turn it into an [`EventRecorder`] with `.into()` and give that to the
//! controller: the controller's code is the same in production and in tests.
//!
//! Deviation: client-go's fake writes into a buffered channel and *blocks* when it
//! is full; this one appends to a list, which tests read with
//! [`FakeRecorder::events`] or [`FakeRecorder::take_events`].
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
