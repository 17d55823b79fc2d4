//! client-go's `tools/record` in Rust: the event recorder, broadcaster and
//! correlator that put `Events` on the objects a controller manages.
//!
//! When a controller does something worth telling a human (it created a
//! Deployment, it refuses to adopt one it does not own), it records an **Event**
//! about the object. `kubectl describe foo/x` shows them at the bottom, and
//! `kubectl get events` lists them. Events are hints, not state: recording one must
//! never slow down or break reconciliation, and a controller stuck in a retry loop
//! must not flood the API server with them. That is what this crate is about.
//!
//! # The pipeline
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
//! For unit tests, [`FakeRecorder`] ([`fake`]) turns an [`EventRecorder`] into a
//! list of `"Warning Reason message"` strings.
//!
//! # Why core/v1 Events (and not events.k8s.io/v1)
//!
//! Kubernetes has two Event APIs over the same storage. This crate writes
//! **core/v1 `Event`** (`/api/v1/namespaces/{ns}/events`), because that is what
//! client-go's `tools/record` writes and what almost every controller uses today:
//! kube-controller-manager's controllers, sample-controller, and
//! controller-runtime's `mgr.GetEventRecorderFor` (a `tools/record` recorder).
//! `kubectl describe` and `kubectl get events` show both kinds, but the fields this
//! crate fills (`source`, `count`, `firstTimestamp`, `lastTimestamp`, `message`)
//! are the columns they were built around. The newer **events.k8s.io/v1** API
//! (client-go's `tools/events`) renames them (`reportingController`, `note`,
//! `regarding`), adds `action`, `related` and `eventTime` (microseconds), and
//! replaces `count` by an `EventSeries` heartbeat every 6 minutes. Switching is a
//! change of the [`EventSink`] (and of the dedupe bookkeeping the sink maps onto
//! series): recorders, queue, correlator and controllers stay as they are.
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

#![warn(missing_docs)]

pub mod aggregator;
pub mod broadcaster;
pub mod clock;
pub mod correlator;
pub mod event;
pub mod event_logger;
pub mod fake;
pub mod lru;
pub mod recorder;
pub mod sink;
pub mod spam_filter;

pub use broadcaster::{BroadcasterError, BroadcasterOptions, EventBroadcaster};
pub use clock::{Clock, RealClock, TokioClock};
pub use correlator::{CorrelatorOptions, EventCorrelateResult, EventCorrelator};
pub use event::EventType;
pub use fake::FakeRecorder;
pub use recorder::EventRecorder;
pub use sink::{EventSink, SinkError};
