//! client-go's `tools/events` in Rust: **events.k8s.io/v1** Events, with
//! repeats folded into an `EventSeries`.
//!
//! This is the second pipeline of the crate, next to the core/v1 one
//! (`tools/record`). Controllers do not see the difference: both hand out the
//! same [`EventRecorder`](crate::EventRecorder), and the binary decides which
//! broadcaster to build (`--events-api`, see `manager::Manager`).
//!
//! ```text
//!  recorder.event(&foo, Warning, "ErrResourceExists", msg)          (action = reason)
//!  recorder.eventf(&foo, Some(&deploy), Warning, reason, "Adopt", msg)
//!        │ try_send: never blocks; full => dropped + counted
//!        v
//!  bounded queue (1000) ──> [EventBroadcaster] one task
//!        │
//!        v
//!  SeriesCache: key = (type, action, reason, reportingController,
//!                      reportingInstance, regarding, related)
//!        │ 1st: create       2nd: series {count: 2}       nth: count n
//!        │                   (dirty; written at the flush deadline, 1 s)
//!        v
//!  EventSink (kube::Client): POST, or merge PATCH of `series` (404 -> POST)
//! ```
//!
//! * [`event`]: the Event and its isomorphic key: name `<regarding>.<hex>`,
//!   `eventTime` (microseconds), `reportingController`, `reportingInstance`
//!   (`<controller>-<hostname>`), `action`, `reason`, `note` (cut to 1 KiB),
//!   `type`, `regarding`, `related`.
//! * [`series`]: what a repeat does to the cache; when a series finishes.
//! * [`broadcaster`] (and its task in `worker.rs`): the queue, when things are
//!   written, retries and shutdown.
//! * [`sink`]: the two API calls.
//!
//! # Where this differs from client-go, and why
//!
//! * **Counts converge within a second.** client-go writes a repeat only for
//!   the second occurrence; every later one waits for the 30-minute heartbeat
//!   (or the end of the series), so `kubectl events` may show `count: 2` for half
//!   an hour while the controller is failing in a loop. Here every repeat marks
//!   its series dirty, and dirty series are patched `flush_delay` (1 s) after the
//!   first unwritten repeat and on shutdown: 20 identical events in a burst are
//!   one create and one patch, and the server reads `count: 20` a second later.
//!   A series repeating forever costs at most one patch per second.
//! * **The key leaves out `resourceVersion`** of `regarding` and `related` (see
//!   [`event::get_key`]), so repeats about an object the controller keeps
//!   updating still form a series.
//! * **Long notes are cut** to 1 KiB instead of being rejected by the server,
//!   and invalid `reportingInstance` lengths are cut to 128 bytes.
//! * A series finishes exactly when it was silent for 6 minutes (client-go:
//!   between 6 and 12).
//! * One writer task, a flush on shutdown, and events recorded before the sink
//!   starts are kept, as in the core/v1 broadcaster.
//!
//! # Example
//!
//! A burst of identical events with an in-memory sink (against a cluster, pass
//! a [`kube::Client`]: it implements [`EventSink`]):
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//!
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::api::events::v1::Event;
//! use record::events::{EventBroadcaster, EventSink};
//! use record::{EventType, SinkError};
//!
//! #[derive(Clone, Default)]
//! struct MemorySink(Arc<Mutex<Vec<Event>>>);
//!
//! impl EventSink for MemorySink {
//!     async fn create(&self, event: &Event) -> Result<Event, SinkError> {
//!         self.0.lock().unwrap().push(event.clone());
//!         Ok(event.clone())
//!     }
//!     async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, SinkError> {
//!         let mut events = self.0.lock().unwrap();
//!         let stored = events
//!             .iter_mut()
//!             .find(|e| e.metadata.name == event.metadata.name)
//!             .ok_or(SinkError::NotFound)?;
//!         stored.series = serde_json::from_value(patch["series"].clone()).ok();
//!         Ok(stored.clone())
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
//! for _ in 0..20 {
//!     recorder.eventf(&cm, None, EventType::Warning, "ErrResourceExists", "Adopt", "not ours");
//! }
//! // Shutdown writes the unwritten count at once (otherwise: after 1 s).
//! assert!(broadcaster.shutdown(Duration::from_secs(10)).await);
//!
//! let events = sink.0.lock().unwrap().clone();
//! assert_eq!(events.len(), 1);
//! assert_eq!(events[0].series.as_ref().map(|s| s.count), Some(20));
//! assert_eq!(events[0].action.as_deref(), Some("Adopt"));
//! assert_eq!(events[0].reporting_instance.as_deref(), Some("foo-controller-host-1"));
//! # }
//! ```
//!
//! As in client-go, `note` is not part of the key: a repeat with another text
//! joins the series and the Event keeps its first note (the server does not
//! let a note change). There is no spam filter and no aggregation in this API;
//! the key itself bounds how many Events a failing controller creates.

pub mod broadcaster;
pub mod event;
pub(crate) mod recorder;
pub mod series;
pub mod sink;
mod worker;

pub use broadcaster::{BroadcasterOptions, EventBroadcaster};
pub use event::{EventKey, Occurrence, Reporter, get_key, make_event};
pub use series::{Observation, SeriesCache};
pub use sink::EventSink;
