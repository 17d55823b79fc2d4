//! The events.k8s.io/v1 side of [`EventRecorder`](crate::EventRecorder):
//! client-go `tools/events`' `recorderImpl.eventf`.
//!
//! It builds the Event on the caller's thread (a few string copies, the
//! timestamp taken at the moment of the occurrence) and offers it to the
//! broadcaster's bounded queue with `try_send`: like the core/v1 recorder it
//! never blocks and never fails; a full queue drops the event and counts it.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;

use super::event::{Occurrence, Reporter, make_event};
use crate::clock::Clock;
use crate::event::EventType;
use crate::queue::EventQueue;

/// A recorder's state: who reports, the queue it feeds, its clock.
pub(crate) struct EventsRecorder {
    pub(crate) reporter: Reporter,
    pub(crate) queue: Arc<EventQueue<Event>>,
    pub(crate) clock: Arc<dyn Clock>,
}

impl EventsRecorder {
    /// Builds the Event and queues it or drops it; never waits.
    pub(crate) fn record(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        event_type: EventType,
        reason: String,
        action: String,
        note: String,
    ) {
        let occurrence = Occurrence {
            regarding: regarding.clone(),
            related: related.cloned(),
            event_type,
            reason,
            action,
            note,
        };
        self.queue.offer(make_event(
            &self.reporter,
            occurrence,
            self.clock.wall_now(),
        ));
    }
}
