//! The recorder: client-go's `EventRecorder` interface and its `recorderImpl`.
//!
//! A controller calls [`EventRecorder::event`] from the middle of its sync handler,
//! so recording must be cheap, must **never block** and must **never fail** the
//! caller: an event is a best-effort hint for humans, never worth slowing down or
//! breaking reconciliation. The recorder therefore only builds the Event (a few
//! string copies) and puts it into the broadcaster's bounded queue with
//! `try_send`. When the queue is full (1000 events by default, client-go's
//! `maxQueuedEvents`: the API server is down, or something is spamming), the event
//! is dropped, a counter goes up ([`EventRecorder::dropped_events`], for a metric)
//! and a warning is logged at most once every 10 seconds so the log is not spammed
//! either. client-go makes the same choice (`ActionOrDrop` with `DropIfChannelFull`).
//!
//! # One recorder, two Event APIs
//!
//! The same [`EventRecorder`] feeds either pipeline; which one is decided when
//! the broadcaster is built, never by the controller:
//!
//! * from [`crate::EventBroadcaster::new_recorder`] it writes **core/v1** Events
//!   (client-go's `tools/record`);
//! * from [`crate::events::EventBroadcaster::new_recorder`] it writes
//!   **events.k8s.io/v1** Events (client-go's `tools/events`).
//!
//! Two methods cover both APIs' vocabularies:
//!
//! * [`EventRecorder::event`] is `tools/record`'s `Event(obj, type, reason,
//!   message)`. events.k8s.io/v1 also requires an `action` (what the controller
//!   did or failed to do); client-go has no adapter in this direction (its
//!   `EventRecorderAdapter` goes the other way and simply drops `action` and
//!   `related`), so we choose **`action = reason`**: it is never empty (the API
//!   server rejects an empty action), it is machine-readable like an action
//!   must be, and it keeps the isomorphic key as selective as the reason.
//! * [`EventRecorder::eventf`] is `tools/events`' `Eventf(regarding, related,
//!   type, reason, action, note)` (without the printf: pass a `format!`ed
//!   note). On the core/v1 pipeline `action` and `related` are dropped, exactly
//!   as client-go's `EventRecorderAdapter` does, so a controller can use it
//!   whichever API the binary was started with.
//!
//! [`EventRecorder`] is also what unit tests use: built from a
//! `FakeRecorder` (the `testing` feature, see the `fake` module) it collects
//! `"Warning Reason message"` strings instead, so controllers hold one type in
//! production and in tests. That third branch is compiled only with the fake.

use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{EventSource, ObjectReference};
use kube::Resource;

use crate::clock::Clock;
use crate::event::{EventType, make_event, object_reference};
use crate::events::recorder::EventsRecorder;
#[cfg(any(test, feature = "testing"))]
use crate::fake::FakeRecorder;
use crate::queue::EventQueue;

/// The real recorder's state: the source it stamps and the queue it feeds.
pub(crate) struct BroadcastRecorder {
    pub(crate) source: EventSource,
    pub(crate) queue: Arc<EventQueue<k8s_openapi::api::core::v1::Event>>,
    pub(crate) clock: Arc<dyn Clock>,
}

#[derive(Clone)]
enum Inner {
    /// core/v1 (`tools/record`).
    Broadcast(Arc<BroadcastRecorder>),
    /// events.k8s.io/v1 (`tools/events`).
    EventsV1(Arc<EventsRecorder>),
    /// The test double (`testing` feature).
    #[cfg(any(test, feature = "testing"))]
    Fake(FakeRecorder),
}

/// Records events about objects. Cheap to clone; never blocks, never fails. See
/// the [module docs](self).
#[derive(Clone)]
pub struct EventRecorder {
    inner: Inner,
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Broadcast(r) => f
                .debug_struct("EventRecorder")
                .field("source", &r.source)
                .field("dropped_events", &r.queue.dropped())
                .finish_non_exhaustive(),
            Inner::EventsV1(r) => f
                .debug_struct("EventRecorder")
                .field("api", &"events.k8s.io/v1")
                .field("reporter", &r.reporter)
                .field("dropped_events", &r.queue.dropped())
                .finish_non_exhaustive(),
            #[cfg(any(test, feature = "testing"))]
            Inner::Fake(fake) => f.debug_tuple("EventRecorder").field(fake).finish(),
        }
    }
}

#[cfg(any(test, feature = "testing"))]
impl From<FakeRecorder> for EventRecorder {
    fn from(fake: FakeRecorder) -> Self {
        Self {
            inner: Inner::Fake(fake),
        }
    }
}

impl EventRecorder {
    pub(crate) fn broadcast(recorder: BroadcastRecorder) -> Self {
        Self {
            inner: Inner::Broadcast(Arc::new(recorder)),
        }
    }

    pub(crate) fn events_v1(recorder: EventsRecorder) -> Self {
        Self {
            inner: Inner::EventsV1(Arc::new(recorder)),
        }
    }

    /// Records an event about `obj` (client-go's `Event`): `reason` is a short
    /// UpperCamelCase word programs can switch on (`ErrResourceExists`,
    /// `Synced`); `message` is for humans. The Event goes into `obj`'s namespace.
    ///
    /// On the events.k8s.io/v1 pipeline the `action` is the `reason` (see the
    /// [module docs](self)); use [`eventf`](Self::eventf) to name it.
    pub fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        event_type: EventType,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) {
        #[cfg(any(test, feature = "testing"))]
        if let Inner::Fake(fake) = &self.inner {
            fake.write_event(
                Some((&K::kind(&()), &K::api_version(&()))),
                event_type,
                &reason.into(),
                &message.into(),
            );
            return;
        }
        self.event_ref(&object_reference(obj), event_type, reason, message);
    }

    /// Records an event about the object `reference` points to (client-go accepts
    /// an `*v1.ObjectReference` as the object too).
    pub fn event_ref(
        &self,
        reference: &ObjectReference,
        event_type: EventType,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) {
        let reason = reason.into();
        // `action = reason`: see the module docs.
        let action = reason.clone();
        self.eventf_ref(reference, None, event_type, reason, action, message);
    }

    /// Records an event about `regarding` with an explicit `action` and an
    /// optional `related` object (client-go `tools/events`' `Eventf(regarding,
    /// related, eventtype, reason, action, note)`).
    ///
    /// `action` is what the controller did or failed to do to `regarding`
    /// (`Adopt`, `CreateDeployment`, `Scale`); `reason` why (`ErrResourceExists`);
    /// `related` a second object involved (the Deployment a Foo's controller
    /// created). An empty `action` is replaced by `reason` (the API server
    /// rejects an empty one). The core/v1 pipeline ignores `action` and
    /// `related`, as client-go's `EventRecorderAdapter` does.
    pub fn eventf<K: Resource<DynamicType = ()>>(
        &self,
        regarding: &K,
        related: Option<&ObjectReference>,
        event_type: EventType,
        reason: impl Into<String>,
        action: impl Into<String>,
        note: impl Into<String>,
    ) {
        #[cfg(any(test, feature = "testing"))]
        if let Inner::Fake(fake) = &self.inner {
            fake.write_event(
                Some((&K::kind(&()), &K::api_version(&()))),
                event_type,
                &reason.into(),
                &note.into(),
            );
            return;
        }
        self.eventf_ref(
            &object_reference(regarding),
            related,
            event_type,
            reason,
            action,
            note,
        );
    }

    /// [`eventf`](Self::eventf) about the object `regarding` points to.
    pub fn eventf_ref(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        event_type: EventType,
        reason: impl Into<String>,
        action: impl Into<String>,
        note: impl Into<String>,
    ) {
        let (reason, note) = (reason.into(), note.into());
        match &self.inner {
            #[cfg(any(test, feature = "testing"))]
            Inner::Fake(fake) => fake.write_event(
                Some((
                    regarding.kind.as_deref().unwrap_or_default(),
                    regarding.api_version.as_deref().unwrap_or_default(),
                )),
                event_type,
                &reason,
                &note,
            ),
            Inner::Broadcast(r) => {
                if !has_name(regarding, event_type, &reason, &note) {
                    return;
                }
                let event = make_event(
                    regarding.clone(),
                    &r.source,
                    event_type,
                    reason,
                    note,
                    r.clock.wall_now(),
                );
                r.queue.offer(event);
            }
            Inner::EventsV1(r) => {
                if !has_name(regarding, event_type, &reason, &note) {
                    return;
                }
                let mut action = action.into();
                if action.is_empty() {
                    action.clone_from(&reason);
                }
                r.record(regarding, related, event_type, reason, action, note);
            }
        }
    }

    /// Events dropped because the queue was full or shut down (0 for a fake).
    pub fn dropped_events(&self) -> u64 {
        match &self.inner {
            Inner::Broadcast(r) => r.queue.dropped(),
            Inner::EventsV1(r) => r.queue.dropped(),
            #[cfg(any(test, feature = "testing"))]
            Inner::Fake(_) => 0,
        }
    }
}

/// Whether `regarding` names an object; logs the dropped event when not (an
/// Event needs a name to be about, and its own name is derived from it).
fn has_name(regarding: &ObjectReference, event_type: EventType, reason: &str, note: &str) -> bool {
    let named = !regarding.name.as_deref().unwrap_or_default().is_empty();
    if !named {
        tracing::error!(
            ?regarding,
            %event_type,
            %reason,
            message = %note,
            "could not construct reference: the object has no name; will not report event"
        );
    }
    named
}
