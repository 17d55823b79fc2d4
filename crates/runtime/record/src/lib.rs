//! client-go's `tools/record` and `tools/events` in Rust: the event recorder,
//! broadcasters, correlator and series that put `Events` on the objects a
//! controller manages.
//!
//! When a controller does something worth telling a human (it created a
//! Deployment, it refuses to adopt one it does not own), it records an **Event**
//! about the object. `kubectl describe foo/x` shows them at the bottom, and
//! `kubectl get events` lists them. Events are hints, not state: recording one must
//! never slow down or break reconciliation, and a controller stuck in a retry loop
//! must not flood the API server with them. That is what this crate is about.
//!
//! # The core/v1 pipeline (`tools/record`)
//!
//! The events.k8s.io/v1 pipeline (`tools/events`) is the [`events`] module; see
//! [below](#two-event-apis-corev1-and-eventsk8siov1) for the choice.
//!
//! ```text
//!  sync_handler ──recorder.event(&foo, Warning, "ErrResourceExists", msg)──┐
//!                                                                          │ try_send: never blocks;
//!                                                                          v full => dropped + counted
//!                             bounded queue (1000)           [EventBroadcaster]
//!                                                                          │ one task
//!                                                                          v
//!                EventCorrelator: aggregate -> dedupe -> spam filter
//!                                                                          │ Create / Patch / Skip
//!                                                                          v
//!                EventSink (kube::Client): POST or PATCH core/v1 Event, retried up to 12 tries
//! ```
//!
//! 1. [`EventRecorder`] ([`recorder`]) builds a core/v1 Event: `involvedObject` (apiVersion,
//!    kind, name, namespace, uid, resourceVersion), `source.component` =
//!    `reportingController`, `type`, `reason`, `message`, `count: 1`, both
//!    timestamps now, name `<object>.<unique hex>`, namespace of the object
//!    (`default` for cluster-scoped ones). It puts it in the queue, or drops it.
//! 2. [`EventBroadcaster`] ([`broadcaster`]) owns the queue and one task that
//!    takes events out in order.
//! 3. [`EventCorrelator`] ([`correlator`]) decides what to write:
//!    * [aggregate](aggregator): the 10th distinct message of otherwise similar
//!      events within 10 minutes becomes `"(combined from similar events): msg"`;
//!    * [dedupe](event_logger): a repeat becomes a PATCH of the existing Event,
//!      `count + 1` and a new `lastTimestamp`;
//!    * [spam filter](spam_filter): per source and object, a burst of 25, then one
//!      per 5 minutes; the rest are dropped.
//! 4. [`EventSink`] ([`sink`]) writes: create, or patch falling back to create on
//!    404; transient failures are retried (12 tries, 10 s apart), rejections
//!    dropped.
//!
//! For unit tests, `FakeRecorder` (module `fake`) turns an [`EventRecorder`] into a
//! list of `"Warning Reason message"` strings. It is a test double, so it exists only
//! with the crate's `testing` feature, which tests enable under `[dev-dependencies]`:
//! `record = { workspace = true, features = ["testing"] }`.
//!
//! # Two Event APIs: core/v1 and events.k8s.io/v1
//!
//! Kubernetes serves Events through two APIs over the same storage, and this
//! crate writes either, behind one [`EventRecorder`]:
//!
//! * **core/v1 `Event`** (`/api/v1/namespaces/{ns}/events`), written by
//!   client-go's `tools/record` ([`EventBroadcaster`], this module's pipeline):
//!   `involvedObject`, `source`, `message`, and repeats counted in `count` /
//!   `firstTimestamp` / `lastTimestamp`, patched on every repeat (subject to the
//!   correlator's aggregation and spam filter). Still what most of
//!   kube-controller-manager and older controller-runtime versions write.
//! * **events.k8s.io/v1 `Event`** (`/apis/events.k8s.io/v1/...`), written by
//!   client-go's `tools/events` ([`events::EventBroadcaster`]): `regarding`,
//!   optional `related`, `reportingController` / `reportingInstance`, a
//!   required machine-readable `action`, `note`, `eventTime` in microseconds,
//!   and repeats folded into an `EventSeries {count, lastObservedTime}`. The
//!   server validates it strictly (every field but `series` is immutable).
//!
//! `kubectl describe`, `kubectl get events` and `kubectl events` show both (the
//! API server converts between them). **The binaries default to
//! events.k8s.io/v1** (`--events-api events.k8s.io/v1`): it is what current
//! client-go controllers write (kube-scheduler, and controller-runtime's
//! `mgr.GetEventRecorder` since v0.23, which deprecated the `tools/record`
//! recorder); `kubectl events` prints its series as `5s (x20 over 2m)` from
//! `eventTime` and `series`; and it keeps the `action` and `related` a
//! controller passes to [`EventRecorder::eventf`]. `--events-api core/v1`
//! selects the `tools/record` pipeline, for tools that still read `count` /
//! `lastTimestamp`.
//!
//! One behaviour differs on purpose from client-go's `tools/events`: it writes
//! a series' count only at a 30-minute heartbeat, so `kubectl events` can lag
//! by half an hour; ours patches a changed series about a second after the
//! repeat (see [`events`]).
//!
//! # Example
//!
//! The whole pipeline with an in-memory sink (against a cluster, pass a
//! [`kube::Client`] instead: it implements [`EventSink`]):
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//!
//! use k8s_openapi::api::core::v1::{ConfigMap, Event};
//! use record::{EventBroadcaster, EventSink, EventType, SinkError};
//!
//! /// A sink that keeps the Events in memory, keyed by name.
//! #[derive(Clone, Default)]
//! struct MemorySink(Arc<Mutex<Vec<Event>>>);
//!
//! impl EventSink for MemorySink {
//!     async fn create(&self, event: &Event) -> Result<Event, SinkError> {
//!         self.0.lock().unwrap().push(event.clone());
//!         Ok(event.clone())
//!     }
//!     async fn patch(&self, event: &Event, _patch: &serde_json::Value) -> Result<Event, SinkError> {
//!         let mut events = self.0.lock().unwrap();
//!         let stored = events
//!             .iter_mut()
//!             .find(|e| e.metadata.name == event.metadata.name)
//!             .ok_or(SinkError::NotFound)?;
//!         *stored = event.clone();
//!         Ok(event.clone())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let broadcaster = EventBroadcaster::default();
//! let sink = MemorySink::default();
//! broadcaster.start_recording_to_sink(sink.clone()).unwrap();
//! let recorder = broadcaster.new_recorder("foo-controller", "host-1");
//!
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! cm.metadata.namespace = Some("demo".into());
//! for _ in 0..3 {
//!     recorder.event(&cm, EventType::Warning, "ErrResourceExists", "settings is not ours");
//! }
//! assert!(broadcaster.shutdown(Duration::from_secs(10)).await);
//!
//! // Three recordings, one Event, count 3.
//! let events = sink.0.lock().unwrap().clone();
//! assert_eq!(events.len(), 1);
//! assert_eq!(events[0].count, Some(3));
//! assert_eq!(events[0].metadata.namespace.as_deref(), Some("demo"));
//! assert_eq!(events[0].reporting_component.as_deref(), Some("foo-controller"));
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod aggregator;
pub mod broadcaster;
pub mod clock;
pub mod correlator;
pub mod event;
pub mod event_logger;
pub mod events;
#[cfg(any(test, feature = "testing"))]
pub mod fake;
pub mod lru;
mod queue;
pub mod recorder;
pub mod sink;
pub mod spam_filter;

pub use broadcaster::{BroadcasterError, BroadcasterOptions, EventBroadcaster};
pub use clock::{Clock, RealClock, TokioClock};
pub use correlator::{CorrelatorOptions, EventCorrelateResult, EventCorrelator};
pub use event::EventType;
#[cfg(any(test, feature = "testing"))]
pub use fake::FakeRecorder;
pub use recorder::EventRecorder;
pub use sink::{EventSink, SinkError};
