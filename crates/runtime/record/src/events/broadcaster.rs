//! The events.k8s.io/v1 broadcaster: client-go `tools/events`'
//! `eventBroadcasterImpl` (`NewBroadcaster`, `NewRecorder`,
//! `StartRecordingToSinkWithContext`, `Shutdown`).
//!
//! Same shape as the core/v1 [`crate::EventBroadcaster`]: recorders put Events
//! into one bounded queue (1000); one task takes them out in order, keeps the
//! [series cache](super::series) and writes to an [`EventSink`]. One task means
//! the cache needs no lock and the writes about an object happen in the order
//! the events were recorded.
//!
//! # What the task writes, and when
//!
//! * a first occurrence: a **create**, at once;
//! * repeats: nothing at once; the series is marked dirty and every dirty series
//!   is **patched** (`series` only) at the flush deadline, `flush_delay` (1 s)
//!   after the first unwritten repeat;
//! * every `refresh_time` (30 min, client-go's heartbeat): a patch of every
//!   series in the cache, which also renews the Event's time to live on the
//!   server (`--event-ttl`, 1 h by default);
//! * every `finish_time` (6 min): series silent that long leave the cache (an
//!   unwritten count is written first);
//! * on [`shutdown`](EventBroadcaster::shutdown): the queued events, then every
//!   dirty series, one try each.
//!
//! # Retries
//!
//! As client-go's `attemptRecording`: a write failing transiently is retried up
//! to 12 times, each pause 10 s plus up to 25 % jitter; a patch answered 404
//! (the Event expired or was deleted) becomes a create of the whole Event with
//! its series under the same name; a create of a series answered 409 (someone
//! else created it in between) is retried, which then patches; other
//! rejections are logged and dropped. While one write is retried the task does
//! nothing else, so new events wait in the queue and, once it is full, are
//! dropped by the recorders, which never wait.
//!
//! Deviations, as for core/v1: events recorded before
//! [`start_recording_to_sink`](EventBroadcaster::start_recording_to_sink) wait
//! in the queue; shutdown flushes; one sink per broadcaster and one writer task
//! (client-go runs 8 workers over a second queue). Dropping the broadcaster
//! without `shutdown` aborts the task.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::events::v1::Event;

use super::event::Reporter;
use super::recorder::EventsRecorder;
use super::series::{DEFAULT_FLUSH_DELAY, FINISH_TIME, REFRESH_TIME, SeriesCache};
use super::sink::EventSink;
use super::worker::Worker;
use crate::broadcaster::{
    BroadcasterError, DEFAULT_SLEEP_DURATION, MAX_QUEUED_EVENTS, MAX_TRIES_PER_EVENT,
};
use crate::clock::{Clock, RealClock};
use crate::queue::Pipeline;
use crate::recorder::EventRecorder;

/// Settings of an events.k8s.io/v1 [`EventBroadcaster`]; [`Default`] is
/// client-go's, plus our 1-second flush delay.
#[derive(Debug, Clone)]
pub struct BroadcasterOptions {
    /// Events queued before recorders start dropping. 1000.
    pub queue_size: usize,
    /// Tries per write, the first included. 12.
    pub max_tries_per_event: u32,
    /// Pause between tries, plus up to 25 % jitter. 10 s.
    pub sleep_duration: Duration,
    /// How long a repeat may wait before its series is patched; repeats within
    /// it share one PATCH. 1 s. (client-go: until the 30-minute heartbeat.)
    pub flush_delay: Duration,
    /// A series not observed this long is finished. 6 minutes.
    pub finish_time: Duration,
    /// Heartbeat: every series is written again this often. 30 minutes.
    pub refresh_time: Duration,
    /// Wall time for `eventTime`, monotonic time for the windows. [`RealClock`].
    pub clock: Arc<dyn Clock>,
}

impl Default for BroadcasterOptions {
    fn default() -> Self {
        Self {
            queue_size: MAX_QUEUED_EVENTS,
            max_tries_per_event: MAX_TRIES_PER_EVENT,
            sleep_duration: DEFAULT_SLEEP_DURATION,
            flush_delay: DEFAULT_FLUSH_DELAY,
            finish_time: FINISH_TIME,
            refresh_time: REFRESH_TIME,
            clock: Arc::new(RealClock),
        }
    }
}

/// Receives events.k8s.io/v1 Events from recorders and writes them, as series,
/// to a sink. See the [module docs](self).
#[derive(Debug)]
pub struct EventBroadcaster {
    options: BroadcasterOptions,
    pipeline: Pipeline<Event>,
}

impl Default for EventBroadcaster {
    fn default() -> Self {
        Self::new(BroadcasterOptions::default())
    }
}

impl EventBroadcaster {
    /// A broadcaster with `options` (client-go's `NewBroadcaster`). Needs no
    /// runtime until [`start_recording_to_sink`](Self::start_recording_to_sink).
    pub fn new(options: BroadcasterOptions) -> Self {
        Self {
            pipeline: Pipeline::new(options.queue_size),
            options,
        }
    }

    /// A recorder whose Events carry `reportingController = controller` and
    /// `reportingInstance = <controller>-<host>` (client-go's `NewRecorder`,
    /// which reads the hostname itself; see [`Reporter::new`]). `controller`
    /// must be a qualified name (`sample-controller`, `example.com/foo`) or the
    /// server rejects every Event.
    ///
    /// It is the same [`EventRecorder`] type the core/v1 broadcaster hands out,
    /// so controllers do not know which API they write.
    pub fn new_recorder(
        &self,
        controller: impl Into<String>,
        host: impl Into<String>,
    ) -> EventRecorder {
        EventRecorder::events_v1(EventsRecorder {
            reporter: Reporter::new(controller, &host.into()),
            queue: self.pipeline.queue.clone(),
            clock: self.options.clock.clone(),
        })
    }

    /// Spawns the task that keeps the series and writes them to `sink`
    /// (client-go's `StartRecordingToSinkWithContext`). A [`kube::Client`] is a
    /// sink. Must be called within a tokio runtime, once.
    pub fn start_recording_to_sink<S: EventSink>(&self, sink: S) -> Result<(), BroadcasterError> {
        let o = &self.options;
        self.pipeline.start(|rx, shutdown| {
            Worker {
                sink,
                cache: SeriesCache::new(o.flush_delay, o.finish_time),
                clock: o.clock.clone(),
                max_tries: o.max_tries_per_event.max(1),
                sleep: o.sleep_duration,
                finish_time: o.finish_time,
                refresh_time: o.refresh_time,
                shutdown,
            }
            .run(rx)
        })
    }

    /// Events the recorders dropped (queue full or shut down); for a metric.
    pub fn dropped_events(&self) -> u64 {
        self.pipeline.dropped()
    }

    /// Stops accepting events, writes what is queued and every series with an
    /// unwritten count, one try each, waiting at most `timeout` (client-go's
    /// `Shutdown`, plus a flush). Returns `true` if everything was handled,
    /// `false` if the timeout cut it short (the task is then aborted).
    /// Idempotent.
    pub async fn shutdown(&self, timeout: Duration) -> bool {
        self.pipeline.shutdown(timeout).await
    }
}
