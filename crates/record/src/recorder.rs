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
//! [`EventRecorder`] is also what unit tests use: built from a
//! [`FakeRecorder`] it collects `"Warning Reason message"`
//! strings instead, so controllers hold one type in production and in tests.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::event::{EventType, make_event, object_reference};
use crate::fake::FakeRecorder;

/// How often at most the "dropped events" warning is logged.
const DROP_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The sending side of the broadcaster's queue, shared by all its recorders.
pub(crate) struct EventQueue {
    pub(crate) tx: mpsc::Sender<Event>,
    dropped: AtomicU64,
    last_drop_log: Mutex<Option<Instant>>,
}

impl EventQueue {
    pub(crate) fn new(tx: mpsc::Sender<Event>) -> Self {
        Self {
            tx,
            dropped: AtomicU64::new(0),
            last_drop_log: Mutex::new(None),
        }
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues `event` or drops it; never waits.
    fn offer(&self, event: Event) {
        let Err(err) = self.tx.try_send(event) else {
            return;
        };
        let total = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        let why = match err {
            mpsc::error::TrySendError::Full(_) => "too many queued events",
            mpsc::error::TrySendError::Closed(_) => "the event broadcaster is shut down",
        };
        // Rate-limited log; `try_lock` so that even logging never waits.
        if let Some(mut last) = self.last_drop_log.try_lock() {
            let now = Instant::now();
            if last.is_none_or(|t| now.saturating_duration_since(t) >= DROP_LOG_INTERVAL) {
                *last = Some(now);
                tracing::warn!(
                    dropped_total = total,
                    "unable to record event: {why}, dropped"
                );
            }
        }
    }
}

impl std::fmt::Debug for EventQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventQueue")
            .field("queued", &(self.tx.max_capacity() - self.tx.capacity()))
            .field("dropped", &self.dropped())
            .finish()
    }
}

/// The real recorder's state: the source it stamps and the queue it feeds.
pub(crate) struct BroadcastRecorder {
    pub(crate) source: EventSource,
    pub(crate) queue: Arc<EventQueue>,
    pub(crate) clock: Arc<dyn Clock>,
}

#[derive(Clone)]
enum Inner {
    Broadcast(Arc<BroadcastRecorder>),
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
            Inner::Fake(fake) => f.debug_tuple("EventRecorder").field(fake).finish(),
        }
    }
}

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

    /// Records an event about `obj` (client-go's `Event`): `reason` is a short
    /// UpperCamelCase word programs can switch on (`ErrResourceExists`,
    /// `Synced`); `message` is for humans. The Event goes into `obj`'s namespace.
    pub fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        event_type: EventType,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) {
        match &self.inner {
            Inner::Broadcast(_) => {
                self.event_ref(&object_reference(obj), event_type, reason, message)
            }
            Inner::Fake(fake) => fake.write_event(
                Some((&K::kind(&()), &K::api_version(&()))),
                event_type,
                &reason.into(),
                &message.into(),
            ),
        }
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
        match &self.inner {
            Inner::Broadcast(r) => {
                let (reason, message) = (reason.into(), message.into());
                if reference.name.as_deref().unwrap_or_default().is_empty() {
                    tracing::error!(
                        ?reference,
                        %event_type,
                        %reason,
                        %message,
                        "could not construct reference: the object has no name; will not report event"
                    );
                    return;
                }
                let event = make_event(
                    reference.clone(),
                    &r.source,
                    event_type,
                    reason,
                    message,
                    r.clock.wall_now(),
                );
                r.queue.offer(event);
            }
            Inner::Fake(fake) => fake.write_event(
                Some((
                    reference.kind.as_deref().unwrap_or_default(),
                    reference.api_version.as_deref().unwrap_or_default(),
                )),
                event_type,
                &reason.into(),
                &message.into(),
            ),
        }
    }

    /// Events dropped because the queue was full or shut down (0 for a fake).
    pub fn dropped_events(&self) -> u64 {
        match &self.inner {
            Inner::Broadcast(r) => r.queue.dropped(),
            Inner::Fake(_) => 0,
        }
    }
}
